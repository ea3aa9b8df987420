//! Tests against the real SYCL runtime of this machine (the OpenCL CPU device,
//! `opencl:cpu`). Where no runtime is installed they print why and pass.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use super::*;
use crate::runtime::fake::{free_raw, RawCalls};

/// The provider and the OpenCL CPU device, or `None` (with a message) when this machine
/// has no SYCL runtime at all. A runtime that is present but fails to load fails the test.
fn cpu_device() -> Option<(Arc<dyn Provider>, Arc<dyn Device>)> {
    if let Err(searched) = locate::locate(locate::Need::Library) {
        eprintln!("SKIPPED: no SYCL runtime installed (searched: {}); {}", searched.join("; "), shim::INSTALL_HINT);
        return None;
    }
    let provider = match load() {
        Ok(p) => p,
        Err(e) => panic!("the SYCL runtime is installed but the provider failed to load: {e}"),
    };
    let device = provider
        .devices()
        .into_iter()
        .find(|d| d.info().backend == "opencl" && d.info().device_type == DeviceType::Cpu);
    match device {
        Some(device) => Some((provider, device)),
        None => panic!(
            "the SYCL runtime is installed but shows no opencl:cpu device; devices: {:?}",
            provider.devices().iter().map(|d| d.info().clone()).collect::<Vec<_>>()
        ),
    }
}

fn default_queue(device: &Arc<dyn Device>) -> Arc<dyn Queue> {
    let context = device.default_context().unwrap();
    context.create_queue(device).unwrap()
}

fn read_back(queue: &Arc<dyn Queue>, src: Address, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    queue.memcpy_raw(out.as_mut_ptr() as u64, src, n as u64).unwrap();
    out
}

const KINDS: [UsmKind; 3] = [UsmKind::Device, UsmKind::Shared, UsmKind::Host];

#[test]
fn enumerates_devices_with_their_facts() {
    let Some((provider, device)) = cpu_device() else { return };
    let info = device.info();
    eprintln!("opencl:cpu device: {info:?}");
    assert!(!info.name.is_empty());
    assert!(!info.vendor.is_empty());
    assert!(!info.driver_version.is_empty());
    assert!(info.global_mem_size > 0);
    assert!(info.max_mem_alloc_size > 0 && info.max_mem_alloc_size <= info.global_mem_size);
    for aspect in ["cpu", "usm_device_allocations", "usm_host_allocations", "usm_shared_allocations"] {
        assert!(info.aspects.iter().any(|a| a == aspect), "missing aspect {aspect}: {:?}", info.aspects);
    }
    assert!(!info.aspects.iter().any(|a| a == "gpu"));
    assert!(device.same_device(device.as_ref()));
    // Devices are listed once, and distinct devices are not the same.
    let devices = provider.devices();
    for (i, a) in devices.iter().enumerate() {
        for (j, b) in devices.iter().enumerate() {
            assert_eq!(a.same_device(b.as_ref()), i == j, "{:?} vs {:?}", a.info().name, b.info().name);
        }
    }
}

#[test]
fn load_happens_once() {
    let Some((provider, device)) = cpu_device() else { return };
    let again = load().unwrap();
    let found = again.devices().into_iter().find(|d| d.same_device(device.as_ref())).unwrap();
    assert!(Arc::ptr_eq(&found, &device), "a second load() must return the same devices");
    assert_eq!(again.devices().len(), provider.devices().len());
}

#[test]
fn allocates_each_kind_and_knows_its_pointers() {
    let Some((_provider, device)) = cpu_device() else { return };
    let queue = default_queue(&device);
    let context = queue.context();
    for kind in KINDS {
        for alignment in [0u64, 64, 4096] {
            let p = queue.allocate(kind, 1000, alignment).unwrap();
            assert_ne!(p, 0);
            if alignment != 0 {
                assert_eq!(p % alignment, 0, "{kind:?} aligned to {alignment}");
            }
            assert_eq!(context.pointer_kind(p), kind);
            // An address inside the allocation has the same kind.
            assert_eq!(context.pointer_kind(p + 999), kind);
            let owner = context.pointer_device(p).unwrap();
            assert!(owner.same_device(device.as_ref()));
            assert!(Arc::ptr_eq(&owner, &device), "pointer_device maps to the enumerated device");
            assert_eq!(context.address_range(p), None);
            free_raw(&*context, p).unwrap();
        }
    }
    assert!(matches!(queue.allocate(UsmKind::Unknown, 16, 0), Err(MemoryError::UnknownKindAllocation)));
    assert!(matches!(queue.allocate(UsmKind::Device, 16, 3), Err(MemoryError::InvalidAlignment { alignment: 3 })));
    // Freeing NULL is a no-op, as sycl::free(nullptr) is.
    free_raw(&*context, 0).unwrap();
}

#[test]
fn an_impossible_allocation_is_an_error_not_a_crash() {
    let Some((_provider, device)) = cpu_device() else { return };
    let queue = default_queue(&device);
    let too_big = device.info().global_mem_size.saturating_mul(1 << 20);
    for kind in KINDS {
        match queue.allocate(kind, too_big, 0) {
            Err(MemoryError::UsmAllocation { message }) => {
                eprintln!("{kind:?} of {too_big} bytes: {message}");
                assert!(!message.is_empty());
            }
            Err(other) => panic!("{kind:?}: expected UsmAllocation, got {other:?}"),
            Ok(p) => {
                free_raw(&*queue.context(), p).unwrap();
                panic!("{kind:?}: the runtime gave {too_big} bytes");
            }
        }
    }
}

#[test]
fn an_alignment_the_runtime_cannot_give_is_refused_not_ignored() {
    let Some((_provider, device)) = cpu_device() else { return };
    let queue = default_queue(&device);
    let alignment = 1u64 << 40;
    for kind in KINDS {
        match queue.allocate(kind, 100, alignment) {
            Err(MemoryError::UsmAllocation { message }) => {
                eprintln!("{kind:?} aligned to {alignment}: {message}");
                assert!(!message.is_empty());
            }
            Err(other) => panic!("{kind:?}: expected UsmAllocation, got {other:?}"),
            Ok(p) => {
                // A runtime that honours the alignment is fine too; a misaligned pointer is not.
                free_raw(&*queue.context(), p).unwrap();
                assert_eq!(p % alignment, 0, "{kind:?}: 0x{p:x} is not aligned to {alignment}");
            }
        }
    }
}

#[test]
fn memcpy_round_trips_through_every_kind() {
    let Some((_provider, device)) = cpu_device() else { return };
    let queue = default_queue(&device);
    let context = queue.context();
    let n = 64 * 1024 + 3;
    let data: Vec<u8> = (0..n).map(|i| (i * 31 % 251) as u8).collect();
    let ptrs: Vec<Address> = KINDS.iter().map(|&k| queue.allocate(k, n as u64, 0).unwrap()).collect();
    // host -> device -> shared -> host(USM) -> host
    queue.memcpy_raw(ptrs[0], data.as_ptr() as u64, n as u64).unwrap();
    queue.memcpy_raw(ptrs[1], ptrs[0], n as u64).unwrap();
    queue.memcpy_raw(ptrs[2], ptrs[1], n as u64).unwrap();
    assert_eq!(read_back(&queue, ptrs[2], n), data);
    assert_eq!(read_back(&queue, ptrs[0], n), data);
    // Zero bytes is a no-op.
    queue.memcpy_raw(ptrs[0], data.as_ptr() as u64, 0).unwrap();
    queue.wait().unwrap();
    for p in ptrs {
        free_raw(&*context, p).unwrap();
    }
}

#[test]
fn memset_fills_device_memory() {
    let Some((_provider, device)) = cpu_device() else { return };
    let queue = default_queue(&device);
    let n = 4096usize;
    for kind in KINDS {
        let p = queue.allocate(kind, n as u64, 0).unwrap();
        queue.memset_raw(p, 0xAB, n as u64).unwrap();
        queue.memset_raw(p + 10, 0x01, 5).unwrap();
        let got = read_back(&queue, p, n);
        let mut want = vec![0xABu8; n];
        want[10..15].fill(0x01);
        assert_eq!(got, want, "{kind:?}");
        free_raw(&*queue.context(), p).unwrap();
    }
}

#[test]
fn foreign_pointers_are_unknown_and_have_no_device() {
    let Some((_provider, device)) = cpu_device() else { return };
    let context = device.default_context().unwrap();
    let on_stack = 0u64;
    let on_heap = Box::new([0u8; 64]);
    for ptr in [&on_stack as *const u64 as u64, on_heap.as_ptr() as u64, 0, 1, u64::MAX] {
        assert_eq!(context.pointer_kind(ptr), UsmKind::Unknown, "0x{ptr:x}");
        match context.pointer_device(ptr) {
            Err(MemoryError::ForeignPointer { .. }) => {}
            other => panic!("0x{ptr:x}: expected ForeignPointer, got {:?}", other.map(|d| d.info().clone())),
        }
    }
    // The shim itself: sycl::get_pointer_device throws for a foreign pointer; the guard
    // turns that into a status and text (an escaping exception would abort the test).
    let sycl = context.as_any().downcast_ref::<SyclContext>().unwrap();
    match sycl.handle.pointer_device(&on_stack as *const u64 as u64) {
        Err(e) => {
            eprintln!("get_pointer_device(stack address): status {}: {}", e.status, e.message);
            assert_eq!(e.status, shim::STATUS_SYCL);
            assert!(!e.message.is_empty());
        }
        Ok(_) => panic!("get_pointer_device accepted a stack address"),
    }
}

#[test]
fn contexts_default_shared_and_created_distinct() {
    let Some((_provider, device)) = cpu_device() else { return };
    let default_a = device.default_context().unwrap();
    let default_b = device.default_context().unwrap();
    assert!(default_a.same_context(default_b.as_ref()), "the platform default context is shared");
    let own = device.create_context().unwrap();
    assert!(!own.same_context(default_a.as_ref()), "create_context gives a distinct context");
    assert!(!default_a.same_context(own.as_ref()));
    assert!(own.same_context(own.as_ref()));
    let own_devices = own.devices();
    assert_eq!(own_devices.len(), 1);
    assert!(Arc::ptr_eq(&own_devices[0], &device));
    assert!(default_a.devices().iter().any(|d| d.same_device(device.as_ref())));

    // Queues know their context and device.
    let q_default = default_a.create_queue(&device).unwrap();
    let q_own = own.create_queue(&device).unwrap();
    assert!(q_default.context().same_context(default_b.as_ref()));
    assert!(q_own.context().same_context(own.as_ref()));
    assert!(q_own.device().same_device(device.as_ref()));

    // A pointer of one context in the other. On the OpenCL CPU device (2025.3.3) every
    // context shares one USM address space, and the runtime answers this lookup per
    // context: the other context reports the pointer as unknown (it does not own it),
    // while a memcpy across contexts still "works" (unknown pointers are treated as host
    // memory), so upper layers must check kinds against the context themselves.
    for kind in KINDS {
        let p = q_own.allocate(kind, 256, 0).unwrap();
        assert_eq!(own.pointer_kind(p), kind);
        let seen_by_default = default_a.pointer_kind(p);
        eprintln!("{kind:?} pointer of a created context, seen by the default context: {seen_by_default:?}");
        assert_eq!(seen_by_default, UsmKind::Unknown, "{kind:?}");
        assert!(matches!(default_a.pointer_device(p), Err(MemoryError::ForeignPointer { .. })));
        free_raw(&*own, p).unwrap();
    }
}

#[test]
fn handles_are_usable_from_many_threads() {
    let Some((_provider, device)) = cpu_device() else { return };
    let queue = default_queue(&device);
    let threads: Vec<_> = (0..8u8)
        .map(|t| {
            let queue = Arc::clone(&queue);
            std::thread::spawn(move || {
                for round in 0..20u8 {
                    let p = queue.allocate(UsmKind::Device, 1024, 0).unwrap();
                    let fill = t.wrapping_mul(31).wrapping_add(round);
                    queue.memset_raw(p, fill, 1024).unwrap();
                    assert!(read_back(&queue, p, 1024).iter().all(|&b| b == fill));
                    free_raw(&*queue.context(), p).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn reports_load_timing() {
    // Not an assertion: records what first use costs here (see the report of this module).
    let start = std::time::Instant::now();
    let Some((_provider, device)) = cpu_device() else { return };
    let loaded = start.elapsed();
    let start = std::time::Instant::now();
    let _queue = default_queue(&device);
    eprintln!("load (or cached load): {loaded:?}; default context + queue: {:?}", start.elapsed());
    let (root, shim) = loaded_from().unwrap();
    eprintln!("runtime: {}; shim: {}", root.display(), shim.display());
    assert!(locate::abi_of(root).is_some_and(|abi| shim.ends_with(abi.shim)) && shim.is_file());
}
