//! The SYCL provider's registered host memory (`prepare_for_device_copy`/
//! `release_from_device_copy`; a backend without it, the OpenCL CPU device, reports a
//! no-op).

use std::sync::atomic::Ordering;

use super::{runtime_error, SyclContext};
use crate::error::Result;
use crate::runtime::registration::{HostRegistration, RegisterOutcome};
use crate::runtime::Address;

impl HostRegistration for SyclContext {
    unsafe fn register(&self, address: Address, len: u64) -> Result<RegisterOutcome> {
        if self.registration_not_needed.load(Ordering::Relaxed) {
            return Ok(RegisterOutcome::NotNeeded);
        }
        // SAFETY: the caller's contract is the shim's.
        let registered = unsafe { self.handle.host_register(address, len) }
            .map_err(|e| runtime_error(&format!("registering {len} bytes of host memory"), e))?;
        if !registered {
            self.registration_not_needed.store(true, Ordering::Relaxed);
        }
        Ok(if registered { RegisterOutcome::Registered } else { RegisterOutcome::NotNeeded })
    }

    unsafe fn unregister(&self, address: Address) -> Result<()> {
        // SAFETY: the caller's contract is the shim's.
        unsafe { self.handle.host_unregister(address) }
            .map_err(|e| runtime_error(&format!("unregistering host memory at 0x{address:x}"), e))
    }
}
