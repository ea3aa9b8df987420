//! Tests of the CUDA provider. `load_without_driver_is_an_error_not_a_panic` runs
//! everywhere; every `gpu_*` test needs a CUDA device and is `#[ignore = "needs CUDA"]`:
//! `scripts/gpu-suite.sh` runs them (`cargo test -- --include-ignored`) on a GPU machine,
//! where they exercise the real allocation, copy and pointer-query paths, and fail when no
//! CUDA device is found.

use super::*;
use crate::runtime::fake::{free_raw, RawCalls};

const MIB: usize = 1 << 20;

fn provider() -> Arc<dyn Provider> {
    load().unwrap_or_else(|e| panic!("this test needs a CUDA device: {e}"))
}

type Setup = (Arc<dyn Device>, Arc<dyn Context>, Arc<dyn Queue>);

/// Device 0, its primary context and a queue on it.
fn setup() -> Setup {
    let dev = provider().devices().into_iter().next().expect("load() guarantees a device");
    let ctx = dev.default_context().unwrap();
    let q = ctx.create_queue(&dev).unwrap();
    (dev, ctx, q)
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i.wrapping_mul(31).wrapping_add(7) % 251) as u8).collect()
}

fn cuda_ctx(ctx: &Arc<dyn Context>) -> &CudaContext {
    ctx.as_any().downcast_ref::<CudaContext>().expect("a CUDA context")
}

/// `(free, total)` of the context's device.
fn mem_info(ctx: &Arc<dyn Context>) -> (u64, u64) {
    cuda_ctx(ctx).current().unwrap().mem_info().unwrap()
}

/// Reads host-accessible USM memory directly.
fn read_host(address: Address, n: usize) -> Vec<u8> {
    // SAFETY: the tests only pass live host or shared allocations of at least `n` bytes,
    // with no copy in flight (every queue operation is synchronous).
    unsafe { std::slice::from_raw_parts(address as *const u8, n) }.to_vec()
}

const KINDS: [UsmKind; 3] = [UsmKind::Device, UsmKind::Host, UsmKind::Shared];

#[test]
fn load_without_driver_is_an_error_not_a_panic() {
    let present = driver::library_present();
    let first = std::panic::catch_unwind(load).expect("load() must not panic");
    match first {
        Ok(p) => {
            assert!(present, "load() succeeded without a driver library?");
            assert!(!p.devices().is_empty());
            eprintln!("CUDA driver present: {} device(s); no-driver assertion skipped", p.devices().len());
        }
        Err(e) => {
            assert!(matches!(e, MemoryError::CudaDriver { .. }), "{e:?}");
            assert_eq!(e.code(), "ERR_CUDA_DRIVER");
            if !present {
                let msg = e.to_string();
                assert!(msg.contains("libcuda.so.1") && msg.contains("NVIDIA driver"), "{msg}");
            }
            // Cached: the same answer again, still no panic.
            let again = std::panic::catch_unwind(load).expect("load() must not panic");
            assert_eq!(again.err(), Some(e));
        }
    }
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_device_info() {
    let p = provider();
    let devs = p.devices();
    for (i, d) in devs.iter().enumerate() {
        let info = d.info();
        eprintln!("cuda:gpu:{i}: {info:?}");
        assert_eq!(info.backend, "cuda");
        assert_eq!(info.vendor, "NVIDIA Corporation");
        assert_eq!(info.device_type, DeviceType::Gpu);
        assert!(info.driver_version.starts_with("CUDA "), "{}", info.driver_version);
        assert!(!info.name.is_empty());
        assert!(info.global_mem_size > 0 && info.max_mem_alloc_size == info.global_mem_size);
        for a in ["gpu", "usm_device_allocations", "usm_host_allocations", "fp64"] {
            assert!(info.aspects.iter().any(|x| x == a), "missing aspect {a}");
        }
        assert!(d.same_device(d.as_ref()));
        let cd = d.as_any().downcast_ref::<CudaDevice>().unwrap();
        assert_eq!(cd.ordinal(), i as i32);
        for (j, o) in devs.iter().enumerate() {
            assert_eq!(d.same_device(o.as_ref()), i == j);
        }
    }
    // The default context is one primary context per device, the same every time.
    let d = &devs[0];
    let a = d.default_context().unwrap();
    let b = d.default_context().unwrap();
    assert!(a.same_context(b.as_ref()));
    assert_eq!(a.devices().len(), 1);
    assert!(a.devices()[0].same_device(d.as_ref()));
    // A created context is a different one.
    let c = d.create_context().unwrap();
    assert!(!a.same_context(c.as_ref()) && !c.same_context(a.as_ref()));
    assert!(c.same_context(c.as_ref()));
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_alloc_each_kind_reports_its_kind() {
    let (dev, ctx, q) = setup();
    for kind in KINDS {
        let p = q.allocate(kind, 4096, 0).unwrap();
        assert_ne!(p, 0);
        assert_eq!(ctx.pointer_kind(p), kind, "{kind:?}");
        assert_eq!(ctx.pointer_kind(p + 4095), kind, "{kind:?} last byte");
        // The driver's own answer agrees with the allocation table.
        assert_eq!(cuda_ctx(&ctx).driver_pointer_kind(p), kind, "{kind:?} driver view");
        assert_eq!(cuda_ctx(&ctx).driver_pointer_kind(p + 100), kind, "{kind:?} driver view, interior");
        assert!(ctx.pointer_device(p).unwrap().same_device(dev.as_ref()));
        assert!(q.context().same_context(ctx.as_ref()) && q.device().same_device(dev.as_ref()));
        free_raw(&*ctx, p).unwrap();
        // A second free is an error, never a double free in the driver.
        assert!(matches!(free_raw(&*ctx, p), Err(MemoryError::ForeignPointer { .. })));
    }
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_unknown_addresses_are_unknown() {
    let (_dev, ctx, _q) = setup();
    let on_stack = 0u64;
    let on_heap = Box::new([0u8; 64]);
    let addrs = [
        0u64,
        1,
        4096,
        &on_stack as *const u64 as u64,
        on_heap.as_ptr() as u64,
        u64::MAX,
        u64::MAX - 4095,
        0xdead_beef_0000,
    ];
    for a in addrs {
        assert_eq!(ctx.pointer_kind(a), UsmKind::Unknown, "0x{a:x}");
        assert_eq!(ctx.address_range(a), None, "0x{a:x}");
        assert!(matches!(ctx.pointer_device(a), Err(MemoryError::ForeignPointer { .. })), "0x{a:x}");
        assert!(free_raw(&*ctx, a).is_err(), "0x{a:x}");
    }
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_memcpy_round_trip_1mib() {
    let (_dev, _ctx, q) = setup();
    let src = pattern(MIB);
    for kind in KINDS {
        let p = q.allocate(kind, MIB as u64, 0).unwrap();
        q.memcpy_raw(p, src.as_ptr() as u64, MIB as u64).unwrap();
        let mut back = vec![0u8; MIB];
        q.memcpy_raw(back.as_mut_ptr() as u64, p, MIB as u64).unwrap();
        assert!(back == src, "{kind:?}: host -> USM -> host changed the bytes");
        // USM -> USM of every kind.
        for kind2 in KINDS {
            let p2 = q.allocate(kind2, MIB as u64, 0).unwrap();
            q.memcpy_raw(p2, p, MIB as u64).unwrap();
            let mut back2 = vec![0u8; MIB];
            q.memcpy_raw(back2.as_mut_ptr() as u64, p2, MIB as u64).unwrap();
            assert!(back2 == src, "{kind:?} -> {kind2:?}");
            free_raw(&*q.context(), p2).unwrap();
        }
        if kind.host_accessible() {
            assert!(read_host(p, MIB) == src, "{kind:?}: direct host read");
        }
        free_raw(&*q.context(), p).unwrap();
    }
    q.memcpy_raw(0, 0, 0).unwrap(); // zero bytes: nothing to do
    q.wait().unwrap();
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_memset_fills() {
    let (_dev, ctx, q) = setup();
    for kind in KINDS {
        let p = q.allocate(kind, MIB as u64, 0).unwrap();
        q.memset_raw(p, 0xA5, MIB as u64).unwrap();
        q.memset_raw(p + 1000, 0x3C, 24).unwrap();
        let mut back = vec![0u8; MIB];
        q.memcpy_raw(back.as_mut_ptr() as u64, p, MIB as u64).unwrap();
        let want = |i: usize| if (1000..1024).contains(&i) { 0x3C } else { 0xA5 };
        assert!(back.iter().enumerate().all(|(i, &b)| b == want(i)), "{kind:?}");
        if kind.host_accessible() {
            let direct = read_host(p, MIB);
            assert!(direct.iter().enumerate().all(|(i, &b)| b == want(i)), "{kind:?} direct");
        }
        free_raw(&*ctx, p).unwrap();
    }
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_host_writes_are_seen_by_the_device() {
    let (_dev, ctx, q) = setup();
    let src = pattern(4096);
    for kind in [UsmKind::Host, UsmKind::Shared] {
        let p = q.allocate(kind, 4096, 0).unwrap();
        // SAFETY: `p` is a live host-accessible allocation of 4096 bytes; no copy is in flight.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p as *mut u8, 4096) };
        let d = q.allocate(UsmKind::Device, 4096, 0).unwrap();
        q.memcpy_raw(d, p, 4096).unwrap();
        let mut back = vec![0u8; 4096];
        q.memcpy_raw(back.as_mut_ptr() as u64, d, 4096).unwrap();
        assert_eq!(back, src, "{kind:?}");
        free_raw(&*ctx, d).unwrap();
        free_raw(&*ctx, p).unwrap();
    }
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_address_range_of_interior_pointer() {
    let (_dev, ctx, q) = setup();
    for kind in KINDS {
        let p = q.allocate(kind, 10_000, 0).unwrap();
        assert_eq!(ctx.address_range(p), Some((p, 10_000)), "{kind:?}");
        assert_eq!(ctx.address_range(p + 1234), Some((p, 10_000)), "{kind:?}");
        assert_eq!(ctx.address_range(p + 9_999), Some((p, 10_000)), "{kind:?}");
        // The driver's range (cuMemGetAddressRange) holds ours, where it answers.
        if let Some((base, size)) = cuda_ctx(&ctx).driver_address_range(p + 1234) {
            assert!(base <= p && p + 10_000 <= base + size, "{kind:?}: 0x{base:x}+{size}");
        } else {
            assert_ne!(kind, UsmKind::Device, "cuMemGetAddressRange must know device memory");
            eprintln!("cuMemGetAddressRange does not answer for {kind:?} memory");
        }
        free_raw(&*ctx, p).unwrap();
    }
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_managed_refused_beyond_free_memory() {
    let (_dev, ctx, q) = setup();
    let (free, total) = mem_info(&ctx);
    for ask in [free + (1 << 30), total.saturating_mul(2), u64::MAX / 2] {
        let e = q.allocate(UsmKind::Shared, ask, 0).unwrap_err();
        let MemoryError::UsmAllocation { message: msg } = &e else { panic!("{e:?}") };
        // Refused by the admission check, not by a failed cuMemAllocManaged.
        assert!(msg.starts_with("refusing to allocate"), "{msg}");
        assert!(msg.contains(&format!("{ask} bytes")), "{msg}");
        assert!(!msg.contains("cuMemAllocManaged"), "{msg}");
    }
    // Padding for alignment counts against free memory too.
    let (free, _) = mem_info(&ctx);
    let e = q.allocate(UsmKind::Shared, free, 1 << 30).unwrap_err();
    assert!(matches!(e, MemoryError::UsmAllocation { message: ref m } if m.starts_with("refusing")), "{e:?}");
    // A small request is admitted.
    let p = q.allocate(UsmKind::Shared, 1 << 16, 0).unwrap();
    free_raw(&*ctx, p).unwrap();
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_device_out_of_memory_is_a_usm_allocation_error() {
    let (_dev, ctx, q) = setup();
    let (_, total) = mem_info(&ctx);
    let e = q.allocate(UsmKind::Device, total.saturating_mul(4), 0).unwrap_err();
    let MemoryError::UsmAllocation { message: msg } = &e else { panic!("{e:?}") };
    assert!(msg.starts_with("cuMemAlloc of ") && msg.contains("CUDA_ERROR"), "{msg}");
    assert!(msg.contains("bytes free of"), "{msg}");
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_alignment_honoured() {
    let (_dev, ctx, q) = setup();
    let src = pattern(10_000);
    for kind in KINDS {
        for align in [1u64, 256, 4096, 1 << 16, 1 << 21] {
            let p = q.allocate(kind, 10_000, align).unwrap();
            assert_eq!(p % align, 0, "{kind:?} alignment {align}: 0x{p:x}");
            assert_eq!(ctx.pointer_kind(p), kind);
            assert_eq!(ctx.address_range(p + 5), Some((p, 10_000)));
            // All 10,000 bytes behind the aligned pointer are usable.
            q.memcpy_raw(p, src.as_ptr() as u64, 10_000).unwrap();
            let mut back = vec![0u8; 10_000];
            q.memcpy_raw(back.as_mut_ptr() as u64, p, 10_000).unwrap();
            assert_eq!(back, src);
            free_raw(&*ctx, p).unwrap();
        }
        for bad in [3u64, 100, 4097] {
            let e = q.allocate(kind, 16, bad).unwrap_err();
            assert_eq!(e, MemoryError::InvalidAlignment { alignment: bad });
        }
    }
    assert!(matches!(q.allocate(UsmKind::Device, 0, 0), Err(MemoryError::ZeroSize)));
    assert!(matches!(q.allocate(UsmKind::Unknown, 16, 0), Err(MemoryError::UnknownKindAllocation)));
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_cross_context_pointers_are_unknown() {
    let (dev, primary, pq) = setup();
    let other = dev.create_context().unwrap();
    let oq = other.create_queue(&dev).unwrap();
    assert!(oq.context().same_context(other.as_ref()));
    for kind in KINDS {
        let mine = pq.allocate(kind, 4096, 0).unwrap();
        let theirs = oq.allocate(kind, 4096, 0).unwrap();
        assert_eq!(primary.pointer_kind(mine), kind);
        assert_eq!(other.pointer_kind(theirs), kind);
        assert_eq!(primary.pointer_kind(theirs), UsmKind::Unknown, "{kind:?} of the created context, asked in primary");
        assert_eq!(other.pointer_kind(mine), UsmKind::Unknown, "{kind:?} of primary, asked in the created context");
        assert_eq!(primary.address_range(theirs), None);
        assert!(primary.pointer_device(theirs).is_err());
        assert!(free_raw(&*primary, theirs).is_err());
        // A copy on the created context's stream to and from host memory works.
        let src = pattern(4096);
        oq.memcpy_raw(theirs, src.as_ptr() as u64, 4096).unwrap();
        let mut back = vec![0u8; 4096];
        oq.memcpy_raw(back.as_mut_ptr() as u64, theirs, 4096).unwrap();
        assert_eq!(back, src);
        free_raw(&*other, theirs).unwrap();
        free_raw(&*primary, mine).unwrap();
    }
    assert_eq!(cuda_ctx(&other).live_allocations(), 0);
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_a_primary_context_stays_current_where_none_was_and_another_is_restored() {
    let (dev, primary, pq) = setup();
    let other = dev.create_context().unwrap();
    let oq = other.create_queue(&dev).unwrap();
    let driver = cuda_ctx(&primary).driver;
    let (primary_raw, other_raw) = (cuda_ctx(&primary).handle.as_raw(), cuda_ctx(&other).handle.as_raw());
    let current = || driver.current_raw().unwrap() as usize;
    let device = pq.allocate(UsmKind::Device, 4096, 0).unwrap();
    let theirs = oq.allocate(UsmKind::Device, 4096, 0).unwrap();
    let src = pattern(4096);
    std::thread::scope(|scope| {
        // A thread with no context current: the primary context's copy leaves it current.
        // Joined before the second starts, which reads back what this one wrote.
        let first = scope.spawn(|| {
            assert_eq!(current(), 0);
            pq.memcpy_raw(device, src.as_ptr() as u64, 4096).unwrap();
            assert_eq!(current(), primary_raw);
            // A created context is pushed and popped around each call, restoring the primary.
            oq.memcpy_raw(theirs, src.as_ptr() as u64, 4096).unwrap();
            assert_eq!(current(), primary_raw);
        });
        first.join().unwrap();
        // A thread where another library made a context current: it is current again after
        // each of our calls, and its stack is as it was.
        scope.spawn(|| {
            let theirs_current = driver.push(cuda_ctx(&other).handle).unwrap();
            let mut back = vec![0u8; 4096];
            pq.memcpy_raw(back.as_mut_ptr() as u64, device, 4096).unwrap();
            assert_eq!(back, src);
            assert_eq!(current(), other_raw);
            drop(theirs_current);
            assert_eq!(current(), 0, "the stack is as it was");
        });
    });
    free_raw(&*other, theirs).unwrap();
    free_raw(&*primary, device).unwrap();
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_created_context_frees_leftovers_on_drop() {
    let (dev, _primary, _q) = setup();
    let ctx = dev.create_context().unwrap();
    let q = ctx.create_queue(&dev).unwrap();
    for kind in KINDS {
        q.allocate(kind, 1 << 16, 0).unwrap();
    }
    assert_eq!(cuda_ctx(&ctx).live_allocations(), 3);
    drop(q);
    drop(ctx); // frees the three, destroys the stream and the context: no crash, no leak
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_queue_for_a_foreign_device_is_refused() {
    let p = provider();
    let devs = p.devices();
    if devs.len() < 2 {
        eprintln!("only one CUDA device: skipped");
        return;
    }
    let ctx = devs[0].default_context().unwrap();
    assert!(matches!(ctx.create_queue(&devs[1]), Err(MemoryError::QueueCreation { .. })));
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_calls_from_many_threads() {
    let (_dev, ctx, q) = setup();
    let src = Arc::new(pattern(MIB));
    // One queue shared by threads, and per-thread queues, all at once.
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let (ctx, q, src) = (ctx.clone(), q.clone(), src.clone());
            std::thread::spawn(move || {
                let q = if i % 2 == 0 { q } else { ctx.create_queue(&q.device()).unwrap() };
                for round in 0..4 {
                    let kind = KINDS[(i + round) % 3];
                    let p = q.allocate(kind, MIB as u64, 0).unwrap();
                    assert_eq!(ctx.pointer_kind(p), kind);
                    q.memcpy_raw(p, src.as_ptr() as u64, MIB as u64).unwrap();
                    let mut back = vec![0u8; MIB];
                    q.memcpy_raw(back.as_mut_ptr() as u64, p, MIB as u64).unwrap();
                    assert!(back == *src);
                    free_raw(&*ctx, p).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("worker thread panicked");
    }
    // A queue made on this thread, used and dropped on another.
    let q2 = ctx.create_queue(&q.device()).unwrap();
    std::thread::spawn(move || {
        let p = q2.allocate(UsmKind::Device, 64, 0).unwrap();
        q2.memset_raw(p, 1, 64).unwrap();
        free_raw(&*q2.context(), p).unwrap();
        drop(q2);
    })
    .join()
    .expect("thread panicked");
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_ipc_exports_whole_device_allocations_only_as_the_drivers_64_bytes() {
    let (_dev, ctx, q) = setup();
    let ipc = ctx.ipc().expect("a CUDA context has IPC");
    assert_eq!(ipc.handle_len(), 64);
    let p = q.allocate(UsmKind::Device, MIB as u64, 0).unwrap();
    let handle = ipc.export(p).unwrap();
    assert_eq!(handle.len(), 64);
    assert!(handle.iter().any(|&b| b != 0), "the driver filled the handle");
    let refused = |address| ipc.export(address).unwrap_err().error_code();
    assert_eq!(refused(p + 256), crate::error::ErrorCode::IpcNotExportable, "inside the allocation");
    let host = q.allocate(UsmKind::Host, 4096, 0).unwrap();
    assert_eq!(refused(host), crate::error::ErrorCode::IpcNotExportable, "host memory");
    assert_eq!(
        ipc.open(&handle[..63], ctx.devices()[0].as_ref()).unwrap_err().error_code(),
        crate::error::ErrorCode::IpcHandleLength
    );
    free_raw(ctx.as_ref(), host).unwrap();
    free_raw(ctx.as_ref(), p).unwrap();
}

// ---------------------------------------------------------------------------------------
// Peer access and copies between contexts (peer.rs)
// ---------------------------------------------------------------------------------------

/// `nbytes` of `pattern` copied into new device memory of `q`; returns the address.
fn device_with_pattern(q: &Arc<dyn Queue>, nbytes: usize) -> u64 {
    let p = q.allocate(UsmKind::Device, nbytes as u64, 0).unwrap();
    q.memcpy_raw(p, pattern(nbytes).as_ptr() as u64, nbytes as u64).unwrap();
    p
}

/// The `nbytes` at device address `p`, read back through `q`.
fn read_device(q: &Arc<dyn Queue>, p: u64, nbytes: usize) -> Vec<u8> {
    let mut back = vec![0u8; nbytes];
    q.memcpy_raw(back.as_mut_ptr() as u64, p, nbytes as u64).unwrap();
    back
}

/// A peer copy of `nbytes` from `src` (of `src_q`) to `dst` (of `dst_q`), run on `run_on`
/// (or staged when `None`).
fn peer_copy_raw(
    run_on: Option<&Arc<dyn Queue>>,
    dst_q: &Arc<dyn Queue>,
    dst: u64,
    src_q: &Arc<dyn Queue>,
    src: u64,
    nbytes: usize,
) {
    let device = dst_q.device();
    let peer = device.peer().expect("CUDA devices have the peer capability");
    // SAFETY: test code: both are live device allocations of at least `nbytes`.
    let (dst, src) = unsafe { (WriteBytes::from_raw(dst, nbytes as u64), ReadBytes::from_raw(src, nbytes as u64)) };
    match run_on {
        Some(q) => peer.copy_direct(q.as_ref(), dst_q.as_ref(), dst, src_q.as_ref(), src).unwrap(),
        None => peer.copy_staged(dst_q.as_ref(), dst, src_q.as_ref(), src).unwrap(),
    }
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_a_device_and_itself_have_no_peer_access_as_cuda_says() {
    let (dev, _, _) = setup();
    let peer = dev.peer().unwrap();
    use crate::runtime::peer::PeerQuery;
    assert!(
        !peer.can_access_peer(dev.as_ref(), dev.as_ref(), PeerQuery::AccessSupported).unwrap(),
        "cuDeviceCanAccessPeer(d, d)"
    );
    assert!(!crate::memory::peer::can_access_peer(dev.as_ref(), dev.as_ref(), PeerQuery::AccessSupported).unwrap());
    let e = crate::memory::peer::enable_peer_access(dev.as_ref(), dev.as_ref()).unwrap_err();
    assert_eq!(e.code(), "ERR_PEER_ACCESS_UNSUPPORTED");
    // What the driver itself does with the pair (never reached through the model).
    let cuda = dev.as_any().downcast_ref::<CudaDevice>().unwrap();
    let primary = cuda.primary_context().unwrap();
    let refused = primary.current().unwrap().ctx_enable_peer_access(primary.handle);
    eprintln!("cuCtxEnablePeerAccess(own context): {refused:?}");
    assert!(refused.is_err(), "the driver refuses access from a context to itself");
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_two_contexts_of_one_device_copy_with_cumemcpypeer() {
    let (dev, ctx, q) = setup();
    let other = dev.create_context().unwrap();
    let oq = other.create_queue(&dev).unwrap();
    for nbytes in [1, 4097, 3 * MIB + 1] {
        let a = device_with_pattern(&q, nbytes);
        let b = oq.allocate(UsmKind::Device, nbytes as u64, 0).unwrap();
        peer_copy_raw(Some(&oq), &oq, b, &q, a, nbytes);
        assert_eq!(read_device(&oq, b, nbytes), pattern(nbytes), "{nbytes} B into the created context");
        let c = q.allocate(UsmKind::Device, nbytes as u64, 0).unwrap();
        peer_copy_raw(None, &q, c, &oq, b, nbytes);
        assert_eq!(read_device(&q, c, nbytes), pattern(nbytes), "{nbytes} B back, staged call");
        for (context, p) in [(&ctx, a), (&other, b), (&ctx, c)] {
            free_raw(context.as_ref(), p).unwrap();
        }
    }
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_two_devices_peer_access_and_copies_both_ways() {
    let devices = provider().devices();
    if devices.len() < 2 {
        eprintln!(
            "gpu_two_devices_peer_access_and_copies_both_ways: needs 2 CUDA devices, found {}: skipped",
            devices.len()
        );
        return;
    }
    use crate::memory::peer::{can_access_peer, disable_peer_access, enable_peer_access};
    use crate::runtime::peer::PeerQuery;
    let (d0, d1) = (&devices[0], &devices[1]);
    let queues: Vec<Arc<dyn Queue>> =
        [d0, d1].iter().map(|d| d.default_context().unwrap().create_queue(d).unwrap()).collect();
    let can = can_access_peer(d0.as_ref(), d1.as_ref(), PeerQuery::AccessSupported).unwrap();
    eprintln!("cuda:gpu:0 -> cuda:gpu:1 peer access possible: {can}");
    let nbytes = 64 * MIB + 3;
    for enabled in [false, true] {
        if enabled {
            if !can {
                break;
            }
            enable_peer_access(d0.as_ref(), d1.as_ref()).unwrap();
            enable_peer_access(d0.as_ref(), d1.as_ref()).unwrap();
            assert!(d0.peer().unwrap().peer_access_enabled(d0.as_ref(), d1.as_ref()));
        }
        let a = device_with_pattern(&queues[0], nbytes);
        let b = queues[1].allocate(UsmKind::Device, nbytes as u64, 0).unwrap();
        // 0 -> 1 run on GPU 0 (it reaches GPU 1 when enabled), then 1 -> 0 staged.
        peer_copy_raw(Some(&queues[0]), &queues[1], b, &queues[0], a, nbytes);
        assert_eq!(read_device(&queues[1], b, nbytes), pattern(nbytes), "0 -> 1, enabled {enabled}");
        let c = queues[0].allocate(UsmKind::Device, nbytes as u64, 0).unwrap();
        peer_copy_raw(None, &queues[0], c, &queues[1], b, nbytes);
        assert_eq!(read_device(&queues[0], c, nbytes), pattern(nbytes), "1 -> 0, enabled {enabled}");
        free_raw(queues[0].context().as_ref(), a).unwrap();
        free_raw(queues[0].context().as_ref(), c).unwrap();
        free_raw(queues[1].context().as_ref(), b).unwrap();
    }
    if can {
        disable_peer_access(d0.as_ref(), d1.as_ref()).unwrap();
        disable_peer_access(d0.as_ref(), d1.as_ref()).unwrap();
        assert!(!d0.peer().unwrap().peer_access_enabled(d0.as_ref(), d1.as_ref()));
    }
}

#[test]
#[ignore = "needs CUDA"]
fn gpu_copies_between_two_contexts_of_one_device_take_the_route_the_model_gives() {
    use crate::memory::peer::{copy_across, Route, Side};
    use crate::memory::registration::HostCopies;
    let (dev, ctx, q) = setup();
    let other = dev.create_context().unwrap();
    let oq = other.create_queue(&dev).unwrap();
    let nbytes = 5 * MIB + 3;
    let side = |queue, kind| Side { queue, kind };
    let a = device_with_pattern(&q, nbytes);
    let b = oq.allocate(UsmKind::Device, nbytes as u64, 0).unwrap();
    let h = oq.allocate(UsmKind::Host, nbytes as u64, 0).unwrap();
    // SAFETY: test code: all three are live allocations of `nbytes`.
    let (into_b, into_h, from_a) = unsafe {
        (
            WriteBytes::from_raw(b, nbytes as u64),
            WriteBytes::from_raw(h, nbytes as u64),
            ReadBytes::from_raw(a, nbytes as u64),
        )
    };
    let device = UsmKind::Device;
    let route = copy_across(HostCopies::leaked(), side(&oq, device), into_b, side(&q, device), from_a).unwrap();
    assert_eq!(route, Route::DirectOnDestination, "one device: cuMemcpyPeerAsync on the destination's stream");
    assert_eq!(read_device(&oq, b, nbytes), pattern(nbytes));
    let route = copy_across(HostCopies::leaked(), side(&oq, UsmKind::Host), into_h, side(&q, device), from_a).unwrap();
    assert_eq!(route, Route::HostStaged, "host memory of the other context: through our host memory");
    assert_eq!(read_device(&oq, h, nbytes), pattern(nbytes));
    free_raw(ctx.as_ref(), a).unwrap();
    free_raw(other.as_ref(), b).unwrap();
    free_raw(other.as_ref(), h).unwrap();
}
