//! Sharing device memory with other processes: IPC handles (`IPCMemoryHandle`) and the
//! mappings they open into (`MemoryIPCDevice`), over a runtime's optional
//! [`crate::runtime::ipc::Ipc`] capability (`Context::ipc`).
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

use std::sync::Arc;

use crate::error::{MemoryError, Result};
use crate::memory::ipc_mapping::{IpcBook, IpcMapping};
use crate::memory::usm::{Owner, UsmMemory};
use crate::runtime::ipc::Ipc;
use crate::runtime::UsmKind;
use crate::runtime::{Context, Device, Queue};

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
pub fn export(book: &IpcBook, memory: &UsmMemory) -> Result<Vec<u8>> {
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
        Owner::OtherCopy(_) => {
            return Err(not_exportable(
                "another copy of dpctl-memory in this process allocated it (export it through that copy)",
            ))
        }
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
    // In the book since the first export, for as long as the allocation lives.
    if let Some(handle) = allocation.ipc_handle() {
        return Ok(handle.to_vec());
    }
    // Marked first: once the runtime has made a handle, the block must never be cached.
    allocation.mark_exported();
    let handle = ipc.export(allocation.address())?;
    let mut book = book.lock();
    book.note_export(handle.clone(), allocation);
    allocation.keep_ipc_handle(&handle);
    drop(book);
    Ok(handle)
}

/// Memory another process exported, opened from its handle bytes into `queue`'s context
/// on its device: the first `nbytes` of it.
#[cfg(test)]
pub fn open(book: &'static IpcBook, handle: &[u8], queue: &Arc<dyn Queue>, nbytes: u64) -> Result<UsmMemory> {
    open_with(book, handle.len(), |bytes| bytes.copy_from_slice(handle), queue, nbytes)
}

/// Opens a handle of `len` bytes that `read` writes into the buffer it is given, once the
/// length is known to be right (so bytes of a wrong length are never copied).
pub fn open_with(
    ipc_book: &'static IpcBook,
    len: usize,
    read: impl FnOnce(&mut [u8]),
    queue: &Arc<dyn Queue>,
    nbytes: u64,
) -> Result<UsmMemory> {
    let device = queue.device();
    let context = queue.context();
    let ipc = capability(context.as_ref(), device.as_ref())?;
    let expected = ipc.handle_len();
    if len != expected {
        return Err(MemoryError::IpcHandleLength { len: len as u64, expected: expected as u64 });
    }
    // Read onto the stack: every runtime's handle fits in 64 bytes (CUDA's is 64).
    let mut on_stack = [0u8; 64];
    let mut on_heap = Vec::new();
    let handle: &mut [u8] = match on_stack.get_mut(..len) {
        Some(bytes) => bytes,
        None => {
            on_heap.resize(len, 0);
            &mut on_heap
        }
    };
    read(handle);
    let handle = &*handle;
    if nbytes == 0 {
        return Err(MemoryError::ZeroSize);
    }
    let mut guard = ipc_book.lock();
    let book = &mut *guard;
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
    let key: Arc<[u8]> = Arc::from(handle);
    let mapping = Arc::new(IpcMapping::new(ipc_book, key.clone(), mapped.address, mapped.size, context.clone()));
    book.open.insert(key, Arc::downgrade(&mapping));
    // A range of the book there is a mapping closed meanwhile (the runtime maps no two
    // open ones over each other): it makes room.
    while let Some(start) = book.mapped.first_overlapping(mapped.address, mapped.size).map(|range| range.start) {
        book.mapped.remove(start);
    }
    let _ = book.mapped.insert(mapped.address, mapped.size, Arc::downgrade(&mapping));
    drop(guard);
    Ok(UsmMemory::from_mapping(mapping, nbytes, queue.clone()))
}

#[cfg(test)]
#[path = "ipc_tests.rs"]
mod tests;
