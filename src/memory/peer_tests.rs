//! The rules of peer access and of copies between two devices, over the fake provider's
//! several devices (`FakePeers`), with no GPU.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use super::*;
use crate::memory::pool::test_pool;
use crate::memory::registration::HostCopies;
use crate::memory::usm::UsmMemory;
use crate::runtime::fake::{FakeContext, FakeDevice, FakePeers};
use crate::runtime::DeviceType;

const MIB: u64 = 1 << 20;

/// Two fake CUDA-like GPUs of one runtime, each with a context of its own.
struct TwoGpus {
    peers: Arc<FakePeers>,
    devices: Vec<Arc<FakeDevice>>,
    contexts: Vec<Arc<FakeContext>>,
    queues: Vec<Arc<dyn Queue>>,
}

fn two_gpus(first_id: u64, backend: &str) -> TwoGpus {
    let (peers, devices) = FakePeers::devices(2, backend);
    let contexts: Vec<Arc<FakeContext>> =
        devices.iter().enumerate().map(|(i, d)| FakeContext::new(first_id + i as u64, d.clone())).collect();
    let queues = contexts.iter().map(FakeContext::queue).collect();
    TwoGpus { peers, devices, contexts, queues }
}

impl TwoGpus {
    fn device(&self, i: usize) -> &dyn Device {
        self.devices[i].as_ref()
    }
    fn memory(&self, i: usize, kind: UsmKind) -> UsmMemory {
        UsmMemory::allocate(test_pool(), &self.queues[i], kind, MIB, 0).unwrap()
    }
    fn copies(&self) -> Vec<(&'static str, usize)> {
        std::mem::take(&mut *self.peers.copies.lock().unwrap())
    }
    /// Runtime copies either context made itself (the host-staged route's two halves).
    fn plain_copies(&self) -> usize {
        self.contexts.iter().map(|c| c.counts().plain_copies.len()).sum()
    }
}

#[test]
fn without_peer_access_a_copy_between_two_devices_is_staged_by_the_runtime_never_through_our_host_memory() {
    let gpus = two_gpus(4201, "cuda");
    let (on0, on1) = (gpus.memory(0, UsmKind::Device), gpus.memory(1, UsmKind::Device));
    on1.copy_from_device(HostCopies::leaked(), &on0).unwrap();
    on0.copy_from_device(HostCopies::leaked(), &on1).unwrap();
    assert_eq!(gpus.copies(), [("staged", 1), ("staged", 0)], "pinned staging, on the destination's queue");
    assert_eq!(gpus.plain_copies(), 0, "no copy went through host memory of ours");
    assert_eq!(route(on1.side(), on0.side()), Route::PinnedStaged);
}

#[test]
fn with_peer_access_a_copy_goes_device_to_device_on_the_queue_of_the_side_that_reaches_the_other() {
    let gpus = two_gpus(4211, "cuda");
    let (on0, on1) = (gpus.memory(0, UsmKind::Device), gpus.memory(1, UsmKind::Device));
    // Device 1 may access device 0's memory; not the other way.
    enable_peer_access(gpus.device(1), gpus.device(0)).unwrap();
    assert_eq!(route(on1.side(), on0.side()), Route::DirectOnDestination);
    assert_eq!(route(on0.side(), on1.side()), Route::DirectOnSource);
    on1.copy_from_device(HostCopies::leaked(), &on0).unwrap(); // 0 -> 1: device 1 pulls
    on0.copy_from_device(HostCopies::leaked(), &on1).unwrap(); // 1 -> 0: device 1 pushes
    assert_eq!(gpus.copies(), [("direct", 1), ("direct", 1)]);
    assert_eq!(gpus.plain_copies(), 0);

    // Both ways enabled: each copy runs on its destination's queue.
    enable_peer_access(gpus.device(0), gpus.device(1)).unwrap();
    on0.copy_from_device(HostCopies::leaked(), &on1).unwrap();
    assert_eq!(gpus.copies(), [("direct", 0)]);

    // Disabled again: back to staging.
    disable_peer_access(gpus.device(1), gpus.device(0)).unwrap();
    disable_peer_access(gpus.device(0), gpus.device(1)).unwrap();
    on1.copy_from_device(HostCopies::leaked(), &on0).unwrap();
    assert_eq!(gpus.copies(), [("staged", 1)]);
}

#[test]
fn two_contexts_of_one_device_copy_directly_without_peer_access() {
    let gpus = two_gpus(4221, "cuda");
    let other = FakeContext::new(4229, gpus.devices[0].clone());
    let queue = other.queue();
    let a = gpus.memory(0, UsmKind::Device);
    let b = UsmMemory::allocate(test_pool(), &queue, UsmKind::Device, MIB, 0).unwrap();
    b.copy_from_device(HostCopies::leaked(), &a).unwrap();
    assert_eq!(gpus.copies(), [("direct", 0)]);
}

#[test]
fn memory_that_is_not_device_memory_or_devices_without_the_capability_are_staged_through_the_host_as_before() {
    let gpus = two_gpus(4231, "cuda");
    let (shared0, device1) = (gpus.memory(0, UsmKind::Shared), gpus.memory(1, UsmKind::Device));
    assert_eq!(route(device1.side(), shared0.side()), Route::HostStaged);
    device1.copy_from_device(HostCopies::leaked(), &shared0).unwrap();
    assert!(gpus.copies().is_empty());
    assert_eq!(gpus.plain_copies(), 2, "one runtime copy to the host, one from it");

    // Two devices of a runtime without the capability (SYCL Level Zero here).
    let plain: Vec<Arc<dyn Queue>> =
        (0..2).map(|i| FakeContext::new(4235 + i, FakeDevice::on("level_zero", DeviceType::Gpu)).queue()).collect();
    let a = UsmMemory::allocate(test_pool(), &plain[0], UsmKind::Device, MIB, 0).unwrap();
    let b = UsmMemory::allocate(test_pool(), &plain[1], UsmKind::Device, MIB, 0).unwrap();
    assert_eq!(route(b.side(), a.side()), Route::HostStaged);
    b.copy_from_device(HostCopies::leaked(), &a).unwrap();
}

#[test]
fn a_copy_between_two_devices_still_checks_sizes_first() {
    let gpus = two_gpus(4241, "cuda");
    let small = UsmMemory::allocate(test_pool(), &gpus.queues[1], UsmKind::Device, MIB / 2, 0).unwrap();
    let big = gpus.memory(0, UsmKind::Device);
    assert_eq!(small.copy_from_device(HostCopies::leaked(), &big).unwrap_err().code(), "ERR_SOURCE_TOO_LARGE");
    assert!(gpus.copies().is_empty(), "refused before any copy");
    big.copy_from_device(HostCopies::leaked(), &small).unwrap();
    assert_eq!(gpus.copies(), [("staged", 0)]);
}

#[test]
fn can_access_peer_is_false_for_a_device_and_itself_and_for_pairs_without_peer_access_and_asks_nothing_then() {
    let gpus = two_gpus(4251, "cuda");
    let query = PeerQuery::AccessSupported;
    assert!(can_access_peer(gpus.device(0), gpus.device(1), query).unwrap());
    assert!(can_access_peer(gpus.device(0), gpus.device(1), PeerQuery::AtomicsSupported).unwrap());
    assert!(!can_access_peer(gpus.device(0), gpus.device(0), query).unwrap(), "a device and itself");
    gpus.peers.possible.lock().unwrap().clear();
    assert!(!can_access_peer(gpus.device(0), gpus.device(1), query).unwrap(), "the runtime says no");

    let opencl = two_gpus(4255, "opencl");
    assert!(!can_access_peer(opencl.device(0), opencl.device(1), query).unwrap());
    let cpu = FakeDevice::on("opencl", DeviceType::Cpu);
    assert!(!can_access_peer(gpus.device(0), cpu.as_ref(), query).unwrap(), "two backends");
    let level_zero = FakeDevice::on("level_zero", DeviceType::Gpu);
    let other_level_zero = FakeDevice::on("level_zero", DeviceType::Gpu);
    assert!(!can_access_peer(level_zero.as_ref(), other_level_zero.as_ref(), query).unwrap(), "no capability");
    assert!(opencl.peers.calls.lock().unwrap().is_empty());
}

#[test]
fn enable_and_disable_refuse_what_dpctl_refuses_with_its_messages_and_never_reach_the_runtime_then() {
    let opencl = two_gpus(4261, "opencl");
    let e = enable_peer_access(opencl.device(0), opencl.device(1)).unwrap_err();
    assert_eq!(e.code(), "ERR_PEER_ACCESS_UNSUPPORTED");
    assert_eq!(e.to_string(), "Peer access not supported for backend opencl");
    let e = disable_peer_access(opencl.device(0), opencl.device(1)).unwrap_err();
    assert_eq!(e.to_string(), "Peer access not supported for backend opencl");
    assert!(opencl.peers.calls.lock().unwrap().is_empty(), "OpenCL's runtime is never asked (it aborts)");

    let gpus = two_gpus(4265, "cuda");
    let cpu = FakeDevice::on("opencl", DeviceType::Cpu);
    let e = enable_peer_access(gpus.device(0), cpu.as_ref()).unwrap_err();
    assert_eq!(e.to_string(), "Device with backend cuda cannot peer access device with backend opencl");
    assert_eq!(e.code(), "ERR_PEER_ACCESS_UNSUPPORTED");

    for call in [enable_peer_access, disable_peer_access] {
        let e = call(gpus.device(1), gpus.device(1)).unwrap_err();
        assert_eq!(e.code(), "ERR_PEER_ACCESS_UNSUPPORTED");
        assert!(e.to_string().contains("reaches its own memory without peer access"), "{e}");
    }

    let level_zero = FakeDevice::on("level_zero", DeviceType::Gpu);
    let e =
        enable_peer_access(level_zero.as_ref(), FakeDevice::on("level_zero", DeviceType::Gpu).as_ref()).unwrap_err();
    assert_eq!(e.code(), "ERR_PEER_ACCESS_UNSUPPORTED");
    assert!(e.to_string().contains("offers no peer access here"), "{e}");

    gpus.peers.possible.lock().unwrap().retain(|&pair| pair != (0, 1));
    let e = enable_peer_access(gpus.device(0), gpus.device(1)).unwrap_err();
    assert_eq!(e.code(), "ERR_PEER_ACCESS_UNSUPPORTED");
    assert!(e.to_string().contains("canAccessPeer() is false"), "{e}");
    assert!(gpus.peers.calls.lock().unwrap().is_empty(), "nothing reached the runtime");
}

#[test]
fn enable_and_disable_are_idempotent_and_directional() {
    let gpus = two_gpus(4271, "cuda");
    let enabled = |a: usize, b: usize| gpus.peers.peer_access_enabled(gpus.device(a), gpus.device(b));
    disable_peer_access(gpus.device(0), gpus.device(1)).unwrap();
    enable_peer_access(gpus.device(0), gpus.device(1)).unwrap();
    enable_peer_access(gpus.device(0), gpus.device(1)).unwrap();
    assert!(enabled(0, 1) && !enabled(1, 0), "access is from one device to the other");
    disable_peer_access(gpus.device(0), gpus.device(1)).unwrap();
    disable_peer_access(gpus.device(0), gpus.device(1)).unwrap();
    assert!(!enabled(0, 1));
    assert_eq!(gpus.peers.calls.lock().unwrap().len(), 5);
}

#[test]
fn the_pools_figures_by_device_keep_each_devices_blocks_and_add_up_to_its_totals() {
    use crate::memory::pool::{Limits, Pool};
    use crate::memory::stats::{kind_slot, KindStats};
    use crate::runtime::Context;
    let gpus = two_gpus(4281, "cuda");
    let pool = Pool::new(true, Limits::default());
    let context = |i: usize| -> Arc<dyn Context> { gpus.contexts[i].clone() };
    let take = |i: usize, kind: UsmKind, n: u64| pool.acquire_observed(&gpus.queues[i], kind, n, 0, None).unwrap();
    let give =
        |i: usize, kind: UsmKind, n: u64, (block, origin)| pool.release_observed(&context(i), kind, block, n, origin);
    let figures = |i: usize, kind: UsmKind| {
        let device = pool.sink().stats_of(gpus.device(i));
        device.kinds[kind_slot(kind).unwrap()].pool_figures()
    };
    for kind in [UsmKind::Device, UsmKind::Host, UsmKind::Shared] {
        // GPU 1: allocated, freed into its cache, allocated again from it; GPU 0: its own
        // two blocks, one freed into its cache.
        give(1, kind, MIB, take(1, kind, MIB));
        let kept1 = take(1, kind, MIB);
        let (kept0, freed0) = (take(0, kind, 2 * MIB), take(0, kind, MIB));
        give(0, kind, MIB, freed0);
        let (on0, on1) = (figures(0, kind), figures(1, kind));
        assert_eq!(on1, KindStats { hits: 1, misses: 1, in_use_bytes: MIB, ..Default::default() }, "{kind:?}");
        assert_eq!(
            on0,
            KindStats { misses: 2, cached_blocks: 1, cached_bytes: MIB, in_use_bytes: 2 * MIB, ..Default::default() },
            "{kind:?}: GPU 0's cache holds its own block, never GPU 1's"
        );
        let total = pool.stats().kind(kind);
        assert_eq!(on0.hits + on1.hits, total.hits, "{kind:?}");
        assert_eq!(on0.misses + on1.misses, total.misses, "{kind:?}");
        assert_eq!(on0.cached_blocks + on1.cached_blocks, total.cached_blocks, "{kind:?}");
        assert_eq!(on0.cached_bytes + on1.cached_bytes, total.cached_bytes, "{kind:?}");
        assert_eq!(on0.in_use_bytes + on1.in_use_bytes, total.in_use_bytes, "{kind:?}");
        give(0, kind, 2 * MIB, kept0);
        give(1, kind, MIB, kept1);
        pool.trim();
        assert_eq!(figures(1, kind).cached_blocks + figures(0, kind).cached_blocks, 0, "{kind:?}: trimmed");
    }
}
