//! The mappings IPC handles open into (`IpcMapping`, closed by its last holder) and the
//! book of exported and open handles. Apart from `memory::ipc`'s policy so that memory
//! objects (`usm::Owner::Mapping`) can hold a mapping without importing that policy.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::memory::allocation::Allocation;
use crate::runtime::ranges::RangeBook;
use crate::runtime::{Address, Context};

/// Hashes handle bytes a word at a time. The keys are handles this process's runtime made,
/// or opened (a handle is booked only once the runtime has opened it), so no caller picks
/// them to collide; SipHash's per-byte cost is paid on every open and close.
#[derive(Default)]
pub(crate) struct HandleHasher(u64);

impl Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
}

/// A map keyed by handle bytes.
pub(crate) type HandleMap<K, V> = HashMap<K, V, BuildHasherDefault<HandleHasher>>;

/// What this process exported and opened: handles by their bytes.
#[derive(Default)]
pub(crate) struct Book {
    /// Handles made here, with the allocation each names (pruned as allocations go, see
    /// `note_export`).
    pub(crate) exported: HandleMap<Vec<u8>, Weak<Allocation>>,
    /// The size of `exported` at which the next export prunes it.
    prune_at: usize,
    /// Handles open here, with their mapping.
    pub(crate) open: HandleMap<Arc<[u8]>, Weak<IpcMapping>>,
    /// The open mappings by range.
    pub(crate) mapped: RangeBook<Weak<IpcMapping>>,
}

/// The fewest handles `exported` holds before an export prunes it.
const PRUNE_MIN: usize = 64;

impl Book {
    /// Records the handle the runtime made of `allocation`. Entries of allocations gone
    /// are pruned once the book has doubled since the last prune, so that exporting many
    /// allocations costs amortized constant time each, not a scan of the book each.
    pub(crate) fn note_export(&mut self, handle: Vec<u8>, allocation: &Arc<Allocation>) {
        if self.exported.len() >= self.prune_at.max(PRUNE_MIN) {
            self.exported.retain(|_, allocation| allocation.strong_count() > 0);
            self.prune_at = 2 * self.exported.len();
        }
        self.exported.insert(handle, Arc::downgrade(allocation));
    }
}

/// The process's IPC book: what it exported and opened (one per
/// [`ProcessRuntime`](crate::memory::process::ProcessRuntime); tests make their own).
#[derive(Default)]
pub struct IpcBook {
    book: Mutex<Book>,
}

impl IpcBook {
    /// The book, locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Book> {
        crate::sync::lock(&self.book)
    }

    /// The open mapping holding all of `address..address + nbytes`, for views made from an
    /// interface over a mapping (they hold it, as views of our own allocations hold those).
    pub fn mapping_holding(&self, address: Address, nbytes: u64) -> Option<Arc<IpcMapping>> {
        address.checked_add(nbytes)?;
        let guard = self.lock();
        let range = guard.mapped.holding(address)?;
        range.covers(address, nbytes).then(|| range.value.upgrade()).flatten()
    }
}

/// An open mapping of another process's memory, closed when the last holder drops it.
pub struct IpcMapping {
    /// The handle's bytes, shared with the book's key (one allocation per open).
    handle: Arc<[u8]>,
    address: Address,
    size: u64,
    /// The context it is mapped into (and closed through).
    context: Arc<dyn Context>,
    /// The book it is in (taken out of it at the close).
    book: &'static IpcBook,
}

impl std::fmt::Debug for IpcMapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IpcMapping({} bytes at {:#x})", self.size, self.address)
    }
}

impl IpcMapping {
    /// The mapping `memory::ipc::open_with` opened: `size` bytes at `address` in
    /// `context`, from `handle`. Its last holder closes it.
    pub(crate) fn new(
        book: &'static IpcBook,
        handle: Arc<[u8]>,
        address: Address,
        size: u64,
        context: Arc<dyn Context>,
    ) -> Self {
        IpcMapping { handle, address, size, context, book }
    }

    /// Where the mapping starts in this process.
    pub fn address(&self) -> Address {
        self.address
    }

    /// Bytes of the exported allocation.
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Drop for IpcMapping {
    fn drop(&mut self) {
        // Out of the book, and closed, under the book's lock: no view can be bound to it
        // meanwhile, and an open of the same handle waits until it is closed.
        let mut guard = self.book.lock();
        let book = &mut *guard;
        // The entry may already be a newer mapping of the same handle, opened after this
        // one's last holder went and before this drop took the lock: that one stays.
        if let Entry::Occupied(entry) = book.open.entry(self.handle.clone()) {
            if entry.get().strong_count() == 0 {
                entry.remove();
            }
        }
        book.mapped.remove_if(self.address, |m| m.strong_count() == 0);
        if let Some(ipc) = self.context.ipc() {
            // SAFETY: the mapping was opened by this context's `open` (`ipc::open_with`),
            // and this is its last holder, so it is closed once and nothing uses it after.
            // A failure leaves the mapping to the process's end (a Drop cannot report it).
            let _ = unsafe { ipc.close(self.address) };
        }
        drop(guard);
    }
}
