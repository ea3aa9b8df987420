//! CUDA provider: SYCL-style USM devices, contexts and queues through the CUDA driver API.
//!
//! `libcuda` is loaded at run time through cudarc (`dynamic-loading`), never linked, so the
//! addon loads on machines without an NVIDIA driver; there `load()` is an `Err`.
//!
//! Mapping onto the provider traits:
//! - **Device**: a `CUdevice` (ordinal order, as `CUDA_VISIBLE_DEVICES` leaves them).
//! - **Context**: `default_context()` is the device's *primary* context, retained once per
//!   process and shared by every default queue; `create_context()` makes a genuinely
//!   separate context with `cuCtxCreate`, so cross-context rules (a pointer of another
//!   context is `Unknown`, copies between contexts are staged by the caller) hold exactly
//!   as with SYCL.
//! - **Queue**: a non-blocking `CUstream` of its context. Every operation is enqueued on
//!   the stream and then waited for (`cuStreamSynchronize`), so it is complete on return.
//! - **Threads**: calls arrive on any thread. Every driver call that needs a context runs
//!   with the right one pushed (`cuCtxPushCurrent`) and popped afterwards, so the calling
//!   thread's own current context (another addon's, or none) is left as it was.
//! - **Memory**: device `cuMemAlloc`; host `cuMemHostAlloc(DEVICEMAP | PORTABLE)` (pinned,
//!   device-mapped; under unified addressing its device address is the host address);
//!   shared `cuMemAllocManaged(ATTACH_GLOBAL)`, admitted only when it fits in the device's
//!   free memory (`cuMemGetInfo`). Each context keeps a table of what it allocated: it
//!   answers `pointer_kind`/`address_range` for our own pointers without a driver call,
//!   remembers the base of over-allocated (aligned) blocks, and makes `free` of a pointer
//!   it did not allocate (or already freed) an error instead of undefined behaviour.

mod driver;
mod hints;
mod ipc;
mod logic;
mod nvrtc;
mod peer;
mod program;
mod registration;
mod staging;

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use cudarc::driver::sys::{
    CUdevice, CUdevice_attribute, CUmemAttach_flags, CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_PORTABLE,
};

use self::driver::{ContextHandle, CurrentContext, Driver, Stream};
use self::logic::{
    admit_managed, align_up, allocation_failure, base_alignment, classify_pointer, format_driver_version, padded_plan,
    plan_allocation,
};
use self::staging::{Direction, Stager, StagingConfig};
use crate::error::{MemoryError, Result};
use crate::runtime::held::Held;
use crate::runtime::hints::SharedMemoryHints;
use crate::runtime::program::SourceLanguage;
use crate::runtime::ranges::entry_holding;
use crate::runtime::registration::HostRegistration;
use crate::runtime::UsmKind;
use crate::runtime::{
    check_allocation_request, Address, Context, Device, DeviceInfo, DeviceType, Provider, Queue, ReadBytes, WriteBytes,
};
use crate::sync::lock;

static PROVIDER: OnceLock<Result<Arc<CudaProvider>>> = OnceLock::new();
/// Serialises "check free memory, then allocate managed memory" across the process, so two
/// threads cannot both pass the admission check with the same free bytes.
static MANAGED_ADMISSION: Mutex<()> = Mutex::new(());

/// Whether this machine has a CUDA driver library at all.
pub(crate) fn driver_present() -> bool {
    driver::library_present()
}

/// The CUDA provider, loaded once per process: loads libcuda.so.1 at run time,
/// initialises the driver and lists its devices. `Err` (`MemoryError::CudaDriver`, never
/// a panic) when there is no driver, `cuInit` fails or there is no device. The outcome is
/// cached for the life of the process.
pub fn load() -> Result<Arc<dyn Provider>> {
    match PROVIDER.get_or_init(init) {
        Ok(p) => Ok(p.clone()),
        Err(e) => Err(e.clone()),
    }
}

fn init() -> Result<Arc<CudaProvider>> {
    let driver = driver::open()?;
    driver
        .init()
        .map_err(|e| MemoryError::CudaDriver { message: format!("{e} (is an NVIDIA GPU visible to this process?)") })?;
    let version = driver.driver_version()?;
    let count = driver.device_count()?;
    if count <= 0 {
        return Err(MemoryError::CudaDriver { message: "the CUDA driver reports no devices".into() });
    }
    let devices = (0..count).map(|ordinal| CudaDevice::open(driver, ordinal, version)).collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(CudaProvider { devices }))
}

struct CudaProvider {
    devices: Vec<Arc<CudaDevice>>,
}

impl Provider for CudaProvider {
    fn devices(&self) -> Vec<Arc<dyn Device>> {
        self.devices.iter().map(|d| d.clone() as Arc<dyn Device>).collect()
    }

    /// A SYCL runtime with a CUDA backend already lists the NVIDIA devices.
    fn superseded_by(&self, device: &dyn Device) -> bool {
        device.info().backend == "cuda"
    }

    fn trim_spare(&self) -> u64 {
        trim_staging()
    }
}

/// A CUDA device (an ordinal of the driver) and what it says about itself.
pub(crate) struct CudaDevice {
    me: Weak<CudaDevice>,
    driver: &'static Driver,
    ordinal: i32,
    handle: CUdevice,
    info: DeviceInfo,
    /// The primary context, retained on first use and kept for the life of the device
    /// (the device lives as long as the process-wide provider).
    primary: Mutex<Option<Arc<CudaContext>>>,
    /// Ordinals of the devices whose memory this device's primary context was given
    /// access to (`peer.rs`).
    peers_enabled: Mutex<std::collections::BTreeSet<i32>>,
    /// The pinned staging buffers of its contexts (`staging.rs`).
    staging: Arc<Held>,
}

impl CudaDevice {
    fn open(driver: &'static Driver, ordinal: i32, driver_version: i32) -> Result<Arc<Self>> {
        let handle = driver.device(ordinal)?;
        let name = driver.device_name(handle)?;
        let total = driver.device_total_mem(handle)?;
        let attr = |a: CUdevice_attribute| driver.device_attribute(handle, a);
        let cc = (
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        );
        let managed = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)? != 0;
        let map_host = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)? != 0;
        let info = DeviceInfo {
            name,
            vendor: "NVIDIA Corporation".into(),
            backend: "cuda".into(),
            device_type: DeviceType::Gpu,
            driver_version: format_driver_version(driver_version),
            global_mem_size: total as u64,
            max_mem_alloc_size: total as u64,
            local_mem_size: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
                .map_or(0, |v| u64::try_from(v).unwrap_or(0)),
            aspects: logic::aspects(cc, managed, map_host),
        };
        Ok(Arc::new_cyclic(|me| CudaDevice {
            me: me.clone(),
            driver,
            ordinal,
            handle,
            info,
            primary: Mutex::new(None),
            peers_enabled: Mutex::new(std::collections::BTreeSet::new()),
            staging: Arc::new(Held::new()),
        }))
    }

    fn arc(&self) -> Result<Arc<CudaDevice>> {
        self.me
            .upgrade()
            .ok_or_else(|| MemoryError::CudaDriver { message: "CUDA device object already released".into() })
    }

    /// The CUDA device ordinal (for diagnostics; `devices()` lists them in this order).
    #[allow(dead_code)]
    pub(crate) fn ordinal(&self) -> i32 {
        self.ordinal
    }
}

impl Device for CudaDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn can_compile(&self, language: SourceLanguage) -> bool {
        match language {
            SourceLanguage::Ptx => true,
            // Through NVRTC, where one this driver can load PTX of is found.
            SourceLanguage::CudaC => self
                .driver
                .driver_version()
                .is_ok_and(|version| nvrtc::load(Some((version / 1000, (version % 1000) / 10))).is_ok()),
            SourceLanguage::OpenClC | SourceLanguage::SpirV | SourceLanguage::Sycl => false,
        }
    }
    fn staging(&self) -> Option<&Held> {
        Some(&self.staging)
    }

    fn same_device(&self, other: &dyn Device) -> bool {
        other.as_any().downcast_ref::<CudaDevice>().is_some_and(|o| o.ordinal == self.ordinal)
    }

    fn default_context(&self) -> Result<Arc<dyn Context>> {
        Ok(self.primary_context()?)
    }

    fn create_context(&self) -> Result<Arc<dyn Context>> {
        let device = self.arc()?;
        let handle = self.driver.ctx_create(self.handle)?;
        Ok(CudaContext::new(self.driver, device, handle, ContextOwnership::Created))
    }

    fn peer(&self) -> Option<&dyn crate::runtime::peer::PeerAccess> {
        Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl CudaDevice {
    /// The primary context (every default queue's), retained on first use.
    fn primary_context(&self) -> Result<Arc<CudaContext>> {
        let mut primary = lock(&self.primary);
        if let Some(ctx) = primary.as_ref() {
            return Ok(ctx.clone());
        }
        let device = self.arc()?;
        // The matching release is in CudaContext's Drop.
        let handle = self.driver.primary_ctx_retain(self.handle)?;
        let ctx = CudaContext::new(self.driver, device, handle, ContextOwnership::Primary);
        *primary = Some(ctx.clone());
        Ok(ctx)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ContextOwnership {
    /// The device's primary context: released with cuDevicePrimaryCtxRelease.
    Primary,
    /// Made by cuCtxCreate: destroyed with cuCtxDestroy.
    Created,
}

/// One allocation this context made with the driver (the raw pointer it frees, beside the
/// aligned one it handed out); not the model's `memory::allocation::Allocation`.
#[derive(Debug, Clone, Copy)]
struct DriverAllocation {
    /// What the driver returned (differs from the key for over-allocated aligned blocks).
    raw: u64,
    /// Bytes the caller asked for, from the key (the pointer handed out).
    size: u64,
    kind: UsmKind,
}

/// A CUDA context (the primary one, or one of its own) and the allocations it made.
pub(crate) struct CudaContext {
    me: Weak<CudaContext>,
    driver: &'static Driver,
    device: Arc<CudaDevice>,
    handle: ContextHandle,
    ownership: ContextOwnership,
    /// Allocations by the address handed out.
    allocations: Mutex<BTreeMap<u64, DriverAllocation>>,
    /// Pinned buffers for staged pageable copies, made on first need.
    stager: Mutex<Option<Arc<Stager>>>,
}

/// Contexts that made staging buffers, for `trim_staging`.
static STAGED: Mutex<Vec<Weak<CudaContext>>> = Mutex::new(Vec::new());

/// Frees the pinned staging buffers of every context that is not copying through them
/// now (`poolTrim()` and the pool's out-of-memory retry call it); the next staged copy
/// makes them again. Returns the bytes freed.
pub(crate) fn trim_staging() -> u64 {
    let contexts: Vec<Arc<CudaContext>> = {
        let mut staged = lock(&STAGED);
        staged.retain(|context| context.strong_count() > 0);
        staged.iter().filter_map(Weak::upgrade).collect()
    };
    let mut freed = 0;
    for context in contexts {
        // A context copying right now keeps its buffers: its staging lock is held.
        if let Ok(mut stager) = context.stager.try_lock() {
            if let Some(stager) = stager.take() {
                freed += stager.bytes();
            }
        }
    }
    freed
}

impl CudaContext {
    fn new(
        driver: &'static Driver,
        device: Arc<CudaDevice>,
        handle: ContextHandle,
        ownership: ContextOwnership,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| CudaContext {
            me: me.clone(),
            driver,
            device,
            handle,
            ownership,
            allocations: Mutex::new(BTreeMap::new()),
            stager: Mutex::new(None),
        })
    }

    /// This context, current on this thread for the guard's life. A primary context is
    /// left current on a thread that had none (`Driver::enter`): it lives as long as the
    /// device, and the next call on the thread then pushes and pops nothing.
    fn current(&self) -> Result<CurrentContext> {
        Ok(self.driver.enter(self.handle, self.ownership == ContextOwnership::Primary)?)
    }

    /// The allocation of ours that holds `address`, as `(handed-out address, allocation)`.
    fn lookup(&self, address: Address) -> Option<(u64, DriverAllocation)> {
        let map = lock(&self.allocations);
        entry_holding(&map, address, |a| a.size).map(|(start, &a)| (start, a))
    }

    /// A copy between pageable host memory and device memory of this context, through
    /// the pinned staging buffers (made on first use, given back by `trim_staging`).
    ///
    /// # Safety
    /// As [`Stager::copy`]: both ranges are valid for `nbytes` for the whole call.
    unsafe fn staged_copy(&self, direction: Direction, host: u64, device: Address, nbytes: usize) -> Result<()> {
        let mut stager = lock(&self.stager);
        if stager.is_none() {
            let current = self.current()?;
            *stager = Some(Arc::new(Stager::new(&current, StagingConfig::get(), &self.device.staging)?));
            lock(&STAGED).push(self.me.clone());
        }
        match stager.as_ref() {
            // SAFETY: this function's contract is the stager's.
            Some(stager) => unsafe { stager.copy(direction, host as usize, device, nbytes) },
            None => Err(MemoryError::CudaDriver { message: "staging buffers unavailable".into() }),
        }
    }

    /// Which way a copy goes when one side is device memory of this context and the other
    /// pageable host memory (unknown to the driver); `None` for every other pair.
    fn staging_direction(&self, dst: Address, src: Address) -> Option<(Direction, u64, Address)> {
        match (self.pointer_kind(dst), self.pointer_kind(src)) {
            (UsmKind::Device, UsmKind::Unknown) => Some((Direction::HostToDevice, src, dst)),
            (UsmKind::Unknown, UsmKind::Device) => Some((Direction::DeviceToHost, dst, src)),
            _ => None,
        }
    }

    /// Number of live allocations of this context.
    #[cfg(test)]
    pub(crate) fn live_allocations(&self) -> usize {
        lock(&self.allocations).len()
    }

    /// Allocates `nbytes` of `kind`, aligned as asked; the handed-out pointer is recorded.
    fn allocate(&self, kind: UsmKind, nbytes: u64, alignment: u64) -> Result<Address> {
        check_allocation_request(kind, nbytes, alignment)?;
        let mut plan = plan_allocation(nbytes, alignment, base_alignment(kind))?;
        let current = self.current()?;
        loop {
            let raw = self.raw_alloc(&current, kind, plan.request)?;
            match align_up(raw, plan.align) {
                Some(user) if plan.padded || user == raw => {
                    lock(&self.allocations).insert(user, DriverAllocation { raw, size: nbytes, kind });
                    return Ok(user);
                }
                _ => {
                    // The driver gave less alignment than it promises, or (padded) an
                    // address that cannot be aligned: give it back and retry padded once.
                    // SAFETY: `raw` was allocated just above, never handed out nor recorded.
                    let _ = unsafe { self.raw_free(&current, kind, raw) };
                    if plan.padded {
                        return Err(MemoryError::UsmAllocation {
                            message: format!(
                                "the CUDA driver returned 0x{raw:x}, which cannot be aligned to {}",
                                plan.align
                            ),
                        });
                    }
                    plan = padded_plan(nbytes, plan.align)?;
                }
            }
        }
    }

    /// One driver allocation of `request` bytes in the current context.
    fn raw_alloc(&self, current: &CurrentContext, kind: UsmKind, request: u64) -> Result<u64> {
        let size = usize::try_from(request).map_err(|_| MemoryError::UsmAllocation {
            message: format!("cannot allocate {request} bytes on this platform"),
        })?;
        let allocated = match kind {
            UsmKind::Device => current.mem_alloc(size),
            UsmKind::Host => current
                .mem_host_alloc(size, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE)
                .map(|p| p.as_ptr() as u64),
            UsmKind::Shared => {
                let _admission = lock(&MANAGED_ADMISSION);
                let (free, _) = current.mem_info().map_err(|e| MemoryError::UsmAllocation {
                    message: format!("cannot check free memory before a managed allocation: {e}"),
                })?;
                admit_managed(request, free)?;
                current.mem_alloc_managed(size, CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL)
            }
            UsmKind::Unknown => return Err(MemoryError::UnknownKindAllocation),
        };
        allocated.map_err(|e| {
            if e.returned_null() {
                return MemoryError::UsmAllocation {
                    message: format!("{} of {request} bytes returned NULL", e.call()),
                };
            }
            let mem = if kind == UsmKind::Host { None } else { current.mem_info().ok() };
            allocation_failure(e.call(), request, &e.description(), mem)
        })
    }

    /// Gives a driver allocation back, in the current context.
    ///
    /// # Safety
    /// `raw` is what `raw_alloc` returned for `kind` in this context, given back once, with
    /// no access to it in flight or to follow.
    unsafe fn raw_free(&self, current: &CurrentContext, kind: UsmKind, raw: u64) -> Result<()> {
        if kind == UsmKind::Host {
            // SAFETY: `raw` came from cuMemHostAlloc in this context (see `# Safety`).
            Ok(unsafe { current.mem_free_host(raw as *mut std::ffi::c_void) }?)
        } else {
            // SAFETY: `raw` came from cuMemAlloc/cuMemAllocManaged in this context (see
            // `# Safety`).
            Ok(unsafe { current.mem_free(raw) }?)
        }
    }

    /// What the driver says of `address`: its kind when it belongs to this context, else
    /// `Unknown`. Never fails.
    fn driver_pointer_kind(&self, address: Address) -> UsmKind {
        let Ok(current) = self.current() else {
            return UsmKind::Unknown;
        };
        let Ok(attributes) = current.pointer_attributes(address) else {
            return UsmKind::Unknown;
        };
        if attributes.context == 0 || attributes.context != self.handle.as_raw() {
            return UsmKind::Unknown;
        }
        classify_pointer(attributes.memory_type, attributes.is_managed)
    }

    /// `cuMemGetAddressRange` for a pointer the driver says belongs to this context.
    fn driver_address_range(&self, address: Address) -> Option<(u64, u64)> {
        if self.driver_pointer_kind(address) == UsmKind::Unknown {
            return None;
        }
        let (base, size) = self.current().ok()?.mem_get_address_range(address).ok()?;
        (base != 0 && size != 0).then_some((base, size as u64))
    }
}

impl Context for CudaContext {
    fn devices(&self) -> Vec<Arc<dyn Device>> {
        vec![self.device.clone() as Arc<dyn Device>]
    }

    fn same_context(&self, other: &dyn Context) -> bool {
        other.as_any().downcast_ref::<CudaContext>().is_some_and(|o| o.handle == self.handle)
    }

    fn create_queue(&self, device: &Arc<dyn Device>) -> Result<Arc<dyn Queue>> {
        self.create_queue_with(device, crate::runtime::program::QueueProperties::default())
    }

    fn create_queue_with(
        &self,
        device: &Arc<dyn Device>,
        properties: crate::runtime::program::QueueProperties,
    ) -> Result<Arc<dyn Queue>> {
        if !self.device.same_device(device.as_ref()) {
            return Err(MemoryError::QueueCreation {
                message: format!("device '{}' is not a device of this CUDA context", device.info().name),
            });
        }
        let context = self
            .me
            .upgrade()
            .ok_or_else(|| MemoryError::QueueCreation { message: "CUDA context already released".into() })?;
        let current = self.current().map_err(|e| MemoryError::QueueCreation { message: e.to_string() })?;
        let stream = current.stream_create().map_err(|e| MemoryError::QueueCreation { message: e.to_string() })?;
        let kernels = program::QueueKernels::new(&current, properties)
            .map_err(|e| MemoryError::QueueCreation { message: e.to_string() })?;
        Ok(Arc::new(CudaQueue { stream: Arc::new(stream), kernels, context }))
    }

    fn pointer_kind(&self, address: Address) -> UsmKind {
        if address == 0 {
            return UsmKind::Unknown;
        }
        if let Some((_, a)) = self.lookup(address) {
            return a.kind;
        }
        if ipc::mapping_of(self, address).is_some() {
            return UsmKind::Device;
        }
        self.driver_pointer_kind(address)
    }

    fn pointer_device(&self, address: Address) -> Result<Arc<dyn Device>> {
        // A context has exactly one device: a pointer it owns belongs to that device.
        if self.pointer_kind(address) == UsmKind::Unknown {
            return Err(MemoryError::ForeignPointer {
                message: format!(
                    "0x{address:x} is not a USM pointer of this CUDA context (device '{}')",
                    self.device.info.name
                ),
            });
        }
        Ok(self.device.clone())
    }

    fn free_memory(&self) -> Option<u64> {
        self.current().ok()?.mem_info().ok().map(|(free, _)| free)
    }

    fn ipc(&self) -> Option<&dyn crate::runtime::ipc::Ipc> {
        self.driver.has_ipc().then_some(self)
    }

    fn address_range(&self, address: Address) -> Option<(Address, u64)> {
        if address == 0 {
            return None;
        }
        if let Some((start, a)) = self.lookup(address) {
            return Some((start, a.size));
        }
        if let Some(range) = ipc::mapping_of(self, address) {
            return Some(range);
        }
        self.driver_address_range(address)
    }

    unsafe fn free(&self, address: Address) -> Result<()> {
        let Some(a) = lock(&self.allocations).remove(&address) else {
            return Err(MemoryError::ForeignPointer {
                message: format!("0x{address:x} was not allocated by this CUDA context, or was already freed"),
            });
        };
        let current = self.current()?;
        // SAFETY: `a` was just taken out of the table, so it is given back once; nothing
        // uses it any more (the caller's contract).
        unsafe { self.raw_free(&current, a.kind, a.raw) }
    }

    fn host_registration(&self) -> Option<&dyn HostRegistration> {
        Some(self)
    }

    fn programs(&self) -> Option<&dyn crate::runtime::program::ProgramBuilder> {
        Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for CudaContext {
    fn drop(&mut self) {
        // The staging buffers belong to this context: release them while it exists.
        drop(lock(&self.stager).take());
        let leftovers: Vec<DriverAllocation> = std::mem::take(&mut *lock(&self.allocations)).into_values().collect();
        if !leftovers.is_empty() {
            if let Ok(current) = self.current() {
                for a in leftovers {
                    // SAFETY: taken out of the table, so given back once; no queue of this
                    // context is left to use them (each holds an Arc of it).
                    let _ = unsafe { self.raw_free(&current, a.kind, a.raw) };
                }
            }
        }
        // No stream, pinned buffer or guard of this context is left: queues hold an Arc of
        // it, the staging buffers were dropped above, and every push is popped before the
        // call that pushed it returns.
        match self.ownership {
            ContextOwnership::Primary => {
                // SAFETY: balances the one retain of this object (`default_context`).
                let _ = unsafe { self.driver.primary_ctx_release(self.device.handle) };
            }
            ContextOwnership::Created => {
                // SAFETY: destroys the context this object created, once (see above).
                let _ = unsafe { self.driver.ctx_destroy(self.handle) };
            }
        }
    }
}

/// A CUDA stream of a context: every operation on it is waited for before it returns.
pub(crate) struct CudaQueue {
    // Declared before `context`: the stream is destroyed (with its context pushed) before
    // the queue's Arc of the context is dropped.
    stream: Arc<Stream>,
    /// Its properties and profiling clock (`program.rs`); before `context` too.
    kernels: program::QueueKernels,
    context: Arc<CudaContext>,
}

/// `nbytes` as the driver takes a size; `None` when there is nothing to do.
fn driver_size(nbytes: u64, what: &str) -> Result<Option<usize>> {
    if nbytes == 0 {
        return Ok(None);
    }
    usize::try_from(nbytes)
        .map(Some)
        .map_err(|_| MemoryError::CudaDriver { message: format!("cannot {what} {nbytes} bytes on this platform") })
}

impl CudaQueue {
    /// One `cuMemcpyAsync` on the queue's stream, waited for: the driver's own path
    /// (pinned memory at the DMA engine's rate; pageable memory through its bounce buffer).
    fn direct_copy(&self, dst_bytes: WriteBytes<'_>, src_bytes: ReadBytes<'_>) -> Result<()> {
        let nbytes = src_bytes.copy_len(&dst_bytes)?;
        let (dst, src) = (dst_bytes.address(), src_bytes.address());
        let Some(size) = driver_size(nbytes, "copy")? else { return Ok(()) };
        let current = self.context.current()?;
        // SAFETY: both ranges are valid for `nbytes` (USM memory of this context or live
        // host memory: their types' contract) for this call, which synchronises below.
        unsafe { current.memcpy_async(dst, src, size, &self.stream) }.map_err(|e| MemoryError::CudaDriver {
            message: format!("cuMemcpyAsync of {nbytes} bytes from 0x{src:x} to 0x{dst:x} failed: {}", e.description()),
        })?;
        Ok(current.synchronize(&self.stream)?)
    }
}

impl Queue for CudaQueue {
    fn context(&self) -> Arc<dyn Context> {
        self.context.clone()
    }

    fn device(&self) -> Arc<dyn Device> {
        self.context.device.clone()
    }

    fn allocate(&self, kind: UsmKind, nbytes: u64, alignment: u64) -> Result<Address> {
        self.context.allocate(kind, nbytes, alignment)
    }

    fn memcpy(&self, dst_bytes: WriteBytes<'_>, src_bytes: ReadBytes<'_>) -> Result<()> {
        let nbytes = src_bytes.copy_len(&dst_bytes)?;
        let (dst, src) = (dst_bytes.address(), src_bytes.address());
        let Some(size) = driver_size(nbytes, "copy")? else { return Ok(()) };
        let config = StagingConfig::get();
        if config.may_apply(nbytes) {
            if let Some((direction, host, device)) = self.context.staging_direction(dst, src) {
                if config.applies(direction, nbytes) {
                    // SAFETY: both sides are the ranges this call was given, valid for
                    // `nbytes` (their types' contract).
                    return unsafe { self.context.staged_copy(direction, host, device, size) };
                }
            }
        }
        self.direct_copy(dst_bytes, src_bytes)
    }

    fn memset(&self, dst_bytes: WriteBytes<'_>, value: u8) -> Result<()> {
        let (dst, nbytes) = (dst_bytes.address(), dst_bytes.len());
        let Some(size) = driver_size(nbytes, "fill")? else { return Ok(()) };
        let current = self.context.current()?;
        // SAFETY: `dst..dst+nbytes` is valid for writes (its type's contract) and the fill
        // is complete when the synchronisation below returns.
        unsafe { current.memset_d8_async(dst, value, size, &self.stream) }.map_err(|e| MemoryError::CudaDriver {
            message: format!("cuMemsetD8Async of {nbytes} bytes at 0x{dst:x} failed: {}", e.description()),
        })?;
        Ok(current.synchronize(&self.stream)?)
    }

    fn wait(&self) -> Result<()> {
        Ok(self.context.current()?.synchronize(&self.stream)?)
    }

    fn memcpy_registered(&self, dst: WriteBytes<'_>, src: ReadBytes<'_>) -> Result<()> {
        self.direct_copy(dst, src)
    }

    fn shared_memory_hints(&self) -> Option<&dyn SharedMemoryHints> {
        Some(self)
    }

    fn submissions(&self) -> Option<&dyn crate::runtime::program::Submissions> {
        Some(self)
    }

    fn properties(&self) -> crate::runtime::program::QueueProperties {
        self.kernels.properties
    }

    fn native_handles(&self) -> Option<crate::runtime::program::NativeQueue> {
        Some(crate::runtime::program::NativeQueue::Cuda {
            context: self.context.handle.as_raw(),
            stream: self.stream.as_raw(),
            ordinal: self.context.device.ordinal,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
