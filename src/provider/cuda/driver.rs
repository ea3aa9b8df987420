//! The CUDA driver, fenced: the entry points this provider uses, resolved once from the
//! `libcuda` that cudarc loads at run time, behind typed wrappers. This is the only module
//! of the CUDA provider that calls the driver; the rest of the provider is safe code except
//! where it discharges the contract of a wrapper that frees, fills or copies through raw
//! addresses (those wrappers are `unsafe fn` with a `# Safety` section).
//!
//! Why a table of our own instead of calling `cudarc::driver::sys::cu*` directly:
//! - cudarc's dynamic-loading wrappers resolve each symbol on first call and **panic** when
//!   it is missing. Resolving every symbol here, once, turns a missing or too-old driver
//!   into an `Err` and makes every later call panic-free. Entry points the provider can do
//!   without are optional: their absence is an error of the call that needs them.
//! - cudarc declares `CUresult` as a Rust `enum` generated from the 12.8 headers. A newer
//!   driver (CUDA 13) may return a code that enum lacks, and materialising an unknown
//!   discriminant is undefined behaviour. The table's functions return the raw `u32`,
//!   which is never converted into cudarc's enum.
//!
//! Shape (that of cudarc's `result` layer):
//! - every failed call is a [`DriverError`] naming the call, with the driver's own name and
//!   text for the code (`cuGetErrorName`, `cuGetErrorString`), made in one place
//!   ([`Driver::status`]) and turned into `MemoryError::CudaDriver` by `From`;
//! - calls that need a current context are methods of [`CurrentContext`], the guard that
//!   pushed one, so none can run without it;
//! - handles ([`ContextHandle`], [`Stream`], [`PinnedHost`]) are made only here, from
//!   successful calls; streams and pinned buffers give themselves back when dropped.
//!
//! Versioned entry points are bound by the exported name of the ABI they are declared
//! with, as cudarc's `sys` layer binds them: `cuMemPrefetchAsync_v2` and `cuMemAdvise_v2`
//! take a `CUmemLocation` (CUDA 12.2 and newer; CUDA 13's `cuda.h` maps the plain names to
//! these same symbols), `cuIpcOpenMemHandle_v2`, `cuMemHostRegister_v2`.
//!
//! The library is found by absolute path (`provider::system_lib`) and loaded here, never by
//! a bare name as cudarc's `sys::culib` would (its first candidate, `libcuda.so`, resolves
//! in the working directory when `LD_LIBRARY_PATH` has an empty element). Everything else
//! comes from cudarc: the handle types and the enum constants.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::fmt;
use std::ptr::NonNull;
use std::sync::OnceLock;

use cudarc::driver::sys::{
    cudaError_enum, CUcontext, CUctx_flags, CUdevice, CUdevice_P2PAttribute, CUdevice_attribute, CUdeviceptr, CUevent,
    CUfunction, CUhostFn, CUipcMemHandle, CUipcMem_flags, CUmemAttach_flags, CUmemLocation, CUmemLocationType,
    CUmem_advise, CUmodule, CUpointer_attribute, CUstream, CUstream_flags, CU_IPC_HANDLE_SIZE,
    CU_MEMHOSTREGISTER_PORTABLE,
};

use super::logic::FillStep;
use crate::error::MemoryError;

/// A raw `CUresult`.
type CuResult = c_uint;
const CUDA_SUCCESS: CuResult = 0;
/// `cuCtxEnablePeerAccess` on a pair already enabled.
const CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: CuResult =
    cudaError_enum::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED as CuResult;
/// `cuCtxDisablePeerAccess` on a pair not enabled.
const CUDA_ERROR_PEER_ACCESS_NOT_ENABLED: CuResult = cudaError_enum::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED as CuResult;
/// `CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED`.
pub(super) const P2P_NATIVE_ATOMIC_SUPPORTED: c_int =
    CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED as c_int;

/// `cuMemHostRegister` flags (`CU_MEMHOSTREGISTER_*`).
pub(super) mod host_register {
    use std::ffi::c_uint;

    /// Registered memory is pinned for every context, not only the current one.
    pub(in super::super) const PORTABLE: c_uint = super::CU_MEMHOSTREGISTER_PORTABLE;
}

/// `cuIpcOpenMemHandle` flag: enable peer access to the exporting device lazily, as needed.
pub(super) const IPC_MEM_LAZY_ENABLE_PEER_ACCESS: c_uint = CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as c_uint;

macro_rules! driver_table {
    (
        required { $( $field:ident = $sym:literal : fn($($arg:ty),* $(,)?); )* }
        optional { $( $ofield:ident = $osym:literal : fn($($oarg:ty),* $(,)?); )* }
    ) => {
        /// Function pointers into `libcuda`, all resolved before the first call; the
        /// optional ones are `None` when this driver lacks them.
        #[allow(non_snake_case)]
        struct Table {
            $( $field: unsafe extern "C" fn($($arg),*) -> CuResult, )*
            $( $ofield: Option<unsafe extern "C" fn($($oarg),*) -> CuResult>, )*
        }

        impl Table {
            /// Resolves every entry point; `Err` names the first missing required symbol.
            ///
            /// # Safety
            /// `lib` must be the CUDA driver library: each symbol is given the signature of
            /// the driver API function of that name (CUDA 12 `cuda.h`), which the caller
            /// vouches for by handing in libcuda.
            unsafe fn resolve(lib: &libloading::Library) -> Result<Self, String> {
                Ok(Self {
                    $(
                        // SAFETY: the type is the documented signature of this symbol.
                        $field: *unsafe {
                            lib.get::<unsafe extern "C" fn($($arg),*) -> CuResult>($sym.as_bytes())
                        }
                        .map_err(|e| format!("the CUDA driver library has no symbol {}: {e:?}", $sym))?,
                    )*
                    $(
                        // SAFETY: as above.
                        $ofield: unsafe {
                            lib.get::<unsafe extern "C" fn($($oarg),*) -> CuResult>($osym.as_bytes())
                        }
                        .ok()
                        .map(|s| *s),
                    )*
                })
            }
        }
    };
}

driver_table! {
    required {
        cuInit = "cuInit": fn(c_uint);
        cuDriverGetVersion = "cuDriverGetVersion": fn(*mut c_int);
        cuDeviceGetCount = "cuDeviceGetCount": fn(*mut c_int);
        cuDeviceGet = "cuDeviceGet": fn(*mut CUdevice, c_int);
        cuDeviceGetName = "cuDeviceGetName": fn(*mut c_char, c_int, CUdevice);
        cuDeviceTotalMem = "cuDeviceTotalMem_v2": fn(*mut usize, CUdevice);
        // The attribute is a C enum (an `int`); we pass cudarc's enum value as `c_int`.
        cuDeviceGetAttribute = "cuDeviceGetAttribute": fn(*mut c_int, c_int, CUdevice);
        cuDevicePrimaryCtxRetain = "cuDevicePrimaryCtxRetain": fn(*mut CUcontext, CUdevice);
        cuDevicePrimaryCtxRelease = "cuDevicePrimaryCtxRelease_v2": fn(CUdevice);
        cuCtxDestroy = "cuCtxDestroy_v2": fn(CUcontext);
        cuCtxPushCurrent = "cuCtxPushCurrent_v2": fn(CUcontext);
        cuCtxPopCurrent = "cuCtxPopCurrent_v2": fn(*mut CUcontext);
        cuCtxGetCurrent = "cuCtxGetCurrent": fn(*mut CUcontext);
        cuCtxSetCurrent = "cuCtxSetCurrent": fn(CUcontext);
        cuStreamCreate = "cuStreamCreate": fn(*mut CUstream, c_uint);
        cuStreamDestroy = "cuStreamDestroy_v2": fn(CUstream);
        cuStreamSynchronize = "cuStreamSynchronize": fn(CUstream);
        cuMemAlloc = "cuMemAlloc_v2": fn(*mut CUdeviceptr, usize);
        cuMemHostAlloc = "cuMemHostAlloc": fn(*mut *mut c_void, usize, c_uint);
        cuMemAllocManaged = "cuMemAllocManaged": fn(*mut CUdeviceptr, usize, c_uint);
        cuMemFree = "cuMemFree_v2": fn(CUdeviceptr);
        cuMemFreeHost = "cuMemFreeHost": fn(*mut c_void);
        cuMemcpyAsync = "cuMemcpyAsync": fn(CUdeviceptr, CUdeviceptr, usize, CUstream);
        cuMemsetD8Async = "cuMemsetD8Async": fn(CUdeviceptr, u8, usize, CUstream);
        cuMemsetD16Async = "cuMemsetD16Async": fn(CUdeviceptr, u16, usize, CUstream);
        cuMemsetD32Async = "cuMemsetD32Async": fn(CUdeviceptr, u32, usize, CUstream);
        cuMemsetD2D8Async = "cuMemsetD2D8Async": fn(CUdeviceptr, usize, u8, usize, usize, CUstream);
        cuMemsetD2D32Async = "cuMemsetD2D32Async": fn(CUdeviceptr, usize, u32, usize, usize, CUstream);
        // `CUpointer_attribute*` is an array of C enums (`int`s).
        cuPointerGetAttributes = "cuPointerGetAttributes": fn(c_uint, *mut c_int, *mut *mut c_void, CUdeviceptr);
        cuMemGetAddressRange = "cuMemGetAddressRange_v2": fn(*mut CUdeviceptr, *mut usize, CUdeviceptr);
        cuMemGetInfo = "cuMemGetInfo_v2": fn(*mut usize, *mut usize);
        cuGetErrorName = "cuGetErrorName": fn(CuResult, *mut *const c_char);
        cuGetErrorString = "cuGetErrorString": fn(CuResult, *mut *const c_char);
    }
    optional {
        // Only `create_context` needs it.
        cuCtxCreate = "cuCtxCreate_v2": fn(*mut CUcontext, c_uint, CUdevice);
        // The entry points of the optional features (registered host memory, IPC handles,
        // managed-memory hints, peer access): a driver without them still loads.
        cuMemHostRegister = "cuMemHostRegister_v2": fn(*mut c_void, usize, c_uint);
        cuMemHostUnregister = "cuMemHostUnregister": fn(*mut c_void);
        cuIpcGetMemHandle = "cuIpcGetMemHandle": fn(*mut CUipcMemHandle, CUdeviceptr);
        cuIpcOpenMemHandle = "cuIpcOpenMemHandle_v2": fn(*mut CUdeviceptr, CUipcMemHandle, c_uint);
        cuIpcCloseMemHandle = "cuIpcCloseMemHandle": fn(CUdeviceptr);
        // `CUmem_advise` is a C enum (an `int`); `CUmemLocation` is `{ int type; int id; }`.
        cuMemPrefetchAsync = "cuMemPrefetchAsync_v2": fn(CUdeviceptr, usize, CUmemLocation, c_uint, CUstream);
        cuMemAdvise = "cuMemAdvise_v2": fn(CUdeviceptr, usize, c_uint, CUmemLocation);
        cuDeviceCanAccessPeer = "cuDeviceCanAccessPeer": fn(*mut c_int, CUdevice, CUdevice);
        cuCtxEnablePeerAccess = "cuCtxEnablePeerAccess": fn(CUcontext, c_uint);
        // Programs, kernels and events (`program_calls`).
        cuModuleLoadDataEx = "cuModuleLoadDataEx": fn(*mut CUmodule, *const c_void, c_uint, *mut c_int, *mut *mut c_void);
        cuModuleUnload = "cuModuleUnload": fn(CUmodule);
        cuModuleGetFunction = "cuModuleGetFunction": fn(*mut CUfunction, CUmodule, *const c_char);
        cuFuncGetAttribute = "cuFuncGetAttribute": fn(*mut c_int, c_int, CUfunction);
        cuLaunchKernel = "cuLaunchKernel": fn(CUfunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, CUstream, *mut *mut c_void, *mut *mut c_void);
        cuEventCreate = "cuEventCreate": fn(*mut CUevent, c_uint);
        cuEventRecord = "cuEventRecord": fn(CUevent, CUstream);
        cuEventQuery = "cuEventQuery": fn(CUevent);
        cuEventSynchronize = "cuEventSynchronize": fn(CUevent);
        cuEventDestroy = "cuEventDestroy_v2": fn(CUevent);
        cuStreamWaitEvent = "cuStreamWaitEvent": fn(CUstream, CUevent, c_uint);
        cuLaunchHostFunc = "cuLaunchHostFunc": fn(CUstream, CUhostFn, *mut c_void);
        cuCtxDisablePeerAccess = "cuCtxDisablePeerAccess": fn(CUcontext);
        // The attribute is a C enum (`CUdevice_P2PAttribute`, an `int`).
        cuDeviceGetP2PAttribute = "cuDeviceGetP2PAttribute": fn(*mut c_int, c_int, CUdevice, CUdevice);
        cuMemcpyPeerAsync = "cuMemcpyPeerAsync": fn(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, usize, CUstream);
        // Profiling timestamps and dynamic shared memory beyond the default limit
        // (`program_calls`); CUDA 13's `cuda.h` maps cuEventElapsedTime to _v2, which has
        // this signature too.
        cuEventElapsedTime = "cuEventElapsedTime": fn(*mut f32, CUevent, CUevent);
        cuFuncSetAttribute = "cuFuncSetAttribute": fn(CUfunction, c_int, c_int);
        // `queue.writeValue`: a value written on a stream (`CUstreamWriteValue_flags`
        // `CU_STREAM_WRITE_VALUE_DEFAULT`, 0), the _v2 ABI of CUDA 11.7 and newer (CUDA
        // 12's `cuda.h` maps the plain names to these).
        cuStreamWriteValue32 = "cuStreamWriteValue32_v2": fn(CUstream, CUdeviceptr, u32, c_uint);
        cuStreamWriteValue64 = "cuStreamWriteValue64_v2": fn(CUstream, CUdeviceptr, u64, c_uint);
    }
}

/// A failed driver call: which call, and what the driver says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DriverError {
    call: &'static str,
    failure: Failure,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    /// The call returned `code`; `description` is the driver's name and text for it.
    Status { code: CuResult, description: String },
    /// This driver lacks the entry point (`call` is the symbol); `needed` says what for.
    Missing { needed: &'static str },
    /// The call reported success but handed back a NULL pointer.
    Null,
}

/// The result of a driver call; its error names the call.
pub(super) type DriverResult<T> = std::result::Result<T, DriverError>;

impl DriverError {
    fn missing(symbol: &'static str, needed: &'static str) -> Self {
        DriverError { call: symbol, failure: Failure::Missing { needed } }
    }

    /// The driver call that failed (`cuMemAlloc`), or the missing symbol.
    pub(super) fn call(&self) -> &'static str {
        self.call
    }

    /// Whether the call reported success but handed back a NULL pointer.
    pub(super) fn returned_null(&self) -> bool {
        self.failure == Failure::Null
    }

    /// The `CUresult`, when the call ran.
    pub(super) fn code(&self) -> Option<CuResult> {
        match self.failure {
            Failure::Status { code, .. } => Some(code),
            Failure::Missing { .. } | Failure::Null => None,
        }
    }

    /// `"CUDA_ERROR_OUT_OF_MEMORY: out of memory"`; for a missing entry point, the whole
    /// message.
    pub(super) fn description(&self) -> String {
        match &self.failure {
            Failure::Status { description, .. } => description.clone(),
            Failure::Missing { .. } | Failure::Null => self.to_string(),
        }
    }

    /// `MemoryError::CudaDriver { message: "<call> (<purpose>) failed: …" }`, for a call made on behalf
    /// of something the message should name (`staging buffer`).
    pub(super) fn during(&self, purpose: &str) -> MemoryError {
        match &self.failure {
            Failure::Status { description, .. } => {
                MemoryError::CudaDriver { message: format!("{} ({purpose}) failed: {description}", self.call) }
            }
            Failure::Missing { .. } => MemoryError::CudaDriver { message: self.to_string() },
            Failure::Null => MemoryError::CudaDriver { message: format!("{} ({purpose}) returned NULL", self.call) },
        }
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            Failure::Status { description, .. } => write!(f, "{} failed: {description}", self.call),
            Failure::Missing { needed } => write!(f, "this CUDA driver has no {}: {needed}", self.call),
            Failure::Null => write!(f, "{} returned NULL", self.call),
        }
    }
}

impl From<DriverError> for MemoryError {
    fn from(e: DriverError) -> Self {
        MemoryError::CudaDriver { message: e.to_string() }
    }
}

/// The loaded driver. Made once per process by [`open`].
pub(super) struct Driver {
    table: Table,
}

static DRIVER: OnceLock<Driver> = OnceLock::new();

/// The driver library's soname, as NVIDIA installs it.
const LIBCUDA: &str = "libcuda.so.1";

fn no_driver_message() -> String {
    // Most machines that meet this have no NVIDIA hardware: say so briefly, not as a fault.
    format!(
        "no NVIDIA driver here ({LIBCUDA} not found; NVIDIA GPUs need it, on LD_LIBRARY_PATH if it is \
         not in a system folder{})",
        crate::provider::system_lib::skipped_note()
    )
}

/// The driver library, loaded once per process from the absolute path the loader's search
/// would find (`system_lib::find`), or `None` where there is none.
fn driver_library() -> Option<&'static libloading::Library> {
    static LIBRARY: OnceLock<Option<libloading::Library>> = OnceLock::new();
    LIBRARY
        .get_or_init(|| {
            let path = crate::provider::system_lib::find(LIBCUDA)?;
            // SAFETY: loading libcuda runs only its own initialisers, as any CUDA program does.
            unsafe { libloading::Library::new(path) }.ok()
        })
        .as_ref()
}

/// Whether a CUDA driver library is there (it is then loaded, and stays so).
pub(super) fn library_present() -> bool {
    driver_library().is_some()
}

/// Loads libcuda (once per process) and resolves its entry points. `Err` when there is no
/// driver library or it lacks a required entry point; never a panic.
pub(super) fn open() -> crate::error::Result<&'static Driver> {
    if let Some(d) = DRIVER.get() {
        return Ok(d);
    }
    let lib = driver_library().ok_or_else(|| MemoryError::CudaDriver { message: no_driver_message() })?;
    // SAFETY: `lib` is the CUDA driver library, found by its soname.
    let table = unsafe { Table::resolve(lib) }.map_err(|e| MemoryError::CudaDriver {
        message: format!("{e}; the NVIDIA driver is too old for this addon (CUDA 12 or newer needed)"),
    })?;
    Ok(DRIVER.get_or_init(|| Driver { table }))
}

/// A `CUcontext` this module retained or created. An identifier, freely copied: it stays
/// valid until its owner gives it back with the `unsafe` [`Driver::primary_ctx_release`] or
/// [`Driver::ctx_destroy`], whose contracts forbid any use of it afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ContextHandle(CUcontext);

// SAFETY: CUDA driver handles are plain identifiers valid on every thread of the process;
// the driver API is thread-safe, and every call that needs the context makes it current on
// the calling thread first (`CurrentContext`).
unsafe impl Send for ContextHandle {}
// SAFETY: as above; the handle itself is never mutated.
unsafe impl Sync for ContextHandle {}

impl ContextHandle {
    /// The handle as the driver reports it in pointer attributes.
    pub(super) fn as_raw(self) -> usize {
        self.0 as usize
    }
}

/// What `cuPointerGetAttributes` says of an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PointerAttributes {
    /// The owning context (`CU_POINTER_ATTRIBUTE_CONTEXT`), 0 for memory the driver does not know.
    pub(super) context: usize,
    /// `CU_POINTER_ATTRIBUTE_MEMORY_TYPE` (a `CUmemorytype`).
    pub(super) memory_type: u32,
    /// `CU_POINTER_ATTRIBUTE_IS_MANAGED`.
    pub(super) is_managed: bool,
}

/// Where managed memory should live or be moved (`CUmemLocation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MemLocation {
    Device(CUdevice),
    Host,
}

impl MemLocation {
    fn raw(self) -> CUmemLocation {
        match self {
            MemLocation::Device(device) => {
                CUmemLocation { type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: device }
            }
            // The id is ignored for the host.
            MemLocation::Host => CUmemLocation { type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST, id: 0 },
        }
    }
}

/// An IPC handle of device memory (`CUipcMemHandle`): 64 opaque bytes another process of
/// the same machine opens with [`CurrentContext::ipc_open_mem_handle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct IpcMemHandle([u8; CU_IPC_HANDLE_SIZE as usize]);

impl IpcMemHandle {
    /// Bytes of a handle.
    pub(super) const LEN: usize = CU_IPC_HANDLE_SIZE as usize;

    /// The handle's bytes, to send to another process.
    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// A handle from bytes another process sent; `None` unless exactly 64 bytes.
    pub(super) fn from_bytes(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(IpcMemHandle)
    }

    fn from_raw(raw: &CUipcMemHandle) -> Self {
        IpcMemHandle(raw.reserved.map(|b| b as u8))
    }

    fn raw(&self) -> CUipcMemHandle {
        CUipcMemHandle { reserved: self.0.map(|b| b as c_char) }
    }
}

impl Driver {
    /// Whether this driver has the IPC entry points (get, open, close a handle).
    pub(super) fn has_ipc(&self) -> bool {
        let table = &self.table;
        table.cuIpcGetMemHandle.is_some() && table.cuIpcOpenMemHandle.is_some() && table.cuIpcCloseMemHandle.is_some()
    }

    /// `Ok(())` for `CUDA_SUCCESS`, else the [`DriverError`] of `call`: the one place a
    /// status code becomes an error.
    fn status(&self, call: &'static str, code: CuResult) -> DriverResult<()> {
        if code == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(DriverError { call, failure: Failure::Status { code, description: self.describe(code) } })
        }
    }

    /// `"CUDA_ERROR_OUT_OF_MEMORY: out of memory"`, or `"CUDA error 12345"` for a code the
    /// driver cannot name.
    fn describe(&self, code: CuResult) -> String {
        let mut name: *const c_char = std::ptr::null();
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: both functions accept any code and only write a pointer to a static,
        // NUL-terminated string into the out-parameter (or leave it NULL on failure).
        let (rn, rt) =
            unsafe { ((self.table.cuGetErrorName)(code, &mut name), (self.table.cuGetErrorString)(code, &mut text)) };
        // SAFETY: on success the pointers point to static NUL-terminated strings of the driver.
        let name = (rn == CUDA_SUCCESS && !name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_string_lossy());
        // SAFETY: as above.
        let text = (rt == CUDA_SUCCESS && !text.is_null()).then(|| unsafe { CStr::from_ptr(text) }.to_string_lossy());
        super::logic::format_cu_error(code, name.as_deref(), text.as_deref())
    }

    /// `cuInit(0)`; may be called any number of times.
    pub(super) fn init(&self) -> DriverResult<()> {
        // SAFETY: cuInit takes flags (must be 0).
        self.status("cuInit", unsafe { (self.table.cuInit)(0) })
    }

    /// `cuDriverGetVersion`: `1000 * major + 10 * minor`.
    pub(super) fn driver_version(&self) -> DriverResult<i32> {
        let mut version: c_int = 0;
        // SAFETY: valid out-pointer.
        self.status("cuDriverGetVersion", unsafe { (self.table.cuDriverGetVersion)(&mut version) })?;
        Ok(version)
    }

    /// `cuDeviceGetCount`; the driver must be initialised.
    pub(super) fn device_count(&self) -> DriverResult<i32> {
        let mut count: c_int = 0;
        // SAFETY: valid out-pointer; the driver returns an error code when uninitialised.
        self.status("cuDeviceGetCount", unsafe { (self.table.cuDeviceGetCount)(&mut count) })?;
        Ok(count)
    }

    /// `cuDeviceGet`: the device of an ordinal.
    pub(super) fn device(&self, ordinal: i32) -> DriverResult<CUdevice> {
        let mut device: CUdevice = 0;
        // SAFETY: valid out-pointer; the driver checks the ordinal.
        self.status("cuDeviceGet", unsafe { (self.table.cuDeviceGet)(&mut device, ordinal) })?;
        Ok(device)
    }

    /// `cuDeviceGetName`.
    pub(super) fn device_name(&self, device: CUdevice) -> DriverResult<String> {
        let mut buf = [0u8; 256];
        // SAFETY: the buffer holds `len` bytes; the driver writes a NUL-terminated name of
        // at most `len` bytes.
        let r = unsafe { (self.table.cuDeviceGetName)(buf.as_mut_ptr().cast(), buf.len() as c_int, device) };
        self.status("cuDeviceGetName", r)?;
        Ok(CStr::from_bytes_until_nul(&buf)
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_else(|_| String::from_utf8_lossy(&buf).into_owned()))
    }

    /// `cuDeviceTotalMem`: bytes of device memory.
    pub(super) fn device_total_mem(&self, device: CUdevice) -> DriverResult<usize> {
        let mut total: usize = 0;
        // SAFETY: valid out-pointer; the driver checks the device handle.
        self.status("cuDeviceTotalMem", unsafe { (self.table.cuDeviceTotalMem)(&mut total, device) })?;
        Ok(total)
    }

    /// `cuDeviceGetAttribute`.
    pub(super) fn device_attribute(&self, device: CUdevice, attribute: CUdevice_attribute) -> DriverResult<i32> {
        let mut value: c_int = 0;
        // SAFETY: valid out-pointer; `attribute` is a CUdevice_attribute value and the
        // driver checks the device handle.
        let r = unsafe { (self.table.cuDeviceGetAttribute)(&mut value, attribute as c_int, device) };
        self.status("cuDeviceGetAttribute", r)?;
        Ok(value)
    }

    /// `cuDeviceGetAttribute` of an attribute by its number, for one cudarc's enum names
    /// differently across CUDA versions.
    pub(super) fn device_attribute_code(&self, device: CUdevice, attribute: c_int) -> DriverResult<i32> {
        let mut value: c_int = 0;
        // SAFETY: valid out-pointer; the driver checks the attribute and the device handle.
        let r = unsafe { (self.table.cuDeviceGetAttribute)(&mut value, attribute, device) };
        self.status("cuDeviceGetAttribute", r)?;
        Ok(value)
    }

    /// `cuDeviceCanAccessPeer`: whether contexts of `device` can access memory of `peer`.
    pub(super) fn device_can_access_peer(&self, device: CUdevice, peer: CUdevice) -> DriverResult<bool> {
        let call = self
            .table
            .cuDeviceCanAccessPeer
            .ok_or(DriverError::missing("cuDeviceCanAccessPeer", "cannot ask about peer access"))?;
        let mut can: c_int = 0;
        // SAFETY: valid out-pointer; the driver checks both device handles.
        self.status("cuDeviceCanAccessPeer", unsafe { call(&mut can, device, peer) })?;
        Ok(can != 0)
    }

    /// `cuDeviceGetP2PAttribute`: an attribute (`P2P_*`) of the link from `device` to `peer`.
    pub(super) fn device_p2p_attribute(&self, attribute: c_int, device: CUdevice, peer: CUdevice) -> DriverResult<i32> {
        let call = self
            .table
            .cuDeviceGetP2PAttribute
            .ok_or(DriverError::missing("cuDeviceGetP2PAttribute", "cannot ask about peer atomics"))?;
        let mut value: c_int = 0;
        // SAFETY: valid out-pointer; `attribute` is a CUdevice_P2PAttribute value and the
        // driver checks both device handles.
        self.status("cuDeviceGetP2PAttribute", unsafe { call(&mut value, attribute, device, peer) })?;
        Ok(value)
    }

    /// `cuDevicePrimaryCtxRetain`: the device's primary context, retained once more. It is
    /// not made current.
    pub(super) fn primary_ctx_retain(&self, device: CUdevice) -> DriverResult<ContextHandle> {
        let mut ctx: CUcontext = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the driver checks the device handle.
        self.status("cuDevicePrimaryCtxRetain", unsafe { (self.table.cuDevicePrimaryCtxRetain)(&mut ctx, device) })?;
        Ok(ContextHandle(ctx))
    }

    /// `cuDevicePrimaryCtxRelease`.
    ///
    /// # Safety
    /// Balances one successful [`Driver::primary_ctx_retain`] of `device`; the handle it
    /// returned, and every [`Stream`] and [`PinnedHost`] made with it current, are not used
    /// afterwards.
    pub(super) unsafe fn primary_ctx_release(&self, device: CUdevice) -> DriverResult<()> {
        // SAFETY: forwarded to the caller (see `# Safety`).
        self.status("cuDevicePrimaryCtxRelease", unsafe { (self.table.cuDevicePrimaryCtxRelease)(device) })
    }

    /// `cuCtxCreate(SCHED_AUTO | MAP_HOST)`: a new context of `device`, left current on no
    /// thread (cuCtxCreate pushes it on this thread; it is popped again).
    pub(super) fn ctx_create(&self, device: CUdevice) -> DriverResult<ContextHandle> {
        let create =
            self.table.cuCtxCreate.ok_or(DriverError::missing("cuCtxCreate_v2", "cannot make a separate context"))?;
        let mut ctx: CUcontext = std::ptr::null_mut();
        let flags = CUctx_flags::CU_CTX_SCHED_AUTO as c_uint | CUctx_flags::CU_CTX_MAP_HOST as c_uint;
        // SAFETY: valid out-pointer, documented flags; the driver checks the device handle.
        self.status("cuCtxCreate", unsafe { create(&mut ctx, flags, device) })?;
        let mut popped: CUcontext = std::ptr::null_mut();
        // SAFETY: pops the context cuCtxCreate just pushed on this thread.
        let popped = self.status("cuCtxPopCurrent", unsafe { (self.table.cuCtxPopCurrent)(&mut popped) });
        if let Err(e) = popped {
            // SAFETY: the context was made just above and nothing else holds it.
            let _ = unsafe { self.ctx_destroy(ContextHandle(ctx)) };
            return Err(e);
        }
        Ok(ContextHandle(ctx))
    }

    /// `cuCtxDestroy`.
    ///
    /// # Safety
    /// `ctx` came from [`Driver::ctx_create`] and is destroyed once; it is current on no
    /// thread, and neither it nor any [`Stream`] or [`PinnedHost`] made with it current is
    /// used afterwards.
    pub(super) unsafe fn ctx_destroy(&self, ctx: ContextHandle) -> DriverResult<()> {
        // SAFETY: forwarded to the caller (see `# Safety`).
        self.status("cuCtxDestroy", unsafe { (self.table.cuCtxDestroy)(ctx.0) })
    }

    /// Makes `ctx` current on this thread until the returned guard is dropped.
    pub(super) fn push(&'static self, ctx: ContextHandle) -> DriverResult<CurrentContext> {
        // SAFETY: `ctx` is live (see `ContextHandle`).
        self.status("cuCtxPushCurrent", unsafe { (self.table.cuCtxPushCurrent)(ctx.0) })?;
        Ok(self.guard(ctx, true))
    }

    /// The guard of `ctx`, current on this thread; `pushed`: it pops `ctx` when dropped.
    fn guard(&'static self, ctx: ContextHandle, pushed: bool) -> CurrentContext {
        CurrentContext { driver: self, context: ctx, pushed, _not_send: std::marker::PhantomData }
    }

    /// `cuCtxGetCurrent`: the context current on this thread (null: none).
    pub(super) fn current_raw(&self) -> DriverResult<CUcontext> {
        let mut current: CUcontext = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        self.status("cuCtxGetCurrent", unsafe { (self.table.cuCtxGetCurrent)(&mut current) })?;
        Ok(current)
    }

    /// Makes `ctx` current on this thread for the returned guard's life, as [`Driver::push`]
    /// does, but with no push or pop where `ctx` already is current, and, where no context
    /// is current and `stays` is set, makes it current and leaves it so: the next call on
    /// this thread then finds it current, as the CUDA runtime leaves a device's primary
    /// context after a call. A context another library made current is restored on drop,
    /// as with `push`. `stays` only for a context that is never destroyed while the
    /// process may still call the driver (a device's primary context).
    pub(super) fn enter(&'static self, ctx: ContextHandle, stays: bool) -> DriverResult<CurrentContext> {
        let current = self.current_raw()?;
        if current == ctx.0 {
            return Ok(self.guard(ctx, false));
        }
        if current.is_null() && stays {
            // SAFETY: `ctx` is live (see `ContextHandle`); the thread's stack is empty.
            self.status("cuCtxSetCurrent", unsafe { (self.table.cuCtxSetCurrent)(ctx.0) })?;
            return Ok(self.guard(ctx, false));
        }
        self.push(ctx)
    }
}

/// Keeps a context current on this thread for its lifetime: `cuCtxPushCurrent` on
/// creation ([`Driver::push`]), `cuCtxPopCurrent` on drop, so whatever the thread had
/// current before (another addon's context, or none) is restored. Calls arrive on any
/// thread (Node's main thread, worker threads, libuv's pool), so every driver call that
/// needs a context is a method of this guard.
pub(super) struct CurrentContext {
    driver: &'static Driver,
    context: ContextHandle,
    /// Whether this guard pushed the context (and so pops it); see [`Driver::enter`].
    pushed: bool,
    // Not Send: the push and the pop must happen on the same thread.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for CurrentContext {
    fn drop(&mut self) {
        if !self.pushed {
            return;
        }
        let mut popped: CUcontext = std::ptr::null_mut();
        // SAFETY: pops the context this guard pushed on this same thread (the guard is
        // !Send); a failure leaves nothing to clean up and is ignored (Drop never panics).
        let _ = unsafe { (self.driver.table.cuCtxPopCurrent)(&mut popped) };
    }
}

impl CurrentContext {
    fn table(&self) -> &'static Table {
        &self.driver.table
    }

    /// The driver this guard called.
    pub(super) fn driver(&self) -> &'static Driver {
        self.driver
    }

    /// The context this guard made current.
    pub(super) fn context(&self) -> ContextHandle {
        self.context
    }

    /// `cuMemGetInfo`: `(free, total)` bytes of the current context's device.
    pub(super) fn mem_info(&self) -> DriverResult<(u64, u64)> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: two valid out-pointers; a context is current.
        self.driver.status("cuMemGetInfo", unsafe { (self.table().cuMemGetInfo)(&mut free, &mut total) })?;
        Ok((free as u64, total as u64))
    }

    /// `cuMemAlloc`: `size` bytes of device memory (never 0).
    pub(super) fn mem_alloc(&self, size: usize) -> DriverResult<CUdeviceptr> {
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: valid out-pointer; a context is current.
        self.driver.status("cuMemAlloc", unsafe { (self.table().cuMemAlloc)(&mut ptr, size) })?;
        non_null("cuMemAlloc", ptr)
    }

    /// `cuMemHostAlloc`: `size` bytes of pinned host memory (`CU_MEMHOSTALLOC_*` flags).
    pub(super) fn mem_host_alloc(&self, size: usize, flags: c_uint) -> DriverResult<NonNull<c_void>> {
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the driver checks the flags; a context is current.
        self.driver.status("cuMemHostAlloc", unsafe { (self.table().cuMemHostAlloc)(&mut ptr, size, flags) })?;
        NonNull::new(ptr).ok_or(DriverError { call: "cuMemHostAlloc", failure: Failure::Null })
    }

    /// `cuMemAllocManaged`: `size` bytes of managed memory (never 0).
    pub(super) fn mem_alloc_managed(&self, size: usize, attach: CUmemAttach_flags) -> DriverResult<CUdeviceptr> {
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: valid out-pointer and a documented flag; a context is current.
        let r = unsafe { (self.table().cuMemAllocManaged)(&mut ptr, size, attach as c_uint) };
        self.driver.status("cuMemAllocManaged", r)?;
        non_null("cuMemAllocManaged", ptr)
    }

    /// `cuMemFree`.
    ///
    /// # Safety
    /// `ptr` came from [`CurrentContext::mem_alloc`] or [`CurrentContext::mem_alloc_managed`]
    /// in this context, is freed once, and no access to it is in flight or follows.
    pub(super) unsafe fn mem_free(&self, ptr: CUdeviceptr) -> DriverResult<()> {
        // SAFETY: forwarded to the caller (see `# Safety`).
        self.driver.status("cuMemFree", unsafe { (self.table().cuMemFree)(ptr) })
    }

    /// `cuMemFreeHost`.
    ///
    /// # Safety
    /// `ptr` came from [`CurrentContext::mem_host_alloc`], is freed once, and no access to
    /// it is in flight or follows.
    pub(super) unsafe fn mem_free_host(&self, ptr: *mut c_void) -> DriverResult<()> {
        // SAFETY: forwarded to the caller (see `# Safety`).
        self.driver.status("cuMemFreeHost", unsafe { (self.table().cuMemFreeHost)(ptr) })
    }

    /// `cuStreamCreate(NON_BLOCKING)`: a stream of the current context.
    pub(super) fn stream_create(&self) -> DriverResult<Stream> {
        let mut stream: CUstream = std::ptr::null_mut();
        // SAFETY: valid out-pointer and a documented flag; a context is current.
        let r = unsafe { (self.table().cuStreamCreate)(&mut stream, CUstream_flags::CU_STREAM_NON_BLOCKING as c_uint) };
        self.driver.status("cuStreamCreate", r)?;
        Ok(Stream { driver: self.driver, context: self.context, raw: stream })
    }

    /// `cuStreamSynchronize`: waits for everything queued on `stream`.
    pub(super) fn synchronize(&self, stream: &Stream) -> DriverResult<()> {
        // SAFETY: a live stream (destroyed only when the `Stream` drops); a context is current.
        self.driver.status("cuStreamSynchronize", unsafe { (self.table().cuStreamSynchronize)(stream.raw) })
    }

    /// `cuMemcpyAsync`: queues a copy of `size` bytes on `stream`; with unified addressing
    /// the driver infers each side's memory from its address.
    ///
    /// # Safety
    /// `src..src+size` is readable and `dst..dst+size` writable memory the driver can
    /// reach (USM of this context, or live host memory), nothing else touches `dst..`
    /// meanwhile, and both stay so until `stream` has been synchronised.
    pub(super) unsafe fn memcpy_async(
        &self,
        dst: CUdeviceptr,
        src: CUdeviceptr,
        size: usize,
        stream: &Stream,
    ) -> DriverResult<()> {
        // SAFETY: forwarded to the caller (see `# Safety`); the stream is live.
        self.driver.status("cuMemcpyAsync", unsafe { (self.table().cuMemcpyAsync)(dst, src, size, stream.raw) })
    }

    /// `cuMemsetD8Async`: queues a fill of `size` bytes with `value` on `stream`.
    ///
    /// # Safety
    /// `dst..dst+size` is device-accessible memory of this context that nothing else
    /// touches meanwhile, and stays so until `stream` has been synchronised.
    pub(super) unsafe fn memset_d8_async(
        &self,
        dst: CUdeviceptr,
        value: u8,
        size: usize,
        stream: &Stream,
    ) -> DriverResult<()> {
        // SAFETY: forwarded to the caller (see `# Safety`); the stream is live.
        self.driver.status("cuMemsetD8Async", unsafe { (self.table().cuMemsetD8Async)(dst, value, size, stream.raw) })
    }

    /// Queues one step of a fill (`FillStep`) of `count` elements at `dst` on `stream`.
    ///
    /// # Safety
    /// The bytes of `count` copies of the pattern the step belongs to, from `dst`, are
    /// device-accessible memory of this context that nothing else touches meanwhile, and
    /// stay so until `stream` has been synchronised.
    pub(super) unsafe fn memset_step_async(
        &self,
        dst: CUdeviceptr,
        step: FillStep,
        count: usize,
        stream: &Stream,
    ) -> DriverResult<()> {
        let t = self.table();
        let s = stream.raw;
        // Each arm: the call's range is the caller's (see `# Safety`), the stream is live,
        // and the element widths and strides are those `fill_steps` checked against the
        // address's alignment.
        let (name, status) = match step {
            FillStep::Bytes { value, units } => {
                // SAFETY: as said above the match.
                ("cuMemsetD8Async", unsafe { (t.cuMemsetD8Async)(dst, value, units * count, s) })
            }
            FillStep::Halves { value, units } => {
                // SAFETY: as said above the match.
                ("cuMemsetD16Async", unsafe { (t.cuMemsetD16Async)(dst, value, units * count, s) })
            }
            FillStep::Words { value, units } => {
                // SAFETY: as said above the match.
                ("cuMemsetD32Async", unsafe { (t.cuMemsetD32Async)(dst, value, units * count, s) })
            }
            FillStep::StridedByte { offset, value, pitch, units } => {
                let at = dst + offset as CUdeviceptr;
                // SAFETY: as said above the match.
                ("cuMemsetD2D8Async", unsafe { (t.cuMemsetD2D8Async)(at, pitch, value, 1, units * count, s) })
            }
            FillStep::StridedWord { offset, value, pitch, units } => {
                let at = dst + offset as CUdeviceptr;
                // SAFETY: as said above the match.
                ("cuMemsetD2D32Async", unsafe { (t.cuMemsetD2D32Async)(at, pitch, value, 1, units * count, s) })
            }
        };
        self.driver.status(name, status)
    }

    /// `cuPointerGetAttributes(CONTEXT, MEMORY_TYPE, IS_MANAGED)` of any address.
    pub(super) fn pointer_attributes(&self, ptr: CUdeviceptr) -> DriverResult<PointerAttributes> {
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
        let r = unsafe { (self.table().cuPointerGetAttributes)(3, attrs.as_mut_ptr(), data.as_mut_ptr(), ptr) };
        self.driver.status("cuPointerGetAttributes", r)?;
        Ok(PointerAttributes { context: values[0] as usize, memory_type: values[1] as u32, is_managed: values[2] != 0 })
    }

    /// `cuMemGetAddressRange`: `(base, size)` of the allocation holding `ptr`.
    pub(super) fn mem_get_address_range(&self, ptr: CUdeviceptr) -> DriverResult<(CUdeviceptr, usize)> {
        let (mut base, mut size): (CUdeviceptr, usize) = (0, 0);
        // SAFETY: valid out-pointers; the driver checks `ptr` and returns an error code for
        // an address it does not know.
        let r = unsafe { (self.table().cuMemGetAddressRange)(&mut base, &mut size, ptr) };
        self.driver.status("cuMemGetAddressRange", r)?;
        Ok((base, size))
    }
}

impl CurrentContext {
    /// `cuMemHostRegister`: pins (page-locks) an existing host range (`host_register::*` flags).
    ///
    /// # Safety
    /// `ptr..ptr+size` is host memory mapped for the whole registration, and is
    /// unregistered ([`CurrentContext::mem_host_unregister`]) before it is unmapped or freed.
    pub(super) unsafe fn mem_host_register(&self, ptr: *mut c_void, size: usize, flags: c_uint) -> DriverResult<()> {
        let call = self
            .table()
            .cuMemHostRegister
            .ok_or(DriverError::missing("cuMemHostRegister_v2", "cannot register host memory"))?;
        // SAFETY: forwarded to the caller (see `# Safety`); the driver checks the flags.
        self.driver.status("cuMemHostRegister", unsafe { call(ptr, size, flags) })
    }

    /// `cuMemHostUnregister`.
    ///
    /// # Safety
    /// `ptr` is the start of a range registered with [`CurrentContext::mem_host_register`],
    /// unregistered once, with no device access to it in flight.
    pub(super) unsafe fn mem_host_unregister(&self, ptr: *mut c_void) -> DriverResult<()> {
        let call = self
            .table()
            .cuMemHostUnregister
            .ok_or(DriverError::missing("cuMemHostUnregister", "cannot unregister host memory"))?;
        // SAFETY: forwarded to the caller (see `# Safety`).
        self.driver.status("cuMemHostUnregister", unsafe { call(ptr) })
    }

    /// `cuIpcGetMemHandle`: a handle of the `cuMemAlloc` allocation holding `ptr`, for
    /// another process.
    pub(super) fn ipc_get_mem_handle(&self, ptr: CUdeviceptr) -> DriverResult<IpcMemHandle> {
        let call = self
            .table()
            .cuIpcGetMemHandle
            .ok_or(DriverError::missing("cuIpcGetMemHandle", "cannot export device memory"))?;
        let mut raw = IpcMemHandle([0; CU_IPC_HANDLE_SIZE as usize]).raw();
        // SAFETY: valid out-pointer to a CUipcMemHandle; the driver checks `ptr`.
        self.driver.status("cuIpcGetMemHandle", unsafe { call(&mut raw, ptr) })?;
        Ok(IpcMemHandle::from_raw(&raw))
    }

    /// `cuIpcOpenMemHandle`: maps the memory another process exported into this context
    /// (flags: 0 or [`IPC_MEM_LAZY_ENABLE_PEER_ACCESS`]); the address it returns is closed
    /// with [`CurrentContext::ipc_close_mem_handle`].
    pub(super) fn ipc_open_mem_handle(&self, handle: &IpcMemHandle, flags: c_uint) -> DriverResult<CUdeviceptr> {
        let call = self
            .table()
            .cuIpcOpenMemHandle
            .ok_or(DriverError::missing("cuIpcOpenMemHandle_v2", "cannot import device memory"))?;
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: valid out-pointer; the driver checks the handle's bytes and the flags.
        self.driver.status("cuIpcOpenMemHandle", unsafe { call(&mut ptr, handle.raw(), flags) })?;
        Ok(ptr)
    }

    /// `cuIpcCloseMemHandle`: unmaps memory opened with [`CurrentContext::ipc_open_mem_handle`].
    ///
    /// # Safety
    /// `ptr` was returned by `ipc_open_mem_handle` in this context, is closed once, and no
    /// access to it is in flight or follows.
    pub(super) unsafe fn ipc_close_mem_handle(&self, ptr: CUdeviceptr) -> DriverResult<()> {
        let call = self
            .table()
            .cuIpcCloseMemHandle
            .ok_or(DriverError::missing("cuIpcCloseMemHandle", "cannot close imported device memory"))?;
        // SAFETY: forwarded to the caller (see `# Safety`).
        self.driver.status("cuIpcCloseMemHandle", unsafe { call(ptr) })
    }

    /// `cuMemPrefetchAsync` (the `CUmemLocation` form): queues a migration of managed
    /// memory to `location` on `stream`.
    ///
    /// # Safety
    /// `ptr..ptr+size` is managed memory that stays allocated until `stream` has been
    /// synchronised.
    pub(super) unsafe fn mem_prefetch_async(
        &self,
        ptr: CUdeviceptr,
        size: usize,
        location: MemLocation,
        stream: &Stream,
    ) -> DriverResult<()> {
        let call = self
            .table()
            .cuMemPrefetchAsync
            .ok_or(DriverError::missing("cuMemPrefetchAsync_v2", "CUDA 12.2 or newer is needed to prefetch"))?;
        // SAFETY: forwarded to the caller (see `# Safety`); flags must be 0; the stream is live.
        self.driver.status("cuMemPrefetchAsync", unsafe { call(ptr, size, location.raw(), 0, stream.raw) })
    }

    /// `cuMemAdvise` (the `CUmemLocation` form): a usage hint for managed memory. It
    /// changes where pages live, never their contents; the driver checks the range.
    pub(super) fn mem_advise(
        &self,
        ptr: CUdeviceptr,
        size: usize,
        advice: CUmem_advise,
        location: MemLocation,
    ) -> DriverResult<()> {
        let call = self
            .table()
            .cuMemAdvise
            .ok_or(DriverError::missing("cuMemAdvise_v2", "CUDA 12.2 or newer is needed for memory advice"))?;
        // SAFETY: `advice` is a CUmem_advise value and the location a valid CUmemLocation;
        // the driver returns an error code for a range that is not managed memory.
        self.driver.status("cuMemAdvise", unsafe { call(ptr, size, advice as c_uint, location.raw()) })
    }

    /// `cuCtxEnablePeerAccess`: lets the current context access memory of `peer`. Already
    /// enabled is success.
    pub(super) fn ctx_enable_peer_access(&self, peer: ContextHandle) -> DriverResult<()> {
        let call = self
            .table()
            .cuCtxEnablePeerAccess
            .ok_or(DriverError::missing("cuCtxEnablePeerAccess", "cannot enable peer access"))?;
        // SAFETY: `peer` is live (see `ContextHandle`); flags must be 0.
        match self.driver.status("cuCtxEnablePeerAccess", unsafe { call(peer.0, 0) }) {
            Err(e) if e.code() == Some(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) => Ok(()),
            other => other,
        }
    }

    /// `cuCtxDisablePeerAccess`: ends the current context's access to memory of `peer`.
    /// Not enabled is success.
    pub(super) fn ctx_disable_peer_access(&self, peer: ContextHandle) -> DriverResult<()> {
        let call = self
            .table()
            .cuCtxDisablePeerAccess
            .ok_or(DriverError::missing("cuCtxDisablePeerAccess", "cannot disable peer access"))?;
        // SAFETY: `peer` is live (see `ContextHandle`).
        match self.driver.status("cuCtxDisablePeerAccess", unsafe { call(peer.0) }) {
            Err(e) if e.code() == Some(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED) => Ok(()),
            other => other,
        }
    }

    /// `cuMemcpyPeerAsync`: queues on `stream` (of the current context) a copy of `size`
    /// bytes from `src` in `src_context` to `dst` in `dst_context`: device to device where
    /// peer access is enabled (or both are one device), else staged by the driver through
    /// host memory.
    ///
    /// # Safety
    /// `src..src+size` is readable device memory of `src_context` and `dst..dst+size`
    /// writable device memory of `dst_context`, both valid and touched by nothing else
    /// until `stream` has been synchronised.
    pub(super) unsafe fn memcpy_peer_async(
        &self,
        dst: CUdeviceptr,
        dst_context: ContextHandle,
        src: CUdeviceptr,
        src_context: ContextHandle,
        size: usize,
        stream: &Stream,
    ) -> DriverResult<()> {
        let call = self
            .table()
            .cuMemcpyPeerAsync
            .ok_or(DriverError::missing("cuMemcpyPeerAsync", "cannot copy between devices"))?;
        // SAFETY: forwarded to the caller (see `# Safety`); both contexts are live (see
        // `ContextHandle`) and the stream is live.
        self.driver
            .status("cuMemcpyPeerAsync", unsafe { call(dst, dst_context.0, src, src_context.0, size, stream.raw) })
    }
}

/// `ptr`, or the error of a `call` that succeeded but handed back NULL.
fn non_null(call: &'static str, ptr: CUdeviceptr) -> DriverResult<CUdeviceptr> {
    if ptr == 0 {
        Err(DriverError { call, failure: Failure::Null })
    } else {
        Ok(ptr)
    }
}

/// A non-blocking `CUstream`, destroyed (with its context pushed) when dropped. Its
/// context must outlive it (see [`Driver::ctx_destroy`]).
pub(super) struct Stream {
    driver: &'static Driver,
    context: ContextHandle,
    raw: CUstream,
}

// SAFETY: a stream may be used from any thread with its context current (every call on it
// is a method of `CurrentContext`); the driver API is thread-safe.
unsafe impl Send for Stream {}
// SAFETY: as above; the handle itself is never mutated.
unsafe impl Sync for Stream {}

impl Stream {
    /// The `CUstream` as an address (for other addons: `include/dpctl_memory.h`).
    pub(super) fn as_raw(&self) -> usize {
        self.raw as usize
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Ok(_current) = self.driver.push(self.context) {
            // SAFETY: the stream was made by `stream_create` and is destroyed once; work
            // still queued (none: every user synchronises) would finish first.
            let _ = unsafe { (self.driver.table.cuStreamDestroy)(self.raw) };
        }
    }
}

/// `len` bytes of pinned host memory (`cuMemHostAlloc`), freed (with its context pushed)
/// when dropped. Its context must outlive it (see [`Driver::ctx_destroy`]).
pub(super) struct PinnedHost {
    driver: &'static Driver,
    context: ContextHandle,
    ptr: NonNull<u8>,
}

// SAFETY: pinned memory belongs to the process, not a thread; sharing a `PinnedHost` hands
// out only its address, and writing through that is `unsafe` for whoever does it.
unsafe impl Send for PinnedHost {}
// SAFETY: as above.
unsafe impl Sync for PinnedHost {}

impl PinnedHost {
    /// Allocates `len` bytes with `CU_MEMHOSTALLOC_*` `flags` in the current context.
    pub(super) fn new(current: &CurrentContext, len: usize, flags: c_uint) -> DriverResult<PinnedHost> {
        let ptr = current.mem_host_alloc(len, flags)?.cast::<u8>();
        Ok(PinnedHost { driver: current.driver, context: current.context, ptr })
    }

    /// The first byte; the `len` bytes asked for are valid behind it while `self` lives.
    pub(super) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for PinnedHost {
    fn drop(&mut self) {
        if let Ok(current) = self.driver.push(self.context) {
            // SAFETY: the buffer came from cuMemHostAlloc in `new` and is freed once; its
            // owner has synchronised every copy through it.
            let _ = unsafe { current.mem_free_host(self.ptr.as_ptr().cast()) };
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_library_without_the_driver_api_is_refused_by_name() {
        // SAFETY: libc is already loaded in this process; loading it again runs no initialiser.
        let lib = unsafe { libloading::Library::new("libc.so.6") }.unwrap();
        // SAFETY: libc has no cuInit, so resolution stops at the first symbol; no function
        // pointer is ever called.
        let Err(e) = (unsafe { Table::resolve(&lib) }) else { panic!("libc resolved as the CUDA driver") };
        assert!(e.starts_with("the CUDA driver library has no symbol cuInit"), "{e}");
    }

    #[test]
    fn driver_errors_say_the_call_and_the_driver_text() {
        let failed = DriverError {
            call: "cuMemAlloc",
            failure: Failure::Status { code: 2, description: "CUDA_ERROR_OUT_OF_MEMORY: out of memory".into() },
        };
        assert_eq!(failed.to_string(), "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY: out of memory");
        assert_eq!(failed.call(), "cuMemAlloc");
        assert_eq!(failed.code(), Some(2));
        assert_eq!(failed.description(), "CUDA_ERROR_OUT_OF_MEMORY: out of memory");
        assert_eq!(
            failed.during("staging buffer"),
            MemoryError::CudaDriver {
                message: "cuMemAlloc (staging buffer) failed: CUDA_ERROR_OUT_OF_MEMORY: out of memory".into()
            }
        );
        let e: MemoryError = failed.into();
        assert_eq!(e.code(), "ERR_CUDA_DRIVER");

        let missing = DriverError::missing("cuMemAdvise_v2", "CUDA 12.2 or newer is needed for memory advice");
        assert_eq!(
            missing.to_string(),
            "this CUDA driver has no cuMemAdvise_v2: CUDA 12.2 or newer is needed for memory advice"
        );
        assert_eq!(missing.code(), None);
        assert_eq!(missing.description(), missing.to_string());
        assert_eq!(missing.during("staging"), MemoryError::CudaDriver { message: missing.to_string() });
    }

    #[test]
    fn flags_have_the_values_of_cuda_h() {
        assert_eq!(host_register::PORTABLE, 0x01);
        assert_eq!(IPC_MEM_LAZY_ENABLE_PEER_ACCESS, 0x1);
        assert_eq!(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, 704);
        assert_eq!(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, 705);
        assert_eq!(P2P_NATIVE_ATOMIC_SUPPORTED, 0x03);
    }

    #[test]
    fn memory_locations_are_cumemlocations() {
        let device = MemLocation::Device(3).raw();
        assert_eq!((device.type_ as u32, device.id), (1, 3));
        let host = MemLocation::Host.raw();
        assert_eq!((host.type_ as u32, host.id), (2, 0));
        // `{ int type; int id; }`, passed by value.
        assert_eq!(std::mem::size_of::<CUmemLocation>(), 8);
    }

    #[test]
    fn ipc_handles_are_64_bytes_both_ways() {
        let bytes: Vec<u8> = (0..64).map(|i| (i * 5 + 200) as u8).collect();
        let handle = IpcMemHandle::from_bytes(&bytes).unwrap();
        assert_eq!(handle.as_bytes(), &bytes[..]);
        // Through the driver's type and back, bytes >= 0x80 included (c_char may be signed).
        assert_eq!(IpcMemHandle::from_raw(&handle.raw()), handle);
        assert_eq!(std::mem::size_of::<CUipcMemHandle>(), 64);
        assert_eq!(IpcMemHandle::from_bytes(&bytes[..63]), None);
        assert_eq!(IpcMemHandle::from_bytes(&[0; 65]), None);
    }
}

/// The calls of programs, kernels and events.
#[path = "driver_program.rs"]
pub(super) mod program_calls;
