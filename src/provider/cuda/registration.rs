//! The CUDA provider's registered host memory (`cuMemHostRegister`/`cuMemHostUnregister`,
//! portable: pinned for every context). Which ranges are registered is the model's book
//! (`memory::registration`), which also answers that registered memory is the user's,
//! not USM memory of a context: the provider keeps no record of its own.
//!
//! Memory the driver already maps for the GPU (USM host memory, which is pinned; USM
//! shared memory, which is managed; a range someone else registered) cannot be registered
//! again (`cuMemHostRegister` refuses it) and needs nothing: it is a reported no-op, as
//! registration is on the CPU device.

use std::ffi::c_void;

use super::driver::{host_register, CurrentContext};
use super::CudaContext;
use crate::error::{MemoryError, Result};
use crate::runtime::registration::{HostRegistration, RegisterOutcome};
use crate::runtime::Address;

impl HostRegistration for CudaContext {
    unsafe fn register(&self, address: Address, len: u64) -> Result<RegisterOutcome> {
        let size = usize::try_from(len).map_err(|_| MemoryError::CudaDriver {
            message: format!("cannot register {len} bytes on this platform"),
        })?;
        let current = self.current()?;
        if driver_maps(&current, address)? && driver_maps(&current, address + len.saturating_sub(1))? {
            return Ok(RegisterOutcome::NotNeeded);
        }
        // SAFETY: the caller's contract (mapped now, unregistered once before the context goes).
        unsafe { current.mem_host_register(address as *mut c_void, size, host_register::PORTABLE) }
            .map_err(|e| e.during("host registration"))?;
        Ok(RegisterOutcome::Registered)
    }

    unsafe fn unregister(&self, address: Address) -> Result<()> {
        let current = self.current()?;
        // SAFETY: the caller's contract (registered here, once, no copy in flight).
        unsafe { current.mem_host_unregister(address as *mut c_void) }.map_err(|e| e.during("host unregistration"))
    }
}

/// Whether the driver already maps the host byte at `address` for the GPU: pinned or
/// managed memory of any context (`cuPointerGetAttributes` reports unknown memory as type 0).
fn driver_maps(current: &CurrentContext, address: Address) -> Result<bool> {
    let attributes = current.pointer_attributes(address).map_err(|e| e.during("host registration"))?;
    Ok(attributes.memory_type != 0 || attributes.is_managed)
}
