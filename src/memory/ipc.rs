//! Sharing device memory with other processes: IPC handles (`IPCMemoryHandle`) and the
//! mappings they open into (`MemoryIPCDevice`), over a runtime's optional
//! [`Ipc`](crate::runtime::ipc::Ipc) capability (`Context::ipc`).
//!
//! **What may be exported**: USM device memory that owns a whole allocation of this
//! process (not a view of part of one, not another library's memory, not a mapping opened
//! here). A handle names the runtime's whole allocation, so a view of part of one would
//! hand out bytes its holder never had; the handle's bytes are exactly the runtime's own
//! (CUDA: the 64-byte `CUipcMemHandle`), so other programs of that runtime open what we
//! export and we open what they export.
//!
//! **An exported allocation never goes back to the pool**: another process may have it
//! mapped, and a new owner here must never receive bytes that process still writes. Its
//! block is freed to the runtime when the allocation goes. The exporter must keep the
//! memory alive until every process that opened it has closed it (as with every runtime
//! IPC: nothing crosses the process boundary to say when the others are done).
//!
//! **What an open checks**: the handle's length; that this process did not export it
//! (a runtime opens handles of other processes only: threads share with `share()`); that
//! it is not open here already (a runtime may hand back the first mapping again, which
//! the first close would then unmap under the second holder); `nbytes` within the
//! exported allocation as the runtime reports it. The mapping stays open while any
//! memory object, view or copy holds it, and closes with the last of them.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::error::{MemoryError, Result};
use crate::memory::allocation::Allocation;
use crate::memory::usm::{Owner, UsmMemory};
use crate::runtime::ipc::Ipc;
use crate::runtime::ranges::entry_holding;
use crate::runtime::UsmKind;
use crate::runtime::{Address, Context, Device, Queue};

/// What this process exported and opened: handles by their bytes.
#[derive(Default)]
struct Book {
    /// Handles made here, with the allocation each names (pruned as allocations go).
    exported: HashMap<Vec<u8>, Weak<Allocation>>,
    /// Handles open here, with their mapping.
    open: HashMap<Vec<u8>, Weak<IpcMapping>>,
    /// The open mappings by address: `(size, mapping)`.
    mapped: BTreeMap<Address, (u64, Weak<IpcMapping>)>,
}

static BOOK: Mutex<Option<Book>> = Mutex::new(None);

fn book() -> MutexGuard<'static, Option<Book>> {
    crate::sync::lock(&BOOK)
}

fn with_book<R>(f: impl FnOnce(&mut Book) -> R) -> R {
    f(book().get_or_insert_with(Book::default))
}

fn describe_device(device: &dyn Device) -> String {
    let info = device.info();
    format!("{} ({})", info.name, info.backend)
}

/// Whether memory on `device` can be shared with other processes.
pub fn available(device: &dyn Device) -> bool {
    device.default_context().is_ok_and(|context| context.ipc().is_some())
}

/// The IPC capability of `context`, or `ERR_IPC_UNAVAILABLE` naming `device`.
fn capability<'a>(context: &'a dyn Context, device: &dyn Device) -> Result<&'a dyn Ipc> {
    context.ipc().ok_or_else(|| MemoryError::IpcUnavailable { device: describe_device(device) })
}

fn not_exportable(why: &str) -> MemoryError {
    MemoryError::IpcNotExportable { message: format!("no IPC handle can be made of this memory: {why}") }
}

/// The handle bytes of `memory` for another process. From now on the allocation under
/// it is freed, never pooled, when it goes.
pub fn export(memory: &UsmMemory) -> Result<Vec<u8>> {
    let device = memory.queue().device();
    let kind = memory.usm_type(None);
    if kind != UsmKind::Device {
        return Err(not_exportable(&format!(
            "IPC handles are made of USM device memory only, not {} memory",
            kind.name()
        )));
    }
    let allocation = match memory.owner() {
        Owner::Allocation(allocation) => allocation,
        Owner::Foreign => return Err(not_exportable("another library allocated it (export it there)")),
        Owner::Mapping(_) => return Err(not_exportable("it was opened from an IPC handle of another process")),
    };
    if memory.address() != allocation.address() || memory.nbytes() != allocation.nbytes() {
        return Err(not_exportable(&format!(
            "it is a view of {} bytes at {:#x} into an allocation of {} bytes at {:#x}, and a handle names the whole \
             allocation: export the memory object that allocated it",
            memory.nbytes(),
            memory.address(),
            allocation.nbytes(),
            allocation.address()
        )));
    }
    let ipc = capability(allocation.context().as_ref(), device.as_ref())?;
    // Marked first: once the runtime has made a handle, the block must never be cached.
    allocation.mark_exported();
    let handle = ipc.export(allocation.address())?;
    with_book(|book| {
        book.exported.retain(|_, allocation| allocation.strong_count() > 0);
        book.exported.insert(handle.clone(), Arc::downgrade(allocation));
    });
    Ok(handle)
}

/// Memory another process exported, opened from its handle bytes into `queue`'s context
/// on its device: the first `nbytes` of it.
#[cfg(test)]
pub fn open(handle: &[u8], queue: &Arc<dyn Queue>, nbytes: u64) -> Result<UsmMemory> {
    open_with(handle.len(), |bytes| bytes.copy_from_slice(handle), queue, nbytes)
}

/// [`open`] of a handle of `len` bytes that `read` writes into the buffer it is given,
/// once the length is known to be right (so bytes of a wrong length are never copied).
pub fn open_with(len: usize, read: impl FnOnce(&mut [u8]), queue: &Arc<dyn Queue>, nbytes: u64) -> Result<UsmMemory> {
    let device = queue.device();
    let context = queue.context();
    let ipc = capability(context.as_ref(), device.as_ref())?;
    let expected = ipc.handle_len();
    if len != expected {
        return Err(MemoryError::IpcHandleLength { len: len as u64, expected: expected as u64 });
    }
    let mut handle = vec![0u8; len];
    read(&mut handle);
    let handle = handle.as_slice();
    if nbytes == 0 {
        return Err(MemoryError::ZeroSize);
    }
    let mut guard = book();
    let book = guard.get_or_insert_with(Book::default);
    if book.exported.get(handle).is_some_and(|allocation| allocation.strong_count() > 0) {
        return Err(MemoryError::IpcHandleInvalid {
            message:
                "this IPC handle was exported by this process, which cannot open its own handles: share the memory \
                      object itself with other threads (share())"
                    .into(),
        });
    }
    if book.open.get(handle).is_some_and(|mapping| mapping.strong_count() > 0) {
        return Err(MemoryError::IpcHandleOpen);
    }
    // Under the book's lock, so no other thread opens the same handle meanwhile.
    let mapped = ipc.open(handle, device.as_ref())?;
    if nbytes > mapped.size {
        // SAFETY: the mapping was just opened, is closed once here, and nothing used it.
        let _ = unsafe { ipc.close(mapped.address) };
        return Err(MemoryError::IpcOutOfBounds { nbytes, size: mapped.size });
    }
    let mapping = Arc::new(IpcMapping {
        handle: handle.to_vec(),
        address: mapped.address,
        size: mapped.size,
        context: context.clone(),
    });
    book.open.insert(handle.to_vec(), Arc::downgrade(&mapping));
    book.mapped.insert(mapped.address, (mapped.size, Arc::downgrade(&mapping)));
    drop(guard);
    Ok(UsmMemory::from_mapping(mapping, nbytes, queue.clone()))
}

/// The open mapping holding all of `ptr..ptr + nbytes`, for views made from an interface
/// over a mapping (they hold it, as views of our own allocations hold those).
pub fn mapping_holding(ptr: Address, nbytes: u64) -> Option<Arc<IpcMapping>> {
    let guard = book();
    let (base, (size, mapping)) = entry_holding(&guard.as_ref()?.mapped, ptr, |(size, _)| *size)?;
    let end = ptr.checked_add(nbytes)?;
    (end <= base.saturating_add(*size)).then(|| mapping.upgrade()).flatten()
}

/// An open mapping of another process's memory, closed when the last holder drops it.
pub struct IpcMapping {
    handle: Vec<u8>,
    address: Address,
    size: u64,
    /// The context it is mapped into (and closed through).
    context: Arc<dyn Context>,
}

impl std::fmt::Debug for IpcMapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IpcMapping({} bytes at {:#x})", self.size, self.address)
    }
}

impl IpcMapping {
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
        let mut guard = book();
        if let Some(book) = guard.as_mut() {
            if book.open.get(&self.handle).is_some_and(|m| m.strong_count() == 0) {
                book.open.remove(&self.handle);
            }
            if book.mapped.get(&self.address).is_some_and(|(_, m)| m.strong_count() == 0) {
                book.mapped.remove(&self.address);
            }
        }
        if let Some(ipc) = self.context.ipc() {
            // SAFETY: the mapping was opened by this context's `open` (in `open` above),
            // and this is its last holder, so it is closed once and nothing uses it after.
            // A failure leaves the mapping to the process's end (a Drop cannot report it).
            let _ = unsafe { ipc.close(self.address) };
        }
        drop(guard);
    }
}

#[cfg(test)]
#[path = "ipc_tests.rs"]
mod tests;
