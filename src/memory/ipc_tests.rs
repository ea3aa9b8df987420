//! The IPC policy over the fake provider's IPC capability. A "remote" fake context
//! stands for another process: its handles are made with the capability directly, as
//! the other process's runtime would make them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use super::*;
use crate::error::ErrorCode;
use crate::memory::allocation::{provenance_in, Provenance};
use crate::memory::ipc_mapping::IpcBook;
use crate::memory::pool::test_pool;
use crate::runtime::fake::{FakeContext, FakeDevice, FAKE_HANDLE_LEN};
use crate::runtime::ipc::Ipc;
use crate::runtime::{Address, Queue};

const KIB: u64 = 1 << 10;

/// An IPC book of this test's own (as the process value's, never dropped).
fn own_book() -> &'static IpcBook {
    Box::leak(Box::default())
}

fn device() -> Arc<FakeDevice> {
    FakeDevice::new(1 << 34, 1 << 34)
}

/// A context of "this process" and one of "another process" on the same device.
fn pair(id: u64) -> (Arc<FakeContext>, Arc<dyn Queue>, Arc<FakeContext>) {
    let device = device();
    let local = FakeContext::with_ipc(id, device.clone());
    let remote = FakeContext::with_ipc(id + 1, device);
    let queue = local.queue();
    (local, queue, remote)
}

/// A device allocation of the remote context and its handle, made by its runtime.
fn remote_handle(remote: &Arc<FakeContext>, nbytes: u64) -> (Address, Vec<u8>) {
    let address = remote.queue().allocate(UsmKind::Device, nbytes, 0).unwrap();
    (address, Ipc::export(remote.as_ref(), address).unwrap())
}

fn code(result: Result<impl std::fmt::Debug>) -> ErrorCode {
    result.expect_err("an error").error_code()
}

#[test]
fn open_maps_the_exported_memory_and_the_last_holder_closes_it() {
    let book = own_book();
    let (local, queue, remote) = pair(3000);
    let (_, handle) = remote_handle(&remote, 4 * KIB);
    let memory = open(book, &handle, &queue, 4 * KIB).unwrap();
    assert_eq!((memory.nbytes(), memory.usm_type(None)), (4 * KIB, UsmKind::Device));
    assert!(matches!(memory.owner(), Owner::Mapping(_)));
    assert_eq!(local.counts().opens, 1);
    let address = memory.address();
    assert_eq!(local.counts().mapped.get(&address), Some(&(4 * KIB)));
    // A view made from an interface over the mapping holds it, as a view of ours would.
    let held = book.mapping_holding(address + 16, 64).unwrap();
    assert!(book.mapping_holding(address + 4 * KIB - 8, 64).is_none(), "past the end of the mapping");
    let view = memory.clone();
    drop(memory);
    drop(view);
    assert_eq!(local.counts().closes, 0, "still held");
    drop(held);
    let counts = local.counts();
    assert_eq!((counts.opens, counts.closes, counts.bad_closes), (1, 1, 0));
    assert!(counts.mapped.is_empty());
    drop(counts);
    assert!(book.mapping_holding(address, 1).is_none());
    // Closed, the handle opens again.
    let again = open(book, &handle, &queue, 1).unwrap();
    drop(again);
    assert_eq!(local.counts().closes, 2);
}

#[test]
fn a_handle_open_in_this_process_is_refused_until_its_mapping_closes() {
    let book = own_book();
    let (local, queue, remote) = pair(3010);
    let (_, handle) = remote_handle(&remote, KIB);
    let first = open(book, &handle, &queue, KIB).unwrap();
    assert_eq!(code(open(book, &handle, &queue, KIB)), ErrorCode::IpcHandleOpen);
    assert_eq!(local.counts().opens, 1, "the runtime was not asked a second time");
    drop(first);
    drop(open(book, &handle, &queue, KIB).unwrap());
    let counts = local.counts();
    assert_eq!((counts.opens, counts.closes), (2, 2));
}

#[test]
fn bad_handles_are_coded_errors_and_open_nothing() {
    let book = own_book();
    let (local, queue, remote) = pair(3020);
    let (address, handle) = remote_handle(&remote, KIB);
    for len in [0, 1, FAKE_HANDLE_LEN - 1, FAKE_HANDLE_LEN + 1, 4096] {
        let bytes = vec![0u8; len];
        let e = open(book, &bytes, &queue, 1).unwrap_err();
        assert_eq!(e, MemoryError::IpcHandleLength { len: len as u64, expected: FAKE_HANDLE_LEN as u64 });
    }
    assert_eq!(code(open(book, &[0xffu8; FAKE_HANDLE_LEN], &queue, 1)), ErrorCode::IpcHandleInvalid, "not a handle");
    assert_eq!(code(open(book, &handle, &queue, 0)), ErrorCode::InvalidSize);
    // nbytes beyond the export: refused, and the mapping made to learn its size closed.
    assert_eq!(
        open(book, &handle, &queue, KIB + 1).unwrap_err(),
        MemoryError::IpcOutOfBounds { nbytes: KIB + 1, size: KIB }
    );
    let counts = local.counts();
    assert_eq!((counts.opens, counts.closes), (1, 1));
    drop(counts);
    // A handle of memory its exporter freed.
    crate::runtime::fake::free_raw(remote.as_ref(), address).unwrap();
    assert_eq!(code(open(book, &handle, &queue, 1)), ErrorCode::IpcHandleInvalid);
    // A handle of another device.
    let other = FakeContext::with_ipc(3022, device());
    let (_, foreign) = remote_handle(&other, KIB);
    assert_eq!(code(open(book, &foreign, &queue, 1)), ErrorCode::IpcHandleInvalid);
    let counts = local.counts();
    assert_eq!((counts.opens, counts.closes, counts.bad_closes), (1, 1, 0));
    assert!(counts.mapped.is_empty());
}

#[test]
fn without_the_capability_export_and_open_are_unavailable() {
    let book = own_book();
    let context = FakeContext::new(3030, device());
    let queue = context.queue();
    let memory = UsmMemory::allocate(test_pool(), &queue, UsmKind::Device, KIB, 0).unwrap();
    assert_eq!(code(export(book, &memory)), ErrorCode::IpcUnavailable);
    assert_eq!(code(open(book, &[0; FAKE_HANDLE_LEN], &queue, 1)), ErrorCode::IpcUnavailable);
    assert!(!available(context.device.as_ref()), "a fake device has no default context");
}

#[test]
fn only_device_memory_owning_its_whole_allocation_is_exported() {
    let book = own_book();
    let (local, queue, remote) = pair(3040);
    for kind in [UsmKind::Host, UsmKind::Shared] {
        let memory = UsmMemory::allocate(test_pool(), &queue, kind, KIB, 0).unwrap();
        assert_eq!(code(export(book, &memory)), ErrorCode::IpcNotExportable, "{kind:?}");
    }
    let memory = UsmMemory::allocate(test_pool(), &queue, UsmKind::Device, KIB, 0).unwrap();
    let whole = memory.clone();
    let handle = export(book, &whole).unwrap();
    assert_eq!(handle, Ipc::export(local.as_ref(), memory.address()).unwrap(), "exactly the runtime's handle");
    assert_eq!(local.counts().exports, 2);
    assert_eq!(export(book, &memory).unwrap(), handle, "the same handle for the allocation's life");
    assert_eq!(local.counts().exports, 2, "a second export asks the runtime nothing");
    // Opened in this process: refused (a runtime opens other processes' handles only).
    assert_eq!(code(open(book, &handle, &queue, 1)), ErrorCode::IpcHandleInvalid);
    assert_eq!(local.counts().opens, 0);
    // A mapping is not exported again.
    let (_, remote_bytes) = remote_handle(&remote, KIB);
    let mapped = open(book, &remote_bytes, &queue, KIB).unwrap();
    assert_eq!(code(export(book, &mapped)), ErrorCode::IpcNotExportable);
}

#[test]
fn a_view_of_part_of_an_allocation_is_not_exported() {
    let book = own_book();
    let (_, queue, _) = pair(3050);
    let memory = UsmMemory::allocate(test_pool(), &queue, UsmKind::Device, KIB, 0).unwrap();
    let Provenance::Owned(allocation) = provenance_in(test_pool(), memory.address()) else { panic!("owned") };
    // SAFETY: views inside the allocation, which they hold.
    let (half, tail) = unsafe {
        (
            UsmMemory::from_interface(
                memory.address(),
                KIB / 2,
                queue.clone(),
                Owner::Allocation(allocation.clone()),
                false,
            ),
            UsmMemory::from_interface(
                memory.address() + 8,
                KIB - 8,
                queue.clone(),
                Owner::Allocation(allocation),
                false,
            ),
        )
    };
    assert_eq!(half.usm_type(None), UsmKind::Device);
    assert_eq!(code(export(book, &half)), ErrorCode::IpcNotExportable);
    assert_eq!(code(export(book, &tail)), ErrorCode::IpcNotExportable);
    assert!(export(book, &memory).is_ok());
}

#[test]
fn an_exported_allocation_is_freed_never_pooled() {
    let book = own_book();
    let (local, queue, _) = pair(3060);
    let cached = UsmMemory::allocate(test_pool(), &queue, UsmKind::Device, 3 * KIB, 0).unwrap();
    let cached_at = cached.address();
    drop(cached);
    if test_pool().enabled() {
        assert!(local.counts().frees.is_empty(), "an ordinary block is cached");
        assert!(test_pool().cached_range(cached_at).is_some());
    }
    let exported = UsmMemory::allocate(test_pool(), &queue, UsmKind::Device, 5 * KIB, 0).unwrap();
    let address = exported.address();
    export(book, &exported).unwrap();
    let view = exported.clone();
    drop(exported);
    assert!(local.counts().live.contains_key(&address), "a holder is left");
    drop(view);
    assert_eq!(local.counts().frees, vec![address], "freed to the runtime at once");
    assert!(test_pool().cached_range(address).is_none(), "and never cached");
    assert!(matches!(provenance_in(test_pool(), address), Provenance::Foreign), "out of the book");
    let again = UsmMemory::allocate(test_pool(), &queue, UsmKind::Device, 5 * KIB, 0).unwrap();
    assert_ne!(again.address(), address, "no new owner receives the exported block");
}

#[test]
fn the_book_of_exports_keeps_only_live_allocations_in_bounds() {
    let book = own_book();
    let (_, queue, _) = pair(3080);
    let kept = UsmMemory::allocate(test_pool(), &queue, UsmKind::Device, KIB, 0).unwrap();
    let kept_handle = export(book, &kept).unwrap();
    for _ in 0..1000 {
        let memory = UsmMemory::allocate(test_pool(), &queue, UsmKind::Device, KIB, 0).unwrap();
        export(book, &memory).unwrap();
        assert!(book.lock().exported.len() <= 2 * 64 + 1, "entries of freed allocations are pruned");
    }
    // A live allocation's entry survives every prune: its own handle is still refused here.
    assert_eq!(code(open(book, &kept_handle, &queue, KIB)), ErrorCode::IpcHandleInvalid);
}

#[test]
fn a_thousand_cycles_leave_nothing_open() {
    let book = own_book();
    let (local, queue, remote) = pair(3070);
    let (_, handle) = remote_handle(&remote, 64 * KIB);
    for _ in 0..1000 {
        let memory = open(book, &handle, &queue, 64 * KIB).unwrap();
        drop(memory);
    }
    let counts = local.counts();
    assert_eq!((counts.opens, counts.closes, counts.bad_closes), (1000, 1000, 0));
    assert!(counts.mapped.is_empty());
    drop(counts);
    assert!(!book.lock().open.contains_key(handle.as_slice()), "out of the book");
}

#[test]
fn the_handle_hasher_reads_every_byte_of_a_handle() {
    use std::hash::{BuildHasher, BuildHasherDefault};
    let build = BuildHasherDefault::<crate::memory::ipc_mapping::HandleHasher>::default();
    let base = [7u8; 64];
    let mut seen = std::collections::HashSet::new();
    assert!(seen.insert(build.hash_one(&base[..])));
    for at in 0..base.len() {
        let mut changed = base;
        changed[at] ^= 1;
        assert!(seen.insert(build.hash_one(&changed[..])), "byte {at} changed the hash of no other handle");
    }
    // A shorter handle with the same leading bytes is another key.
    assert!(seen.insert(build.hash_one(&base[..63])));
}
