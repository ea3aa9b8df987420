//! The CUDA provider's optional capabilities: registered host memory
//! (`cuMemHostRegister`/`cuMemHostUnregister`, portable: pinned for every context) and
//! prefetch and advice for managed memory (`cuMemPrefetchAsync`/`cuMemAdvise`, the
//! `CUmemLocation` forms CUDA 12.2 added and CUDA 13 made the only ones).

use std::ffi::c_void;

use cudarc::driver::sys::CUmem_advise;

use super::driver::{host_register, MemLocation};
use super::{CudaContext, CudaQueue};
use crate::error::{MemoryError, Result};
use crate::runtime::host_register::{HostRegistration, RegisterOutcome};
use crate::runtime::prefetch::{Advice, HintOutcome, Location, SharedMemoryHints};
use crate::runtime::ranges::entry_holding;
use crate::runtime::{Address, ReadBytes};
use crate::sync::lock;

impl CudaContext {
    /// Whether `ptr` lies in a host range registered through this context.
    pub(super) fn is_registered(&self, ptr: Address) -> bool {
        let registered = lock(&self.registered);
        entry_holding(&registered, ptr, |&len| len).is_some()
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

impl CudaQueue {
    fn location(&self, location: Location) -> MemLocation {
        match location {
            Location::Device => MemLocation::Device(self.context.device.handle),
            Location::Host => MemLocation::Host,
        }
    }
}

impl SharedMemoryHints for CudaQueue {
    fn prefetch(&self, bytes: ReadBytes<'_>, to: Location) -> Result<HintOutcome> {
        if bytes.is_empty() {
            return Ok(HintOutcome::NoOp);
        }
        let size = usize::try_from(bytes.len())
            .map_err(|_| MemoryError::CudaDriver { message: format!("cannot prefetch {} bytes here", bytes.len()) })?;
        let current = self.context.current()?;
        // SAFETY: managed memory of this context (the caller's range), kept allocated for
        // this call, which synchronises the stream before returning.
        unsafe { current.mem_prefetch_async(bytes.address(), size, self.location(to), &self.stream) }
            .map_err(|e| e.during("prefetch"))?;
        current.synchronize(&self.stream).map_err(|e| e.during("prefetch"))?;
        Ok(HintOutcome::Applied)
    }

    fn advise(&self, bytes: ReadBytes<'_>, advice: Advice) -> Result<HintOutcome> {
        if bytes.is_empty() {
            return Ok(HintOutcome::NoOp);
        }
        let size = usize::try_from(bytes.len())
            .map_err(|_| MemoryError::CudaDriver { message: format!("cannot advise on {} bytes here", bytes.len()) })?;
        use CUmem_advise::*;
        let (raw, location) = match advice {
            // The location is ignored for read-mostly.
            Advice::ReadMostly(set) => {
                (if set { CU_MEM_ADVISE_SET_READ_MOSTLY } else { CU_MEM_ADVISE_UNSET_READ_MOSTLY }, Location::Device)
            }
            Advice::PreferredLocation(location, set) => (
                if set { CU_MEM_ADVISE_SET_PREFERRED_LOCATION } else { CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION },
                location,
            ),
            Advice::AccessedBy(location, set) => {
                (if set { CU_MEM_ADVISE_SET_ACCESSED_BY } else { CU_MEM_ADVISE_UNSET_ACCESSED_BY }, location)
            }
        };
        let current = self.context.current()?;
        current.mem_advise(bytes.address(), size, raw, self.location(location)).map_err(|e| e.during("memAdvise"))?;
        Ok(HintOutcome::Applied)
    }
}
