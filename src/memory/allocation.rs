//! An owned USM allocation. Reference-counted (`Arc<Allocation>`): memory objects,
//! zero-copy views, live `ArrayBuffer` finalizers and in-flight copies each hold one
//! reference, and the last one to go gives the memory back: to the caching pool
//! (`memory::pool`), which may hand the block to a later allocation, or to the runtime.
//!
//! Because only the LAST reference gives the block back, and every zero-copy
//! `ArrayBuffer` holds a reference until it is detached or finalized, no view of the
//! memory can still be reachable from JS when the block reaches a new owner (see the
//! module documentation of `memory::pool`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::error::{MemoryError, Result};
use crate::memory::copies::{OtherAnswer, OtherCopies, OtherHold};
use crate::memory::interface::check_bounds;
use crate::memory::observe::{Origin, Sink};
use crate::memory::pool::{Block, BookAnswer, Holder, Pool};
use crate::runtime::UsmKind;
use crate::runtime::{check_allocation_request, Address, Context, Queue};

/// What this process knows of the memory at an address. One lookup decides both the
/// bytes a view of that address may touch and the allocation the view must hold, so the
/// two can never disagree.
#[derive(Debug)]
pub enum Provenance {
    /// Inside the bytes a live allocation asked for: a view must stay within
    /// `allocation.address()..+allocation.nbytes()` and hold `allocation`.
    Owned(Arc<Allocation>),
    /// Inside the bytes a live allocation of another copy of this package in the process
    /// asked for (`base`, `size`): a view must stay within them and hold `hold`.
    OtherCopy { base: Address, size: u64, hold: OtherHold },
    /// Memory this process allocated that no live allocation owns at this address: the
    /// slack between a request and the end of its (rounded-up) block, a block cached in
    /// the pool, or one on its way there. The runtime still calls it valid USM memory,
    /// but no view may touch any byte of it.
    Unowned { block_base: Address },
    /// Not memory of this process.
    Foreign,
}

/// The [`Provenance`] of `address` in `pool` (the process's pool keeps the one address
/// book of live, cached and releasing blocks), and, for an address that is not this
/// copy's, in the books of `others`, the other copies of this package in the process.
pub fn provenance(pool: &Pool, others: &dyn OtherCopies, address: Address) -> Provenance {
    match provenance_in(pool, address) {
        Provenance::Foreign => match others.lookup(address) {
            OtherAnswer::Live { base, size, hold } => Provenance::OtherCopy { base, size, hold },
            OtherAnswer::Unowned { block_base } => Provenance::Unowned { block_base },
            OtherAnswer::Foreign => Provenance::Foreign,
        },
        own => own,
    }
}

/// The [`Provenance`] of `address` among `pool`'s blocks only.
pub fn provenance_in(pool: &Pool, address: Address) -> Provenance {
    match pool.lookup(address) {
        BookAnswer::Live(holder) => match holder.downcast::<Allocation>() {
            Ok(allocation) => Provenance::Owned(allocation),
            // Only allocations hold blocks; anything else owns nothing a view may use.
            Err(_) => Provenance::Unowned { block_base: address },
        },
        BookAnswer::Unowned { block_base } => Provenance::Unowned { block_base },
        BookAnswer::Foreign => Provenance::Foreign,
    }
}

/// What this copy's own book says of an address, for another copy (`memory::copies`).
#[derive(Debug)]
pub enum OwnAnswer {
    /// Inside the requested bytes of `allocation`, which the caller now holds.
    Live(Arc<Allocation>),
    /// Memory of this copy that no live allocation owns at this address.
    Unowned { block_base: Address },
    /// Not this copy's.
    Foreign,
}

/// This copy's own answer for `address` (`pool`: this copy's), for another copy: never the
/// other copies' (copies asking each other on each other's behalf would never end).
pub fn answer_own(pool: &Pool, address: Address) -> OwnAnswer {
    match provenance_in(pool, address) {
        Provenance::Owned(allocation) => OwnAnswer::Live(allocation),
        Provenance::Unowned { block_base } => OwnAnswer::Unowned { block_base },
        Provenance::OtherCopy { .. } | Provenance::Foreign => OwnAnswer::Foreign,
    }
}

/// Whether the runtime's extent of an address (`Context::address_range`) holds memory of
/// ours, although our own book does not hold the address: the runtime rounded one of our
/// allocations up, or gave a larger block that we aligned inside, and the address lies in
/// the rest. Such bytes belong to no live allocation, exactly like a pooled block's
/// slack. Returns the base of our allocation there.
pub fn runtime_slack(pool: &Pool, range: Option<(Address, u64)>) -> Option<Address> {
    let (base, size) = range?;
    pool.block_within(base, size)
}

/// The error for an interface pointer into memory no live allocation owns.
pub fn unowned(address: Address, block_base: Address) -> MemoryError {
    MemoryError::Unowned { address, block_base }
}

/// What a view holds.
#[derive(Debug)]
pub enum ViewHolder {
    /// An allocation of this copy.
    Ours(Arc<Allocation>),
    /// An allocation of another copy of this package.
    OtherCopy(OtherHold),
    /// Nothing: foreign memory, which nothing here can keep alive.
    Nobody,
}

/// The allocation that a view of `nbytes` at `address` must hold, checked: `base_ptr` (the
/// interface's data pointer) decides which allocation the view belongs to, and the view
/// must lie inside the bytes that allocation asked for, whichever copy of this package
/// made it (`pool`: this copy's, `others`: the other copies'). For memory no copy
/// allocated, the runtime's extent bounds it where the runtime knows one, and otherwise
/// both ends must be USM memory of the base pointer's kind.
pub fn bind_view(
    pool: &Pool,
    others: &dyn OtherCopies,
    context: &dyn Context,
    base_ptr: Address,
    address: Address,
    nbytes: u64,
) -> Result<ViewHolder> {
    match provenance(pool, others, base_ptr) {
        Provenance::Owned(allocation) => {
            check_bounds(address, nbytes, Some((allocation.address(), allocation.nbytes())))?;
            Ok(ViewHolder::Ours(allocation))
        }
        Provenance::OtherCopy { base, size, hold } => {
            check_bounds(address, nbytes, Some((base, size)))?;
            Ok(ViewHolder::OtherCopy(hold))
        }
        Provenance::Unowned { block_base } => Err(unowned(base_ptr, block_base)),
        Provenance::Foreign => {
            let range = context.address_range(base_ptr);
            if let Some(block_base) = runtime_slack(pool, range) {
                return Err(unowned(base_ptr, block_base));
            }
            check_bounds(address, nbytes, range)?;
            if range.is_none() {
                let kind = context.pointer_kind(base_ptr);
                let last = address.saturating_add(nbytes.saturating_sub(1));
                if context.pointer_kind(address) != kind || context.pointer_kind(last) != kind {
                    return Err(MemoryError::LeavesForeignAllocation {
                        start: address,
                        end: last.saturating_add(1),
                        base: base_ptr,
                    });
                }
            }
            Ok(ViewHolder::Nobody)
        }
    }
}

/// The live allocation that holds all of `address..address + nbytes` within its requested size.
pub fn owning_allocation(pool: &Pool, address: Address, nbytes: u64) -> Option<Arc<Allocation>> {
    match provenance_in(pool, address) {
        Provenance::Owned(allocation)
            if address.saturating_add(nbytes) <= allocation.address().saturating_add(allocation.nbytes()) =>
        {
            Some(allocation)
        }
        _ => None,
    }
}

/// A block of USM memory this process allocated, given back when the last reference goes.
pub struct Allocation {
    address: Address,
    /// The size asked for: what users, bounds checks and `provenance` see.
    nbytes: u64,
    kind: UsmKind,
    context: Arc<dyn Context>,
    /// The block under it (at least `nbytes`; the size class when pooled).
    block: Block,
    /// The pool the block came from and goes back to.
    pool: &'static Pool,
    /// Whether an IPC handle of it was made: another process may map the block, so it is
    /// freed at the end, never cached for a new owner.
    exported: AtomicBool,
    /// The IPC handle the runtime made of it, kept from the first export: a handle names
    /// the allocation for its whole life, so a later export asks neither the runtime nor
    /// the IPC book again.
    ipc_handle: OnceLock<Vec<u8>>,
    /// What the pool's sink recorded of it (device, stack, time), to report its end.
    origin: Origin,
}

impl std::fmt::Debug for Allocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Allocation({} bytes of {} at {:#x})", self.nbytes, self.kind.name(), self.address)
    }
}

impl Allocation {
    /// Allocates `nbytes` of `kind` memory on `queue`'s context: a cached block of
    /// `pool` when one fits, else a new one. The contents of a reused block are whatever
    /// its last owner left there (not zeroed, like `malloc`).
    pub fn new(
        pool: &'static Pool,
        queue: &Arc<dyn Queue>,
        kind: UsmKind,
        nbytes: u64,
        alignment: u64,
    ) -> Result<Arc<Self>> {
        // The JS stack of this call, when a history with stacks is recorded: taken first,
        // so that a failed request leaves none for an unrelated later one.
        let stack = Sink::take_next_stack();
        check_allocation_request(kind, nbytes, alignment)?;
        let (block, origin) = pool.acquire_observed(queue, kind, nbytes, alignment, stack)?;
        let address = block.address;
        let allocation = Arc::new(Allocation {
            address,
            nbytes,
            kind,
            context: queue.context(),
            block,
            pool,
            exported: AtomicBool::new(false),
            ipc_handle: OnceLock::new(),
            origin,
        });
        pool.record_live(block, nbytes, Arc::downgrade(&allocation) as Holder);
        Ok(allocation)
    }

    /// The first byte (the start of the block).
    pub fn address(&self) -> Address {
        self.address
    }

    /// The size asked for; the block may be larger.
    pub fn nbytes(&self) -> u64 {
        self.nbytes
    }

    /// The context that made the allocation (and frees it).
    pub fn context(&self) -> &Arc<dyn Context> {
        &self.context
    }

    /// Marks the allocation as exported to other processes (see `exported`): from now on
    /// its block is freed when the allocation goes, not cached.
    pub fn mark_exported(&self) {
        self.exported.store(true, Ordering::Release);
    }

    /// The IPC handle an earlier export made of it, if any.
    pub fn ipc_handle(&self) -> Option<&[u8]> {
        self.ipc_handle.get().map(Vec::as_slice)
    }

    /// Keeps the IPC handle the runtime made of it (the first export's; a later one is the
    /// same bytes).
    pub fn keep_ipc_handle(&self, handle: &[u8]) {
        let _ = self.ipc_handle.set(handle.to_vec());
    }

    /// The USM kind.
    pub fn kind(&self) -> UsmKind {
        self.kind
    }

    /// What the sink recorded of it.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// Bytes of the block under the allocation (the pool's size class, at least `nbytes`).
    #[cfg(test)]
    pub fn block_size(&self) -> u64 {
        self.block.size
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        // The last reference is gone, so no view of the memory is left: the block may
        // serve a new owner. The pool marks it releasing in its book before anything else,
        // so no interface can cover it on the way. Never panics; a failed free is ignored
        // (the memory is left to the runtime's teardown).
        let pooled = self.block.pooled && !self.exported.load(Ordering::Acquire);
        self.pool.release_observed(&self.context, self.kind, Block { pooled, ..self.block }, self.nbytes, self.origin);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::sync::Weak;

    use super::*;
    use crate::memory::copies::NoOthers;
    use crate::memory::pool::{test_pool, Limits};
    use crate::runtime::fake::{FakeContext, FakeDevice};

    /// A pool of its own for one test (never dropped, as the process's is not).
    fn own_pool(enabled: bool) -> &'static Pool {
        Box::leak(Box::new(Pool::new(enabled, Limits::default())))
    }

    fn range_of(pool: &Pool, address: Address) -> Option<(Address, u64)> {
        match provenance_in(pool, address) {
            Provenance::Owned(a) => Some((a.address(), a.nbytes())),
            _ => None,
        }
    }

    fn unowned(pool: &Pool, address: Address) -> bool {
        matches!(provenance_in(pool, address), Provenance::Unowned { .. })
    }

    #[test]
    fn a_pooled_allocation_owns_only_the_requested_bytes() {
        let pool = own_pool(true);
        let context = FakeContext::new(1000, FakeDevice::new(1 << 34, 1 << 34));
        let queue = context.queue();
        let a = Allocation::new(pool, &queue, UsmKind::Host, 5000, 0).unwrap();
        let address = a.address();
        assert_eq!(a.nbytes(), 5000, "the requested size, not the class");
        assert_eq!(a.block_size(), 5120);
        assert_eq!(range_of(pool, address + 4999), Some((address, 5000)));
        assert_eq!(range_of(pool, address + 5000), None, "the slack is no part of the allocation");
        assert!(unowned(pool, address + 5000), "and no view may touch it");
        assert!(matches!(provenance_in(pool, address + 5120), Provenance::Foreign));
        drop(a);
        assert_eq!(range_of(pool, address), None);
        assert!(unowned(pool, address + 10), "a cached block has no room for any view");
        assert_eq!(pool.cached_range(address + 5100), Some((address, 5120)));
        assert!(context.counts().frees.is_empty());
        let b = Allocation::new(pool, &queue, UsmKind::Host, 4500, 0).unwrap();
        assert_eq!(b.address(), address, "the same class reuses the block");
        assert_eq!(b.nbytes(), 4500);
        assert!(unowned(pool, address + 4500));
        assert_eq!(range_of(pool, address + 4499), Some((address, 4500)));
        assert_eq!(pool.cached_range(address), None);
        assert_eq!(context.counts().allocations, 1);
        // A second reference keeps the block out of the pool.
        let view = b.clone();
        drop(b);
        assert_eq!(pool.cached_range(address), None);
        assert!(range_of(pool, address).is_some());
        drop(view);
        assert_eq!(pool.cached_range(address), Some((address, 5120)));
        pool.trim();
        assert!(matches!(provenance_in(pool, address), Provenance::Foreign), "freed: out of the book");
        assert_eq!(context.counts().frees, vec![address]);
        assert_eq!(context.counts().bad_frees, 0);
    }

    #[test]
    fn without_the_pool_an_allocation_is_exactly_its_request_and_is_freed_at_once() {
        let pool = own_pool(false);
        let context = FakeContext::new(1003, FakeDevice::new(1 << 34, 1 << 34));
        let a = Allocation::new(pool, &context.queue(), UsmKind::Host, 5000, 0).unwrap();
        let address = a.address();
        assert_eq!(a.block_size(), 5000);
        assert!(matches!(provenance_in(pool, address + 5000), Provenance::Foreign));
        drop(a);
        assert!(matches!(provenance_in(pool, address), Provenance::Foreign));
        assert_eq!(context.counts().frees, vec![address]);
    }

    #[test]
    fn the_process_pool_answers_for_views_and_owning_allocations() {
        let context = FakeContext::new(1004, FakeDevice::new(1 << 34, 1 << 34));
        let a = Allocation::new(test_pool(), &context.queue(), UsmKind::Host, 5000, 0).unwrap();
        let address = a.address();
        assert!(owning_allocation(test_pool(), address + 4000, 1000).is_some());
        assert!(owning_allocation(test_pool(), address + 4000, 1001).is_none());
        assert!(matches!(provenance_in(test_pool(), address + 4999), Provenance::Owned(_)));
    }

    #[test]
    fn a_view_from_the_slack_back_into_the_allocation_is_refused_and_a_view_inside_holds_it() {
        let context = FakeContext::new(1001, FakeDevice::new(1 << 34, 1 << 34));
        let queue = context.queue();
        let a = Allocation::new(test_pool(), &queue, UsmKind::Host, 64, 0).unwrap();
        let base = a.address();
        let ctx = queue.context();
        if a.block_size() > 64 {
            // The reported use-after-free: data pointer past the end, offset back into it.
            assert!(matches!(
                bind_view(test_pool(), &NoOthers, &*ctx, base + 64, base, 64),
                Err(MemoryError::Unowned { .. })
            ));
        }
        assert!(
            matches!(bind_view(test_pool(), &NoOthers, &*ctx, base + 8, base, 64), Ok(ViewHolder::Ours(_))),
            "a negative offset inside is fine"
        );
        assert!(matches!(
            bind_view(test_pool(), &NoOthers, &*ctx, base, base + 1, 64),
            Err(MemoryError::OutOfBounds { .. })
        ));
        let ViewHolder::Ours(owner) = bind_view(test_pool(), &NoOthers, &*ctx, base + 63, base + 63, 1).unwrap() else {
            panic!("ours")
        };
        assert!(Arc::ptr_eq(&owner, &a), "the view holds the very allocation it was bounded by");
    }

    #[test]
    fn a_runtime_extent_that_starts_at_our_allocation_is_slack_not_foreign_memory() {
        let context = FakeContext::new(1002, FakeDevice::new(1 << 34, 1 << 34));
        let queue = context.queue();
        // An alignment above the pool's keeps the block at exactly the requested size.
        let a = Allocation::new(test_pool(), &queue, UsmKind::Device, 65, 4096).unwrap();
        let base = a.address();
        assert!(matches!(provenance_in(test_pool(), base + 65), Provenance::Foreign), "our book ends at the request");
        assert_eq!(runtime_slack(test_pool(), Some((base, 512))), Some(base), "the runtime rounded it up");
        assert_eq!(
            runtime_slack(test_pool(), Some((base - 64, 4096))),
            Some(base),
            "or aligned it inside a larger block"
        );
        assert_eq!(runtime_slack(test_pool(), Some((base + (1 << 30), 512))), None);
        assert_eq!(runtime_slack(test_pool(), None), None);
    }

    #[test]
    fn an_allocation_whose_drop_has_begun_is_never_handed_to_a_view() {
        let pool = own_pool(true);
        let block = Block { address: 0x1000_0000, size: 0x100, pooled: true };
        pool.record_live(block, 0x100, Weak::<Allocation>::new() as Holder);
        assert!(unowned(pool, 0x1000_0000), "a dead allocation is not handed out");
        assert!(unowned(pool, 0x1000_00ff));
        assert!(matches!(provenance_in(pool, 0x1000_0100), Provenance::Foreign));
        assert!(matches!(provenance_in(pool, 0x0fff_ffff), Provenance::Foreign));
    }
}
