//! A fake provider for tests: counts allocations and frees, catches double frees.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};

use crate::error::{MemoryError, Result};
use crate::runtime::ipc::{Ipc, Mapped};
use crate::runtime::peer::{PeerAccess, PeerQuery};
use crate::runtime::registration::{HostRegistration, RegisterOutcome};
use crate::runtime::UsmKind;
use crate::runtime::{Address, Context, Device, DeviceInfo, DeviceType, Queue, ReadBytes, WriteBytes};

/// A device that only describes itself: it makes no contexts (tests make `FakeContext`s).
pub struct FakeDevice {
    info: DeviceInfo,
    /// The fake peer runtime, for devices made by [`FakePeers::devices`].
    peers: Option<Arc<FakePeers>>,
    /// Its staging buffers, as a provider that stages copies counts them (tests make and
    /// free them by hand).
    pub staging: crate::runtime::held::Held,
}

impl FakeDevice {
    /// A CPU device of backend `fake` with these memory sizes (what the pool's limits read).
    pub fn new(global_mem_size: u64, max_mem_alloc_size: u64) -> Arc<Self> {
        Self::of(DeviceInfo {
            name: "fake".into(),
            vendor: "test".into(),
            backend: "fake".into(),
            device_type: DeviceType::Cpu,
            driver_version: "0".into(),
            global_mem_size,
            max_mem_alloc_size,
            local_mem_size: 64 << 10,
            aspects: vec![],
        })
    }

    /// A device that reports `info`.
    pub fn of(info: DeviceInfo) -> Arc<Self> {
        Arc::new(FakeDevice { info, peers: None, staging: crate::runtime::held::Held::new() })
    }

    /// A device of `backend` and `device_type`, for the registry's tests.
    pub fn on(backend: &str, device_type: DeviceType) -> Arc<Self> {
        let mut info = Self::new(1 << 30, 1 << 30).info.clone();
        info.backend = backend.into();
        info.device_type = device_type;
        Self::of(info)
    }
}

/// A provider of fixed devices with the properties the registry asks about.
pub struct FakeProvider {
    pub devices: Vec<Arc<FakeDevice>>,
    /// Superseded by an earlier device of this backend.
    pub superseded_by_backend: Option<&'static str>,
    /// What `Provider::applies_device_selector` answers.
    pub applies_device_selector: bool,
}

impl crate::runtime::Provider for FakeProvider {
    fn devices(&self) -> Vec<Arc<dyn Device>> {
        self.devices.iter().map(|d| d.clone() as Arc<dyn Device>).collect()
    }
    fn superseded_by(&self, device: &dyn Device) -> bool {
        self.superseded_by_backend.is_some_and(|backend| device.info().backend == backend)
    }
    fn applies_device_selector(&self) -> bool {
        self.applies_device_selector
    }
}

impl Device for FakeDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn staging(&self) -> Option<&crate::runtime::held::Held> {
        Some(&self.staging)
    }
    fn same_device(&self, other: &dyn Device) -> bool {
        std::ptr::addr_eq(self, other)
    }
    fn default_context(&self) -> Result<Arc<dyn Context>> {
        Err(MemoryError::QueueCreation { message: "fake".into() })
    }
    fn create_context(&self) -> Result<Arc<dyn Context>> {
        Err(MemoryError::QueueCreation { message: "fake".into() })
    }
    fn peer(&self) -> Option<&dyn PeerAccess> {
        self.peers.as_deref().map(|peers| peers as &dyn PeerAccess)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What a fake context saw, and the knobs tests set (capacity, free memory, misalignment).
#[derive(Default)]
pub struct Counts {
    /// Allocations that succeeded.
    pub allocations: u64,
    /// Addresses freed, in order.
    pub frees: Vec<Address>,
    /// Frees of an address that was not live (double or foreign frees).
    pub bad_frees: u64,
    /// Live allocations: address to bytes.
    pub live: BTreeMap<Address, u64>,
    next: u64,
    /// Allocations fail when live bytes would exceed this.
    pub capacity: Option<u64>,
    /// What `Context::free_memory` reports.
    pub free_memory: Option<u64>,
    /// Added to addresses of alignment-0 requests (simulates a runtime that only
    /// aligns to this by default).
    pub misalign: u64,
    /// The context offers host registration.
    pub registers: bool,
    /// Registration calls fail.
    pub fail_registration: bool,
    pub registered: BTreeMap<Address, u64>,
    pub unregistered: Vec<Address>,
    /// `(dst, src)` of each plain `memcpy`.
    pub plain_copies: Vec<(Address, Address)>,
    pub registered_copies: u64,
    /// Whether the context offers the fake IPC capability (`Context::ipc`).
    pub ipc: bool,
    /// The kind of each live allocation (what `pointer_kind` reports with `ipc`).
    pub kinds: BTreeMap<Address, UsmKind>,
    /// IPC calls: handles made, mappings opened (address -> size), opens, closes, and
    /// closes of an address that was not open.
    pub exports: u64,
    pub mapped: BTreeMap<Address, u64>,
    pub opens: u64,
    pub closes: u64,
    pub bad_closes: u64,
    /// The queue's asynchronous operations, in submission order (`Submissions`).
    pub ops: Vec<FakeOp>,
}

/// An asynchronous operation a fake queue was given (it moves no bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeOp {
    Fill { dst: Address, pattern: Vec<u8>, count: u64, deps: usize },
    Barrier { deps: usize },
}

/// Shared between wrappers of one fake context (like the SYCL provider's `Arc`s).
pub struct Shared {
    /// Identifies the context: `same_context` compares ids.
    pub id: u64,
    pub counts: Mutex<Counts>,
}

/// One `Arc` wrapper of a fake context; wrappers with the same `Shared` are the same
/// context.
pub struct FakeContext {
    me: Weak<FakeContext>,
    pub device: Arc<FakeDevice>,
    pub shared: Arc<Shared>,
}

impl FakeContext {
    /// A new context; its addresses start at `id << 40`, so different contexts' addresses
    /// do not overlap.
    pub fn new(id: u64, device: Arc<FakeDevice>) -> Arc<Self> {
        let shared = Arc::new(Shared { id, counts: Mutex::new(Counts { next: id << 40, ..Counts::default() }) });
        Self::wrap(device, shared)
    }

    /// A context with the fake IPC capability: its handles name an allocation of a fake
    /// context (as another process's would), which any context with IPC on the same
    /// device can open.
    pub fn with_ipc(id: u64, device: Arc<FakeDevice>) -> Arc<Self> {
        let context = Self::new(id, device);
        context.counts().ipc = true;
        IPC_CONTEXTS.lock().unwrap().push(Arc::downgrade(&context.shared));
        context
    }

    /// A second `Arc` of the same context.
    pub fn wrap(device: Arc<FakeDevice>, shared: Arc<Shared>) -> Arc<Self> {
        Arc::new_cyclic(|me| FakeContext { me: me.clone(), device, shared })
    }

    /// The context's counts (shared by all its wrappers), locked.
    pub fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.shared.counts.lock().unwrap()
    }

    /// A queue on this wrapper: its allocations go into this context's counts.
    pub fn queue(self: &Arc<Self>) -> Arc<dyn Queue> {
        Arc::new(FakeQueue { context: self.clone() })
    }
}

impl Context for FakeContext {
    fn devices(&self) -> Vec<Arc<dyn Device>> {
        vec![self.device.clone() as Arc<dyn Device>]
    }
    fn same_context(&self, other: &dyn Context) -> bool {
        other.as_any().downcast_ref::<FakeContext>().is_some_and(|o| o.shared.id == self.shared.id)
    }
    fn create_queue(&self, _device: &Arc<dyn Device>) -> Result<Arc<dyn Queue>> {
        Ok(self.me.upgrade().unwrap().queue())
    }
    fn pointer_kind(&self, address: Address) -> UsmKind {
        // Every non-null pointer counts as host memory of this context: enough for
        // consumers' "is it bound to the context" check. A context with IPC knows the
        // kinds of its allocations (exports are of device memory only).
        let counts = self.counts();
        if counts.ipc {
            if let Some((&base, &size)) = counts.live.range(..=address).next_back() {
                if address < base + size {
                    return counts.kinds.get(&base).copied().unwrap_or(UsmKind::Host);
                }
            }
        }
        drop(counts);
        if address == 0 {
            UsmKind::Unknown
        } else {
            UsmKind::Host
        }
    }
    fn pointer_device(&self, _ptr: Address) -> Result<Arc<dyn Device>> {
        Ok(self.device.clone())
    }
    fn address_range(&self, _ptr: Address) -> Option<(Address, u64)> {
        None
    }
    fn free_memory(&self) -> Option<u64> {
        self.counts().free_memory
    }
    fn host_registration(&self) -> Option<&dyn HostRegistration> {
        self.counts().registers.then_some(self as &dyn HostRegistration)
    }
    fn ipc(&self) -> Option<&dyn Ipc> {
        self.counts().ipc.then_some(self as &dyn Ipc)
    }
    unsafe fn free(&self, address: Address) -> Result<()> {
        let mut counts = self.counts();
        if counts.live.remove(&address).is_none() {
            counts.bad_frees += 1;
            return Err(MemoryError::ForeignPointer { message: format!("{address:#x}") });
        }
        counts.frees.push(address);
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl HostRegistration for FakeContext {
    unsafe fn register(&self, address: Address, len: u64) -> Result<RegisterOutcome> {
        let mut counts = self.counts();
        if counts.fail_registration {
            return Err(MemoryError::CudaDriver { message: "fake registration failure".into() });
        }
        counts.registered.insert(address, len);
        Ok(RegisterOutcome::Registered)
    }
    unsafe fn unregister(&self, address: Address) -> Result<()> {
        let mut counts = self.counts();
        if counts.registered.remove(&address).is_none() {
            counts.bad_frees += 1;
            return Err(MemoryError::ForeignPointer { message: format!("{address:#x} is not registered") });
        }
        counts.unregistered.push(address);
        Ok(())
    }
}

/// A queue whose copies and fills move no bytes (a copy still checks lengths);
/// allocations just hand out addresses.
pub struct FakeQueue {
    pub context: Arc<FakeContext>,
}

impl Queue for FakeQueue {
    fn context(&self) -> Arc<dyn Context> {
        self.context.clone()
    }
    fn device(&self) -> Arc<dyn Device> {
        self.context.device.clone()
    }
    fn allocate(&self, kind: UsmKind, nbytes: u64, alignment: u64) -> Result<Address> {
        let mut counts = self.context.counts();
        let live: u64 = counts.live.values().sum();
        if counts.capacity.is_some_and(|cap| live + nbytes > cap) {
            return Err(MemoryError::UsmAllocation { message: format!("out of memory: {nbytes} bytes") });
        }
        let base = counts.next;
        counts.next += nbytes.div_ceil(1 << 16) * (1 << 16) + (1 << 16);
        let address = if alignment == 0 { base + counts.misalign } else { base };
        counts.allocations += 1;
        counts.live.insert(address, nbytes);
        counts.kinds.insert(address, kind);
        Ok(address)
    }
    fn memcpy(&self, dst: WriteBytes<'_>, src: ReadBytes<'_>) -> Result<()> {
        self.context.counts().plain_copies.push((dst.address(), src.address()));
        src.copy_len(&dst).map(|_| ())
    }
    fn memcpy_registered(&self, dst: WriteBytes<'_>, src: ReadBytes<'_>) -> Result<()> {
        self.context.counts().registered_copies += 1;
        src.copy_len(&dst).map(|_| ())
    }
    fn memset(&self, _dst: WriteBytes<'_>, _value: u8) -> Result<()> {
        Ok(())
    }
    fn wait(&self) -> Result<()> {
        Ok(())
    }
    fn submissions(&self) -> Option<&dyn crate::runtime::program::Submissions> {
        Some(self)
    }
}

/// The event of a fake operation: done at once.
pub struct FakeEvent;

impl crate::runtime::program::Event for FakeEvent {
    fn wait(&self) -> Result<()> {
        Ok(())
    }
    fn status(&self) -> Result<crate::runtime::program::EventStatus> {
        Ok(crate::runtime::program::EventStatus::Complete)
    }
    fn profile(&self) -> Result<crate::runtime::program::Profile> {
        Err(MemoryError::ProfilingNotEnabled)
    }
    fn on_complete(&self, done: crate::runtime::program::Completion) -> Result<()> {
        done(Ok(()));
        Ok(())
    }
}

/// Records fills and barriers (`Counts::ops`); runs no kernels and copies nothing.
impl crate::runtime::program::Submissions for FakeQueue {
    unsafe fn submit(
        &self,
        _kernel: &dyn crate::runtime::program::Kernel,
        _args: &[crate::runtime::program::LaunchArg],
        _range: &crate::runtime::program::NdRange,
        _deps: &[Arc<dyn crate::runtime::program::Event>],
    ) -> Result<Arc<dyn crate::runtime::program::Event>> {
        Err(MemoryError::ProgramsUnsupported { message: "the fake runtime runs no kernels".into() })
    }
    unsafe fn memcpy_async(
        &self,
        _dst: Address,
        _src: Address,
        _nbytes: u64,
        _deps: &[Arc<dyn crate::runtime::program::Event>],
    ) -> Result<Arc<dyn crate::runtime::program::Event>> {
        Err(MemoryError::ProgramsUnsupported { message: "the fake runtime copies nothing asynchronously".into() })
    }
    unsafe fn fill_async(
        &self,
        dst: Address,
        pattern: &[u8],
        count: u64,
        deps: &[Arc<dyn crate::runtime::program::Event>],
    ) -> Result<Arc<dyn crate::runtime::program::Event>> {
        self.context.counts().ops.push(FakeOp::Fill { dst, pattern: pattern.to_vec(), count, deps: deps.len() });
        Ok(Arc::new(FakeEvent))
    }
    fn barrier(
        &self,
        deps: &[Arc<dyn crate::runtime::program::Event>],
    ) -> Result<Arc<dyn crate::runtime::program::Event>> {
        self.context.counts().ops.push(FakeOp::Barrier { deps: deps.len() });
        Ok(Arc::new(FakeEvent))
    }
}

/// The runtime calls by raw address, for the providers' own tests, which pass addresses
/// they have just allocated (or deliberately bad ones, to see them refused).
pub trait RawCalls {
    /// `Queue::memcpy` over `nbytes` at raw addresses.
    fn memcpy_raw(&self, dst: Address, src: Address, nbytes: u64) -> Result<()>;
    /// `Queue::memset` over `nbytes` at a raw address.
    fn memset_raw(&self, dst: Address, value: u8, nbytes: u64) -> Result<()>;
}

impl<Q: Queue + ?Sized> RawCalls for Q {
    fn memcpy_raw(&self, dst: Address, src: Address, nbytes: u64) -> Result<()> {
        // SAFETY: test code; see the trait's documentation.
        let (dst, src) = unsafe { (WriteBytes::from_raw(dst, nbytes), ReadBytes::from_raw(src, nbytes)) };
        self.memcpy(dst, src)
    }
    fn memset_raw(&self, dst: Address, value: u8, nbytes: u64) -> Result<()> {
        // SAFETY: test code; see the trait's documentation.
        self.memset(unsafe { WriteBytes::from_raw(dst, nbytes) }, value)
    }
}

/// `Context::free` for the providers' tests (see [`RawCalls`]).
pub fn free_raw(context: &(impl Context + ?Sized), address: Address) -> Result<()> {
    // SAFETY: test code; see [`RawCalls`].
    unsafe { context.free(address) }
}

/// The fake contexts with IPC, which fake handles name (a stand-in for the machine's
/// other processes).
static IPC_CONTEXTS: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// Bytes of a fake IPC handle: exporter context id, address, device, then zeros.
pub const FAKE_HANDLE_LEN: usize = 64;
/// Where fake mappings start (each its own 4 GiB).
const FAKE_MAPPING_BASE: Address = 0x7000_0000_0000;

fn fake_handle(context: u64, address: Address, device: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; FAKE_HANDLE_LEN];
    bytes[..8].copy_from_slice(&context.to_le_bytes());
    bytes[8..16].copy_from_slice(&address.to_le_bytes());
    bytes[16..24].copy_from_slice(&device.to_le_bytes());
    bytes
}

fn word(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn device_tag(device: &dyn Device) -> u64 {
    std::ptr::from_ref(device).cast::<()>() as u64
}

impl Ipc for FakeContext {
    fn handle_len(&self) -> usize {
        FAKE_HANDLE_LEN
    }
    fn export(&self, address: Address) -> Result<Vec<u8>> {
        let mut counts = self.counts();
        if !counts.live.contains_key(&address) {
            return Err(MemoryError::ForeignPointer {
                message: format!("{address:#x} is no allocation of this context"),
            });
        }
        counts.exports += 1;
        Ok(fake_handle(self.shared.id, address, device_tag(self.device.as_ref())))
    }
    fn open(&self, handle: &[u8], device: &dyn Device) -> Result<Mapped> {
        let refused = |why: &str| MemoryError::IpcHandleInvalid {
            message: format!("the fake runtime refused the handle: {why}"),
        };
        if handle.len() != FAKE_HANDLE_LEN || handle[24..].iter().any(|&b| b != 0) {
            return Err(refused("not a handle"));
        }
        if word(handle, 16) != device_tag(device) || device_tag(device) != device_tag(self.device.as_ref()) {
            return Err(refused("a handle of another device, without peer access"));
        }
        let (id, address) = (word(handle, 0), word(handle, 8));
        let exporter = IPC_CONTEXTS.lock().unwrap().iter().filter_map(Weak::upgrade).find(|s| s.id == id);
        let size = exporter.and_then(|s| s.counts.lock().unwrap().live.get(&address).copied());
        let Some(size) = size else { return Err(refused("its memory was freed")) };
        let mut counts = self.counts();
        counts.opens += 1;
        let mapping = FAKE_MAPPING_BASE + (counts.opens << 32);
        counts.mapped.insert(mapping, size);
        Ok(Mapped { address: mapping, size })
    }
    unsafe fn close(&self, address: Address) -> Result<()> {
        let mut counts = self.counts();
        if counts.mapped.remove(&address).is_none() {
            counts.bad_closes += 1;
            return Err(MemoryError::ForeignPointer { message: format!("{address:#x} is not mapped") });
        }
        counts.closes += 1;
        Ok(())
    }
}

/// A fake runtime of several devices with peer access (what a host of several GPUs has):
/// which pairs may have it, which are enabled, and each copy between two of its contexts.
#[derive(Default)]
pub struct FakePeers {
    /// The devices' tags (see `device_tag`), in order.
    tags: Mutex<Vec<u64>>,
    /// `(device, peer)` indices whose access may be enabled (`cuDeviceCanAccessPeer`).
    pub possible: Mutex<Vec<(usize, usize)>>,
    /// `(device, peer)` indices enabled now.
    pub enabled: Mutex<Vec<(usize, usize)>>,
    /// Each copy: `"direct"` with the index of the device whose queue ran it, or
    /// `"staged"` with the destination's.
    pub copies: Mutex<Vec<(&'static str, usize)>>,
    /// Enable and disable calls that reached the runtime.
    pub calls: Mutex<Vec<(&'static str, usize, usize)>>,
}

impl FakePeers {
    /// `count` GPU devices of `backend` sharing one fake peer runtime, where every
    /// distinct pair may have peer access.
    pub fn devices(count: usize, backend: &str) -> (Arc<FakePeers>, Vec<Arc<FakeDevice>>) {
        let peers = Arc::new(FakePeers::default());
        let devices: Vec<Arc<FakeDevice>> = (0..count)
            .map(|i| {
                let mut info = FakeDevice::on(backend, DeviceType::Gpu).info.clone();
                info.name = format!("fake gpu {i}");
                Arc::new(FakeDevice { info, peers: Some(peers.clone()), staging: crate::runtime::held::Held::new() })
            })
            .collect();
        *peers.tags.lock().unwrap() = devices.iter().map(|d| device_tag(d.as_ref())).collect();
        *peers.possible.lock().unwrap() =
            (0..count).flat_map(|a| (0..count).filter(move |&b| b != a).map(move |b| (a, b))).collect();
        (peers, devices)
    }

    /// The index of one of this runtime's devices; an error for any other device.
    fn index(&self, device: &dyn Device) -> Result<usize> {
        let tag = device_tag(device);
        self.tags.lock().unwrap().iter().position(|&t| t == tag).ok_or_else(|| MemoryError::PeerAccessUnavailable {
            message: format!("'{}' is not a device of this fake runtime", device.info().name),
        })
    }

    fn pair(&self, device: &dyn Device, peer: &dyn Device) -> Result<(usize, usize)> {
        Ok((self.index(device)?, self.index(peer)?))
    }

    /// A copy (which moves no bytes, as `FakeQueue`'s) on the device of `runner`.
    fn record(&self, route: &'static str, runner: &dyn Queue, dst: WriteBytes<'_>, src: ReadBytes<'_>) -> Result<()> {
        let runner = self.index(runner.device().as_ref())?;
        src.copy_len(&dst)?;
        self.copies.lock().unwrap().push((route, runner));
        Ok(())
    }
}

impl PeerAccess for FakePeers {
    fn can_access_peer(&self, device: &dyn Device, peer: &dyn Device, _query: PeerQuery) -> Result<bool> {
        let pair = self.pair(device, peer)?;
        Ok(self.possible.lock().unwrap().contains(&pair))
    }
    fn enable_peer_access(&self, device: &dyn Device, peer: &dyn Device) -> Result<()> {
        let (a, b) = self.pair(device, peer)?;
        self.calls.lock().unwrap().push(("enable", a, b));
        let mut enabled = self.enabled.lock().unwrap();
        if !enabled.contains(&(a, b)) {
            enabled.push((a, b));
        }
        Ok(())
    }
    fn disable_peer_access(&self, device: &dyn Device, peer: &dyn Device) -> Result<()> {
        let pair = self.pair(device, peer)?;
        self.calls.lock().unwrap().push(("disable", pair.0, pair.1));
        self.enabled.lock().unwrap().retain(|&p| p != pair);
        Ok(())
    }
    fn peer_access_enabled(&self, device: &dyn Device, peer: &dyn Device) -> bool {
        self.pair(device, peer).is_ok_and(|pair| self.enabled.lock().unwrap().contains(&pair))
    }
    fn copy_direct(
        &self,
        run_on: &dyn Queue,
        _dst_queue: &dyn Queue,
        dst: WriteBytes<'_>,
        _src_queue: &dyn Queue,
        src: ReadBytes<'_>,
    ) -> Result<()> {
        self.record("direct", run_on, dst, src)
    }
    fn copy_staged(
        &self,
        dst_queue: &dyn Queue,
        dst: WriteBytes<'_>,
        _src_queue: &dyn Queue,
        src: ReadBytes<'_>,
    ) -> Result<()> {
        self.record("staged", dst_queue, dst, src)
    }
}
