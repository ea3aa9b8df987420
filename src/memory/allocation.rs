//! An owned USM allocation. Reference-counted (`Arc<Allocation>`): memory objects,
//! zero-copy views, live `ArrayBuffer` finalizers and in-flight copies each hold one
//! reference, and the last one to go frees the memory.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::error::{MemoryError, Result};
use crate::memory::kind::UsmKind;
use crate::provider::{Address, Context, Queue};

/// Address ranges of every live allocation this process made, for bounds checks of
/// interfaces that point into them (SYCL cannot tell an allocation's extent).
/// Also lets an interface view of such an allocation hold it alive like any other view.
static LIVE: Mutex<BTreeMap<Address, LiveEntry>> = Mutex::new(BTreeMap::new());

struct LiveEntry {
    size: u64,
    allocation: Weak<Allocation>,
}

fn live() -> MutexGuard<'static, BTreeMap<Address, LiveEntry>> {
    // A poisoned map is still a valid map: nothing panics while holding the lock.
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `(base, size)` of the live allocation of this process that holds `ptr`, if any.
pub fn live_range(ptr: Address) -> Option<(Address, u64)> {
    let map = live();
    let (&base, entry) = map.range(..=ptr).next_back()?;
    (ptr < base.saturating_add(entry.size)).then_some((base, entry.size))
}

/// The live allocation of this process that holds `ptr`, if any.
pub fn live_allocation(ptr: Address) -> Option<Arc<Allocation>> {
    let map = live();
    let (&base, entry) = map.range(..=ptr).next_back()?;
    if ptr >= base.saturating_add(entry.size) {
        return None;
    }
    entry.allocation.upgrade()
}

pub struct Allocation {
    address: Address,
    nbytes: u64,
    kind: UsmKind,
    queue: Arc<dyn Queue>,
    context: Arc<dyn Context>,
}

impl std::fmt::Debug for Allocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Allocation({} bytes of {} at {:#x})", self.nbytes, self.kind.name(), self.address)
    }
}

impl Allocation {
    /// Allocates `nbytes` of `kind` memory on `queue`'s context.
    pub fn new(queue: &Arc<dyn Queue>, kind: UsmKind, nbytes: u64, alignment: u64) -> Result<Arc<Self>> {
        if nbytes == 0 {
            return Err(MemoryError::InvalidSize(
                "Number of bytes of request allocation must be positive.".into(),
            ));
        }
        if kind == UsmKind::Unknown {
            return Err(MemoryError::UsmAllocation("cannot allocate memory of unknown USM kind".into()));
        }
        if alignment != 0 && !alignment.is_power_of_two() {
            return Err(MemoryError::UsmAllocation(format!(
                "USM allocation failed: alignment {alignment} is not a power of two"
            )));
        }
        let address = queue.allocate(kind, nbytes, alignment)?;
        if address == 0 {
            return Err(MemoryError::UsmAllocation(format!(
                "USM allocation failed: {nbytes} bytes of {} memory",
                kind.name()
            )));
        }
        let allocation = Arc::new(Allocation { address, nbytes, kind, queue: queue.clone(), context: queue.context() });
        live().insert(address, LiveEntry { size: nbytes, allocation: Arc::downgrade(&allocation) });
        Ok(allocation)
    }

    pub fn address(&self) -> Address {
        self.address
    }

    pub fn nbytes(&self) -> u64 {
        self.nbytes
    }

    pub fn kind(&self) -> UsmKind {
        self.kind
    }

    pub fn queue(&self) -> &Arc<dyn Queue> {
        &self.queue
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        // Unregister first: the runtime may hand the same address to the next allocation.
        live().remove(&self.address);
        // Drop cannot report: a failed free leaves the memory to the runtime's teardown.
        let _ = self.context.free(self.address);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_range_finds_the_allocation_holding_an_interior_pointer() {
        live().insert(0x1000_0000, LiveEntry { size: 0x100, allocation: Weak::new() });
        assert_eq!(live_range(0x1000_0000), Some((0x1000_0000, 0x100)));
        assert_eq!(live_range(0x1000_00ff), Some((0x1000_0000, 0x100)));
        assert_eq!(live_range(0x1000_0100), None);
        assert_eq!(live_range(0x0fff_ffff), None);
        assert!(live_allocation(0x1000_0010).is_none(), "a dead allocation is not handed out");
        live().remove(&0x1000_0000);
        assert_eq!(live_range(0x1000_0010), None);
    }
}
