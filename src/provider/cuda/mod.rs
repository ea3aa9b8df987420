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
mod logic;
mod staging;

use std::any::Any;
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void, CStr};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use cudarc::driver::sys::{
    CUcontext, CUctx_flags, CUdevice, CUdevice_attribute, CUdeviceptr, CUmemAttach_flags, CUpointer_attribute,
    CUstream, CUstream_flags, CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_PORTABLE,
};

use self::driver::{CurrentContext, Driver, CUDA_SUCCESS};
use self::logic::{
    admit_managed, align_up, allocation_failure, base_alignment, classify_pointer, format_driver_version, padded_plan,
    plan_allocation,
};
use self::staging::{Direction, Stager, StagingConfig};
use crate::error::{MemoryError, Result};
use crate::runtime::UsmKind;
use crate::runtime::{Address, Context, Device, DeviceInfo, DeviceType, Provider, Queue};
use crate::sync::lock;

static DRIVER: OnceLock<Driver> = OnceLock::new();
static PROVIDER: OnceLock<Result<Arc<CudaProvider>>> = OnceLock::new();
/// Serialises "check free memory, then allocate managed memory" across the process, so two
/// threads cannot both pass the admission check with the same free bytes.
static MANAGED_ADMISSION: Mutex<()> = Mutex::new(());

/// Loads libcuda.so.1 at run time, initialises the driver and lists its devices. `Err`
/// (`MemoryError::CudaDriver`, never a panic) when there is no driver, `cuInit` fails or
/// there is no device. The outcome is cached for the life of the process.
pub fn load() -> Result<Arc<dyn Provider>> {
    match PROVIDER.get_or_init(init) {
        Ok(p) => Ok(p.clone()),
        Err(e) => Err(e.clone()),
    }
}

fn no_driver_message() -> String {
    let mut names: Vec<String> = Vec::new();
    for n in cudarc::get_lib_name_candidates("cuda") {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    format!(
        "CUDA driver library not found (tried {}). Install the NVIDIA driver, or add the directory \
         that holds libcuda.so.1 to LD_LIBRARY_PATH.",
        names.join(", ")
    )
}

fn open_driver() -> Result<&'static Driver> {
    if let Some(d) = DRIVER.get() {
        return Ok(d);
    }
    // SAFETY: only dlopen()s the candidate names of the driver library and closes them
    // again; it calls no function of the library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(MemoryError::CudaDriver(no_driver_message()));
    }
    // cudarc's `culib()` panics when no candidate loads; it was just found present, and
    // catch_unwind covers the library vanishing in between.
    // SAFETY: loading libcuda runs only its own initialisers, as any CUDA program does.
    let lib = std::panic::catch_unwind(|| unsafe { cudarc::driver::sys::culib() })
        .map_err(|_| MemoryError::CudaDriver(no_driver_message()))?;
    // SAFETY: `lib` is the CUDA driver library loaded by cudarc.
    let driver = unsafe { Driver::resolve(lib) }.map_err(|e| {
        MemoryError::CudaDriver(format!("{e}; the NVIDIA driver is too old for this addon (CUDA 12 or newer needed)"))
    })?;
    Ok(DRIVER.get_or_init(|| driver))
}

fn init() -> Result<Arc<CudaProvider>> {
    let driver = open_driver()?;
    // SAFETY: cuInit takes flags (must be 0) and may be called any number of times.
    let r = unsafe { (driver.cuInit)(0) };
    if r != CUDA_SUCCESS {
        return Err(MemoryError::CudaDriver(format!(
            "{} (is an NVIDIA GPU visible to this process?)",
            driver.failure("cuInit", r)
        )));
    }
    let mut version: c_int = 0;
    // SAFETY: valid out-pointer.
    driver.check("cuDriverGetVersion", unsafe { (driver.cuDriverGetVersion)(&mut version) })?;
    let mut count: c_int = 0;
    // SAFETY: valid out-pointer; the driver is initialised.
    driver.check("cuDeviceGetCount", unsafe { (driver.cuDeviceGetCount)(&mut count) })?;
    if count <= 0 {
        return Err(MemoryError::CudaDriver("the CUDA driver reports no devices".into()));
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

/// A `CUcontext` handle that may cross threads.
#[derive(Clone, Copy, PartialEq, Eq)]
struct CtxHandle(CUcontext);
// SAFETY: CUDA driver handles are plain identifiers valid on every thread of the process;
// the driver API is thread-safe, and we make the context current on the calling thread
// (`CurrentContext`) before each call that needs it.
unsafe impl Send for CtxHandle {}
// SAFETY: as above; the handle itself is never mutated.
unsafe impl Sync for CtxHandle {}

/// A `CUstream` handle that may cross threads.
#[derive(Clone, Copy)]
struct StreamHandle(CUstream);
// SAFETY: as for CtxHandle: streams may be used from any thread with their context current.
unsafe impl Send for StreamHandle {}
// SAFETY: as above.
unsafe impl Sync for StreamHandle {}

pub(crate) struct CudaDevice {
    me: Weak<CudaDevice>,
    driver: &'static Driver,
    ordinal: i32,
    handle: CUdevice,
    info: DeviceInfo,
    /// The primary context, retained on first use and kept for the life of the device
    /// (the device lives as long as the process-wide provider).
    primary: Mutex<Option<Arc<CudaContext>>>,
}

impl CudaDevice {
    fn open(driver: &'static Driver, ordinal: i32, driver_version: i32) -> Result<Arc<Self>> {
        let mut handle: CUdevice = 0;
        // SAFETY: valid out-pointer; ordinal < cuDeviceGetCount.
        driver.check("cuDeviceGet", unsafe { (driver.cuDeviceGet)(&mut handle, ordinal) })?;
        let mut name_buf = [0u8; 256];
        // SAFETY: the buffer holds `len` bytes; the driver writes a NUL-terminated name
        // of at most `len` bytes.
        let r = unsafe { (driver.cuDeviceGetName)(name_buf.as_mut_ptr().cast(), name_buf.len() as c_int, handle) };
        driver.check("cuDeviceGetName", r)?;
        let name = CStr::from_bytes_until_nul(&name_buf)
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_else(|_| String::from_utf8_lossy(&name_buf).into_owned());
        let mut total: usize = 0;
        // SAFETY: valid out-pointer and device handle.
        driver.check("cuDeviceTotalMem", unsafe { (driver.cuDeviceTotalMem)(&mut total, handle) })?;
        let attr = |a: CUdevice_attribute| -> Result<i32> {
            let mut v: c_int = 0;
            // SAFETY: valid out-pointer and device handle; `a` is a CUdevice_attribute value.
            let r = unsafe { (driver.cuDeviceGetAttribute)(&mut v, a as c_int, handle) };
            driver.check("cuDeviceGetAttribute", r).map(|_| v)
        };
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
            aspects: logic::aspects(cc, managed, map_host),
        };
        Ok(Arc::new_cyclic(|me| CudaDevice {
            me: me.clone(),
            driver,
            ordinal,
            handle,
            info,
            primary: Mutex::new(None),
        }))
    }

    fn arc(&self) -> Result<Arc<CudaDevice>> {
        self.me.upgrade().ok_or_else(|| MemoryError::CudaDriver("CUDA device object already released".into()))
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

    fn same_device(&self, other: &dyn Device) -> bool {
        other.as_any().downcast_ref::<CudaDevice>().is_some_and(|o| o.ordinal == self.ordinal)
    }

    fn default_context(&self) -> Result<Arc<dyn Context>> {
        let mut primary = lock(&self.primary);
        if let Some(ctx) = primary.as_ref() {
            return Ok(ctx.clone());
        }
        let device = self.arc()?;
        let mut handle: CUcontext = std::ptr::null_mut();
        // SAFETY: valid out-pointer and device handle. Retaining does not make the context
        // current; the matching release is in CudaContext's Drop.
        let r = unsafe { (self.driver.cuDevicePrimaryCtxRetain)(&mut handle, self.handle) };
        self.driver.check("cuDevicePrimaryCtxRetain", r)?;
        let ctx = CudaContext::new(self.driver, device, CtxHandle(handle), ContextOwnership::Primary);
        *primary = Some(ctx.clone());
        Ok(ctx)
    }

    fn create_context(&self) -> Result<Arc<dyn Context>> {
        let device = self.arc()?;
        let create = self.driver.cuCtxCreate.ok_or_else(|| {
            MemoryError::CudaDriver("this CUDA driver has no cuCtxCreate_v2: cannot make a separate context".into())
        })?;
        let mut handle: CUcontext = std::ptr::null_mut();
        let flags = CUctx_flags::CU_CTX_SCHED_AUTO as u32 | CUctx_flags::CU_CTX_MAP_HOST as u32;
        // SAFETY: valid out-pointer, documented flags and a valid device handle.
        let r = unsafe { create(&mut handle, flags, self.handle) };
        self.driver.check("cuCtxCreate", r)?;
        // cuCtxCreate pushed the new context on this thread's stack: pop it so the thread
        // is left as it was.
        let mut popped: CUcontext = std::ptr::null_mut();
        // SAFETY: pops the context cuCtxCreate just pushed on this thread.
        let r = unsafe { (self.driver.cuCtxPopCurrent)(&mut popped) };
        let ctx = CudaContext::new(self.driver, device, CtxHandle(handle), ContextOwnership::Created);
        self.driver.check("cuCtxPopCurrent", r)?;
        Ok(ctx)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ContextOwnership {
    /// The device's primary context: released with cuDevicePrimaryCtxRelease.
    Primary,
    /// Made by cuCtxCreate: destroyed with cuCtxDestroy.
    Created,
}

/// One allocation this context made.
#[derive(Debug, Clone, Copy)]
struct Allocation {
    /// What the driver returned (differs from the key for over-allocated aligned blocks).
    raw: u64,
    /// Bytes the caller asked for, from the key (the pointer handed out).
    size: u64,
    kind: UsmKind,
}

pub(crate) struct CudaContext {
    me: Weak<CudaContext>,
    driver: &'static Driver,
    device: Arc<CudaDevice>,
    handle: CtxHandle,
    ownership: ContextOwnership,
    /// Allocations by the address handed out.
    allocations: Mutex<BTreeMap<u64, Allocation>>,
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
        handle: CtxHandle,
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

    fn current(&self) -> Result<CurrentContext<'static>> {
        CurrentContext::push(self.driver, self.handle.0)
    }

    /// The allocation of ours that holds `ptr`, as `(handed-out address, allocation)`.
    fn lookup(&self, ptr: u64) -> Option<(u64, Allocation)> {
        let map = lock(&self.allocations);
        let (&start, &a) = map.range(..=ptr).next_back()?;
        (ptr - start < a.size).then_some((start, a))
    }

    /// A copy between pageable host memory and device memory of this context, through
    /// the pinned staging buffers (made on first use, given back by `trim_staging`).
    fn staged_copy(&self, direction: Direction, host: u64, device: Address, nbytes: usize) -> Result<()> {
        let mut stager = lock(&self.stager);
        if stager.is_none() {
            let _current = self.current()?;
            *stager = Some(Arc::new(Stager::new(self.driver, self.handle, StagingConfig::get())?));
            lock(&STAGED).push(self.me.clone());
        }
        match stager.as_ref() {
            Some(stager) => stager.copy(direction, host as usize, device, nbytes),
            None => Err(MemoryError::CudaDriver("staging buffers unavailable".into())),
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
        if kind == UsmKind::Unknown {
            return Err(MemoryError::UsmAllocation("cannot allocate USM memory of kind 'unknown'".into()));
        }
        let mut plan = plan_allocation(nbytes, alignment, base_alignment(kind))?;
        let _current = self.current()?;
        loop {
            let raw = self.raw_alloc(kind, plan.request)?;
            match align_up(raw, plan.align) {
                Some(user) if plan.padded || user == raw => {
                    lock(&self.allocations).insert(user, Allocation { raw, size: nbytes, kind });
                    return Ok(user);
                }
                _ => {
                    // The driver gave less alignment than it promises, or (padded) an
                    // address that cannot be aligned: give it back and retry padded once.
                    let _ = self.raw_free(kind, raw);
                    if plan.padded {
                        return Err(MemoryError::UsmAllocation(format!(
                            "the CUDA driver returned 0x{raw:x}, which cannot be aligned to {}",
                            plan.align
                        )));
                    }
                    plan = padded_plan(nbytes, plan.align)?;
                }
            }
        }
    }

    /// One driver allocation of `request` bytes; this context must be current.
    fn raw_alloc(&self, kind: UsmKind, request: u64) -> Result<u64> {
        let d = self.driver;
        let size = usize::try_from(request)
            .map_err(|_| MemoryError::UsmAllocation(format!("cannot allocate {request} bytes on this platform")))?;
        let (call, r, ptr) = match kind {
            UsmKind::Device => {
                let mut p: CUdeviceptr = 0;
                // SAFETY: valid out-pointer; the context is current.
                let r = unsafe { (d.cuMemAlloc)(&mut p, size) };
                ("cuMemAlloc", r, p)
            }
            UsmKind::Host => {
                let mut p: *mut c_void = std::ptr::null_mut();
                let flags = CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE;
                // SAFETY: valid out-pointer and documented flags; the context is current.
                let r = unsafe { (d.cuMemHostAlloc)(&mut p, size, flags) };
                ("cuMemHostAlloc", r, p as u64)
            }
            UsmKind::Shared => {
                let _admission = lock(&MANAGED_ADMISSION);
                let (free, _) = d.mem_info().map_err(|e| {
                    MemoryError::UsmAllocation(format!("cannot check free memory before a managed allocation: {e}"))
                })?;
                admit_managed(request, free)?;
                let mut p: CUdeviceptr = 0;
                let flags = CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32;
                // SAFETY: valid out-pointer and flags; the context is current; the request
                // fits in the device's free memory (checked just above).
                let r = unsafe { (d.cuMemAllocManaged)(&mut p, size, flags) };
                ("cuMemAllocManaged", r, p)
            }
            UsmKind::Unknown => {
                return Err(MemoryError::UsmAllocation("cannot allocate USM memory of kind 'unknown'".into()))
            }
        };
        if r != CUDA_SUCCESS {
            let mem = if kind == UsmKind::Host { None } else { d.mem_info().ok() };
            return Err(allocation_failure(call, request, &d.describe(r), mem));
        }
        if ptr == 0 {
            return Err(MemoryError::UsmAllocation(format!("{call} of {request} bytes returned NULL")));
        }
        Ok(ptr)
    }

    /// Gives a driver allocation back; this context must be current.
    fn raw_free(&self, kind: UsmKind, raw: u64) -> Result<()> {
        let d = self.driver;
        if kind == UsmKind::Host {
            // SAFETY: `raw` came from cuMemHostAlloc in this context and is freed once
            // (it was just taken out of the allocation table, or never entered it).
            d.check("cuMemFreeHost", unsafe { (d.cuMemFreeHost)(raw as *mut c_void) })
        } else {
            // SAFETY: `raw` came from cuMemAlloc/cuMemAllocManaged in this context and is
            // freed once, as above.
            d.check("cuMemFree", unsafe { (d.cuMemFree)(raw) })
        }
    }

    /// What the driver says of `ptr`: its kind when it belongs to this context, else
    /// `Unknown`. Never fails.
    fn driver_pointer_kind(&self, ptr: u64) -> UsmKind {
        let Ok(_current) = self.current() else {
            return UsmKind::Unknown;
        };
        // Each value gets 8 zeroed bytes, whatever width the driver writes (int, unsigned
        // int, bool or a pointer): reading the low bytes is then always defined.
        let mut attrs = [
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_CONTEXT as c_int,
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE as c_int,
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_IS_MANAGED as c_int,
        ];
        let mut values = [0u64; 3];
        let base = values.as_mut_ptr();
        let mut data: [*mut c_void; 3] = [base.cast(), base.wrapping_add(1).cast(), base.wrapping_add(2).cast()];
        // SAFETY: `attrs` and `data` hold 3 entries each, every data pointer points to 8
        // writable bytes; cuPointerGetAttributes accepts any address (it reports unknown
        // memory with zeroed values rather than failing).
        let r = unsafe { (self.driver.cuPointerGetAttributes)(3, attrs.as_mut_ptr(), data.as_mut_ptr(), ptr) };
        if r != CUDA_SUCCESS {
            return UsmKind::Unknown;
        }
        let owner = values[0] as usize;
        if owner == 0 || owner != self.handle.0 as usize {
            return UsmKind::Unknown;
        }
        classify_pointer(values[1] as u32, values[2] != 0)
    }

    /// `cuMemGetAddressRange` for a pointer the driver says belongs to this context.
    fn driver_address_range(&self, ptr: u64) -> Option<(u64, u64)> {
        if self.driver_pointer_kind(ptr) == UsmKind::Unknown {
            return None;
        }
        let _current = self.current().ok()?;
        let (mut base, mut size): (CUdeviceptr, usize) = (0, 0);
        // SAFETY: valid out-pointers; the driver checks `ptr` and returns an error code for
        // an address it does not know.
        let r = unsafe { (self.driver.cuMemGetAddressRange)(&mut base, &mut size, ptr) };
        (r == CUDA_SUCCESS && base != 0 && size != 0).then_some((base, size as u64))
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
        if !self.device.same_device(device.as_ref()) {
            return Err(MemoryError::QueueCreation(format!(
                "device '{}' is not a device of this CUDA context",
                device.info().name
            )));
        }
        let context =
            self.me.upgrade().ok_or_else(|| MemoryError::QueueCreation("CUDA context already released".into()))?;
        let _current = self.current().map_err(|e| MemoryError::QueueCreation(e.to_string()))?;
        let mut stream: CUstream = std::ptr::null_mut();
        // SAFETY: valid out-pointer and flags; the context is current.
        let r = unsafe { (self.driver.cuStreamCreate)(&mut stream, CUstream_flags::CU_STREAM_NON_BLOCKING as u32) };
        if r != CUDA_SUCCESS {
            return Err(MemoryError::QueueCreation(self.driver.failure("cuStreamCreate", r)));
        }
        Ok(Arc::new(CudaQueue { driver: self.driver, context, stream: StreamHandle(stream) }))
    }

    fn pointer_kind(&self, ptr: Address) -> UsmKind {
        if ptr == 0 {
            return UsmKind::Unknown;
        }
        if let Some((_, a)) = self.lookup(ptr) {
            return a.kind;
        }
        self.driver_pointer_kind(ptr)
    }

    fn pointer_device(&self, ptr: Address) -> Result<Arc<dyn Device>> {
        // A context has exactly one device: a pointer it owns belongs to that device.
        if self.pointer_kind(ptr) == UsmKind::Unknown {
            return Err(MemoryError::ForeignPointer(format!(
                "0x{ptr:x} is not a USM pointer of this CUDA context (device '{}')",
                self.device.info.name
            )));
        }
        Ok(self.device.clone())
    }

    fn address_range(&self, ptr: Address) -> Option<(Address, u64)> {
        if ptr == 0 {
            return None;
        }
        if let Some((start, a)) = self.lookup(ptr) {
            return Some((start, a.size));
        }
        self.driver_address_range(ptr)
    }

    fn free(&self, ptr: Address) -> Result<()> {
        let Some(a) = lock(&self.allocations).remove(&ptr) else {
            return Err(MemoryError::ForeignPointer(format!(
                "0x{ptr:x} was not allocated by this CUDA context, or was already freed"
            )));
        };
        let _current = self.current()?;
        self.raw_free(a.kind, a.raw)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for CudaContext {
    fn drop(&mut self) {
        // The staging buffers belong to this context: release them while it exists.
        drop(lock(&self.stager).take());
        let leftovers: Vec<Allocation> = std::mem::take(&mut *lock(&self.allocations)).into_values().collect();
        if !leftovers.is_empty() {
            if let Ok(_current) = self.current() {
                for a in leftovers {
                    let _ = self.raw_free(a.kind, a.raw);
                }
            }
        }
        let d = self.driver;
        match self.ownership {
            ContextOwnership::Primary => {
                // SAFETY: balances the one cuDevicePrimaryCtxRetain of this object.
                let _ = unsafe { (d.cuDevicePrimaryCtxRelease)(self.device.handle) };
            }
            ContextOwnership::Created => {
                // SAFETY: destroys the context this object created, once; it is current on
                // no thread (every push is popped before the call that pushed it returns).
                let _ = unsafe { (d.cuCtxDestroy)(self.handle.0) };
            }
        }
    }
}

pub(crate) struct CudaQueue {
    driver: &'static Driver,
    context: Arc<CudaContext>,
    stream: StreamHandle,
}

impl CudaQueue {
    fn sync(&self) -> Result<()> {
        // SAFETY: the stream belongs to the current context and is alive (destroyed in Drop).
        let r = unsafe { (self.driver.cuStreamSynchronize)(self.stream.0) };
        self.driver.check("cuStreamSynchronize", r)
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

    fn memcpy(&self, dst: Address, src: Address, nbytes: u64) -> Result<()> {
        if nbytes == 0 {
            return Ok(());
        }
        let size = usize::try_from(nbytes)
            .map_err(|_| MemoryError::CudaDriver(format!("cannot copy {nbytes} bytes on this platform")))?;
        if StagingConfig::get().applies(nbytes) {
            if let Some((direction, host, device)) = self.context.staging_direction(dst, src) {
                return self.context.staged_copy(direction, host, device, size);
            }
        }
        let _current = self.context.current()?;
        // SAFETY: with unified addressing the driver infers each side's memory from its
        // address; the caller guarantees both ranges are valid for `nbytes` (USM memory of
        // this context or live host memory) and stay so until we have synchronised below.
        let r = unsafe { (self.driver.cuMemcpyAsync)(dst, src, size, self.stream.0) };
        if r != CUDA_SUCCESS {
            return Err(MemoryError::CudaDriver(format!(
                "cuMemcpyAsync of {nbytes} bytes from 0x{src:x} to 0x{dst:x} failed: {}",
                self.driver.describe(r)
            )));
        }
        self.sync()
    }

    fn memset(&self, dst: Address, value: u8, nbytes: u64) -> Result<()> {
        if nbytes == 0 {
            return Ok(());
        }
        let size = usize::try_from(nbytes)
            .map_err(|_| MemoryError::CudaDriver(format!("cannot fill {nbytes} bytes on this platform")))?;
        let _current = self.context.current()?;
        // SAFETY: the caller guarantees `dst..dst+nbytes` is device-accessible memory of
        // this context; the fill is complete when the synchronisation below returns.
        let r = unsafe { (self.driver.cuMemsetD8Async)(dst, value, size, self.stream.0) };
        if r != CUDA_SUCCESS {
            return Err(MemoryError::CudaDriver(format!(
                "cuMemsetD8Async of {nbytes} bytes at 0x{dst:x} failed: {}",
                self.driver.describe(r)
            )));
        }
        self.sync()
    }

    fn wait(&self) -> Result<()> {
        let _current = self.context.current()?;
        self.sync()
    }
}

impl Drop for CudaQueue {
    fn drop(&mut self) {
        if let Ok(_current) = self.context.current() {
            // SAFETY: the stream was created in this context and is destroyed exactly once;
            // work still queued (none: every operation synchronises) would finish first.
            let _ = unsafe { (self.driver.cuStreamDestroy)(self.stream.0) };
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
