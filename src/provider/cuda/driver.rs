//! The CUDA driver entry points this provider uses, resolved once from the `libcuda` that
//! cudarc loads at run time.
//!
//! Why a table of our own instead of calling `cudarc::driver::sys::cu*` directly:
//! - cudarc's dynamic-loading wrappers resolve each symbol on first call and **panic** when
//!   it is missing. Resolving every symbol here, once, inside `load()`, turns a missing or
//!   too-old driver into an `Err` and makes every later call panic-free.
//! - cudarc declares `CUresult` as a Rust `enum` generated from the 12.8 headers. A newer
//!   driver (the H200 machine runs 580, CUDA 13) may return a code that enum lacks, and
//!   materialising an unknown discriminant is undefined behaviour. The table's functions
//!   return the raw `u32`, which is never converted into cudarc's enum.
//!
//! Everything else comes from cudarc: finding and loading the library
//! (`sys::is_culib_present`, `sys::culib`), the handle types and the enum constants.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use cudarc::driver::sys::{CUcontext, CUdevice, CUdeviceptr, CUstream};

/// A raw `CUresult`.
pub(super) type CuResult = c_uint;
pub(super) const CUDA_SUCCESS: CuResult = 0;

macro_rules! driver_table {
    ($( $field:ident = $sym:literal : fn($($arg:ty),* $(,)?); )*) => {
        /// Function pointers into `libcuda`, all resolved before the first call.
        #[allow(non_snake_case)]
        pub(super) struct Driver {
            $( pub(super) $field: unsafe extern "C" fn($($arg),*) -> CuResult, )*
            /// `cuCtxCreate_v2`: optional, only `create_context` needs it.
            pub(super) cuCtxCreate: Option<unsafe extern "C" fn(*mut CUcontext, c_uint, CUdevice) -> CuResult>,
        }

        impl Driver {
            /// Resolves every entry point; `Err` names the first missing symbol.
            ///
            /// # Safety
            /// `lib` must be the CUDA driver library: each symbol is given the signature of
            /// the driver API function of that name (CUDA 12 `cuda.h`), which the caller
            /// vouches for by handing in libcuda.
            pub(super) unsafe fn resolve(lib: &libloading::Library) -> Result<Self, String> {
                Ok(Self {
                    $(
                        // SAFETY: the type is the documented signature of this symbol.
                        $field: *unsafe {
                            lib.get::<unsafe extern "C" fn($($arg),*) -> CuResult>($sym.as_bytes())
                        }
                        .map_err(|e| format!("the CUDA driver library has no symbol {}: {e:?}", $sym))?,
                    )*
                    // SAFETY: as above; `cuCtxCreate_v2(CUcontext*, unsigned int, CUdevice)`.
                    cuCtxCreate: unsafe {
                        lib.get::<unsafe extern "C" fn(*mut CUcontext, c_uint, CUdevice) -> CuResult>(
                            b"cuCtxCreate_v2",
                        )
                    }
                    .ok()
                    .map(|s| *s),
                })
            }
        }
    };
}

driver_table! {
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
    // `CUpointer_attribute*` is an array of C enums (`int`s).
    cuPointerGetAttributes = "cuPointerGetAttributes": fn(c_uint, *mut c_int, *mut *mut c_void, CUdeviceptr);
    cuMemGetAddressRange = "cuMemGetAddressRange_v2": fn(*mut CUdeviceptr, *mut usize, CUdeviceptr);
    cuMemGetInfo = "cuMemGetInfo_v2": fn(*mut usize, *mut usize);
    cuGetErrorName = "cuGetErrorName": fn(CuResult, *mut *const c_char);
    cuGetErrorString = "cuGetErrorString": fn(CuResult, *mut *const c_char);
}

impl Driver {
    /// `"CUDA_ERROR_OUT_OF_MEMORY: out of memory"`, or `"CUDA error 12345"` for a code the
    /// driver cannot name.
    pub(super) fn describe(&self, code: CuResult) -> String {
        let mut name: *const c_char = std::ptr::null();
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: both functions accept any code and only write a pointer to a static,
        // NUL-terminated string into the out-parameter (or leave it NULL on failure).
        let (rn, rt) = unsafe { ((self.cuGetErrorName)(code, &mut name), (self.cuGetErrorString)(code, &mut text)) };
        // SAFETY: on success the pointers point to static NUL-terminated strings of the driver.
        let name = (rn == CUDA_SUCCESS && !name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_string_lossy());
        // SAFETY: as above.
        let text = (rt == CUDA_SUCCESS && !text.is_null()).then(|| unsafe { CStr::from_ptr(text) }.to_string_lossy());
        super::logic::format_cu_error(code, name.as_deref(), text.as_deref())
    }

    /// `"<call> failed: CUDA_ERROR_…: <text>"`.
    pub(super) fn failure(&self, call: &str, code: CuResult) -> String {
        format!("{call} failed: {}", self.describe(code))
    }

    /// `Ok(())` for `CUDA_SUCCESS`, else `MemoryError::CudaDriver` naming the call.
    pub(super) fn check(&self, call: &str, code: CuResult) -> crate::error::Result<()> {
        if code == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(crate::error::MemoryError::CudaDriver(self.failure(call, code)))
        }
    }

    /// `(free, total)` bytes of the current context's device.
    pub(super) fn mem_info(&self) -> crate::error::Result<(u64, u64)> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: two valid out-pointers; the caller has a context current (else the
        // driver returns an error code).
        let r = unsafe { (self.cuMemGetInfo)(&mut free, &mut total) };
        self.check("cuMemGetInfo", r).map(|_| (free as u64, total as u64))
    }
}

/// Keeps a context current on this thread for its lifetime: `cuCtxPushCurrent` on
/// creation, `cuCtxPopCurrent` on drop, so whatever the thread had current before (another
/// addon's context, or none) is restored. Calls arrive on any thread (Node's main thread,
/// worker threads, libuv's pool), so every driver call that needs a context runs under one.
pub(super) struct CurrentContext<'a> {
    driver: &'a Driver,
    // Not Send: the push and the pop must happen on the same thread.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl<'a> CurrentContext<'a> {
    pub(super) fn push(driver: &'a Driver, ctx: CUcontext) -> crate::error::Result<Self> {
        // SAFETY: `ctx` is a live context handle owned by the caller (a retained primary
        // context or one made by cuCtxCreate and not yet destroyed).
        let r = unsafe { (driver.cuCtxPushCurrent)(ctx) };
        driver.check("cuCtxPushCurrent", r)?;
        Ok(Self { driver, _not_send: std::marker::PhantomData })
    }
}

impl Drop for CurrentContext<'_> {
    fn drop(&mut self) {
        let mut popped: CUcontext = std::ptr::null_mut();
        // SAFETY: pops the context this guard pushed on this same thread (the guard is
        // !Send); a failure leaves nothing to clean up and is ignored (Drop never panics).
        let _ = unsafe { (self.driver.cuCtxPopCurrent)(&mut popped) };
    }
}
