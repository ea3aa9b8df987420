//! The CUDA provider's registered host memory (`cuMemHostRegister`/`cuMemHostUnregister`,
//! portable: pinned for every context).

use std::ffi::c_void;

use super::driver::host_register;
use super::CudaContext;
use crate::error::{MemoryError, Result};
use crate::runtime::ranges::entry_holding;
use crate::runtime::registration::{HostRegistration, RegisterOutcome};
use crate::runtime::Address;
use crate::sync::lock;

impl CudaContext {
    /// Whether `address` lies in a host range registered through this context.
    pub(super) fn is_registered(&self, address: Address) -> bool {
        let registered = lock(&self.registered);
        entry_holding(&registered, address, |&len| len).is_some()
    }
}

impl HostRegistration for CudaContext {
    unsafe fn register(&self, address: Address, len: u64) -> Result<RegisterOutcome> {
        let size = usize::try_from(len).map_err(|_| MemoryError::CudaDriver {
            message: format!("cannot register {len} bytes on this platform"),
        })?;
        let current = self.current()?;
        // SAFETY: the caller's contract (mapped now, unregistered once before the context goes).
        unsafe { current.mem_host_register(address as *mut c_void, size, host_register::PORTABLE) }
            .map_err(|e| e.during("host registration"))?;
        lock(&self.registered).insert(address, len);
        Ok(RegisterOutcome::Registered)
    }

    unsafe fn unregister(&self, address: Address) -> Result<()> {
        lock(&self.registered).remove(&address);
        let current = self.current()?;
        // SAFETY: the caller's contract (registered here, once, no copy in flight).
        unsafe { current.mem_host_unregister(address as *mut c_void) }.map_err(|e| e.during("host unregistration"))
    }
}
