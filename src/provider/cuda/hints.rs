//! The CUDA provider's prefetch and advice for managed memory (`cuMemPrefetchAsync`/
//! `cuMemAdvise`, the `CUmemLocation` forms CUDA 12.2 added and CUDA 13 made the only
//! ones).

use cudarc::driver::sys::CUmem_advise;

use super::driver::MemLocation;
use super::CudaQueue;
use crate::error::{MemoryError, Result};
use crate::runtime::hints::{Advice, HintOutcome, Location, SharedMemoryHints};
use crate::runtime::ReadBytes;

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
