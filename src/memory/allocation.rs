//! An owned USM allocation. Reference-counted (`Arc<Allocation>`): memory objects,
//! zero-copy views, live `ArrayBuffer` finalizers and in-flight copies each hold one
//! reference, and the last one to go gives the memory back: to the caching pool
//! (`memory::pool`), which may hand the block to a later allocation, or to the runtime.
//!
//! Because only the LAST reference gives the block back, and every zero-copy
//! `ArrayBuffer` holds a reference until it is detached or finalized, no view of the
//! memory can still be reachable from JS when the block reaches a new owner (see the
//! module documentation of `memory::pool`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::error::{MemoryError, Result};
use crate::memory::kind::UsmKind;
use crate::memory::pool::{pool, Block};
use crate::provider::{Address, Context, Queue};

/// Address ranges of every live allocation this process made, for bounds checks of
/// interfaces that point into them (SYCL cannot tell an allocation's extent).
/// Also lets an interface view of such an allocation hold it alive like any other view.
static LIVE: Mutex<BTreeMap<Address, LiveEntry>> = Mutex::new(BTreeMap::new());

struct LiveEntry {
    /// The REQUESTED size (what views may cover); 0 while the block is being handed
    /// back to the pool (see `Drop`).
    size: u64,
    /// The block under it (the pool's size class: at least `size`).
    block: u64,
    allocation: Weak<Allocation>,
}

fn live() -> MutexGuard<'static, BTreeMap<Address, LiveEntry>> {
    crate::sync::lock(&LIVE)
}

/// `(base, size)` of the memory this process allocated that holds `ptr`, if any: the
/// live allocation with its REQUESTED size, also for a pointer into the slack between
/// that size and the end of the (rounded-up) block, so that a view of the slack fails
/// the bounds check instead of passing the runtime's larger range. A block freed into
/// the caching pool (or on its way there) reports size 0: no view may cover any byte of
/// memory that no allocation owns, however the runtime sees the pointer.
pub fn live_range(ptr: Address) -> Option<(Address, u64)> {
    let found = {
        let map = live();
        map.range(..=ptr)
            .next_back()
            .filter(|(&base, entry)| ptr < base.saturating_add(entry.block.max(entry.size)))
            .map(|(&base, entry)| (base, entry.size))
    };
    found.or_else(|| pool().cached_range(ptr).map(|(base, _)| (base, 0)))
}

/// The live allocation of this process that holds `ptr` (within its requested size), if any.
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
    /// The size asked for: what users, bounds checks and `live_range` see.
    nbytes: u64,
    kind: UsmKind,
    queue: Arc<dyn Queue>,
    context: Arc<dyn Context>,
    /// The block under it (at least `nbytes`; the size class when pooled).
    block: Block,
}

impl std::fmt::Debug for Allocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Allocation({} bytes of {} at {:#x})", self.nbytes, self.kind.name(), self.address)
    }
}

impl Allocation {
    /// Allocates `nbytes` of `kind` memory on `queue`'s context: a cached block of the
    /// pool when one fits, else a new one. The contents of a reused block are whatever
    /// its last owner left there (not zeroed, like `malloc`).
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
        let block = pool().acquire(queue, kind, nbytes, alignment)?;
        let address = block.address;
        let allocation =
            Arc::new(Allocation { address, nbytes, kind, queue: queue.clone(), context: queue.context(), block });
        let entry = LiveEntry { size: nbytes, block: block.size, allocation: Arc::downgrade(&allocation) };
        live().insert(address, entry);
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

    /// Bytes of the block under the allocation (the pool's size class, at least `nbytes`).
    pub fn block_size(&self) -> u64 {
        self.block.size
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        // The last reference is gone, so no view of the memory is left: the block may
        // serve a new owner. Until it is in the pool's index (or freed), a size-0 entry
        // keeps any interface from covering it; the pool (or the runtime) may hand the
        // address to the next allocation as soon as it has the block, so the entry
        // changes first and goes last, and only if no new owner has replaced it.
        let handoff = LiveEntry { size: 0, block: self.block.size, allocation: Weak::new() };
        live().insert(self.address, handoff);
        // Never panics; a failed free is ignored (the memory is left to the runtime's
        // teardown).
        pool().release(&self.context, self.kind, self.block);
        let mut map = live();
        if map.get(&self.address).is_some_and(|entry| entry.size == 0) {
            map.remove(&self.address);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::memory::pool::fake::{FakeContext, FakeDevice};

    #[test]
    fn a_pooled_allocation_reports_and_registers_the_requested_size() {
        let context = FakeContext::new(1000, FakeDevice::new(1 << 34, 1 << 34));
        let queue = context.queue();
        let a = Allocation::new(&queue, UsmKind::Host, 5000, 0).unwrap();
        let address = a.address();
        assert_eq!(a.nbytes(), 5000, "the requested size, not the class");
        let pooled = pool().enabled();
        assert_eq!(a.block_size(), if pooled { 5120 } else { 5000 });
        assert_eq!(live_range(address + 4999), Some((address, 5000)));
        let slack = if pooled { Some((address, 5000)) } else { None };
        assert_eq!(live_range(address + 5000), slack, "the slack of the block reports the requested size");
        assert_eq!(live_range(address + 5120), None);
        assert!(live_allocation(address + 5000).is_none(), "the slack is no part of the allocation");
        drop(a);
        assert!(live_allocation(address).is_none());
        if pooled {
            assert_eq!(live_range(address + 10), Some((address, 0)), "a cached block has no room for any view");
            assert_eq!(pool().cached_range(address + 5100), Some((address, 5120)));
            assert!(context.counts().frees.is_empty());
            let b = Allocation::new(&queue, UsmKind::Host, 4500, 0).unwrap();
            assert_eq!(b.address(), address, "the same class reuses the block");
            assert_eq!(b.nbytes(), 4500);
            assert_eq!(live_range(address + 4500), Some((address, 4500)));
            assert_eq!(live_range(address + 4499), Some((address, 4500)));
            assert_eq!(pool().cached_range(address), None);
            assert_eq!(context.counts().allocations, 1);
            // A second reference keeps the block out of the pool.
            let view = b.clone();
            drop(b);
            assert_eq!(pool().cached_range(address), None);
            assert!(live_allocation(address).is_some());
            drop(view);
            assert_eq!(pool().cached_range(address), Some((address, 5120)));
        } else {
            assert_eq!(live_range(address), None);
            assert_eq!(context.counts().frees, vec![address]);
        }
        assert_eq!(context.counts().bad_frees, 0);
    }

    #[test]
    fn live_range_finds_the_allocation_holding_an_interior_pointer() {
        live().insert(0x1000_0000, LiveEntry { size: 0x100, block: 0x100, allocation: Weak::new() });
        assert_eq!(live_range(0x1000_0000), Some((0x1000_0000, 0x100)));
        assert_eq!(live_range(0x1000_00ff), Some((0x1000_0000, 0x100)));
        assert_eq!(live_range(0x1000_0100), None);
        assert_eq!(live_range(0x0fff_ffff), None);
        assert!(live_allocation(0x1000_0010).is_none(), "a dead allocation is not handed out");
        live().remove(&0x1000_0000);
        assert_eq!(live_range(0x1000_0010), None);
    }
}
