//! The only `unsafe` of the SYCL provider: loading the SYCL runtime and the shim at run
//! time, and calling the C ABI of `shim/dpctl_memory_shim.h` through owned handles.
//!
//! Load order (once per process, [`shim`]):
//! 1. find the runtime ([`locate`]; a runtime of the per-user cache must pass
//!    [`locate::check_trusted`] first: private folders, every library the one recorded at
//!    install) and the shim (`DPCTL_MEMORY_SHIM`, then the folder of this module; in cargo
//!    tests, the crate's folder, where `build.rs` copies it);
//! 2. point `OCL_ICD_FILENAMES` at the runtime's OpenCL CPU driver (before any SYCL call:
//!    the runtime reads it once; the wheel's own `.icd` file holds a placeholder path);
//! 3. `dlopen(libm.so.6)` (see `load_shim`), then
//!    `dlopen(<runtime>/lib/libsycl.so.8, RTLD_NOW | RTLD_GLOBAL)`, so that the shim's
//!    `NEEDED libsycl.so.8` binds to it without an rpath;
//! 4. `dlopen` the shim and check its ABI version.
//!
//! Neither library is ever unloaded: the loaded [`Shim`] lives in a process-wide static,
//! and unloading libsycl while SYCL objects exist would crash.
//!
//! Memory safety of the calls that touch memory: `memcpy` and `memset` take the range
//! types of `crate::runtime` (valid by construction); `free` is an `unsafe fn` whose
//! caller vouches that the address is a live allocation of the context.

use std::ffi::{c_char, c_int, c_void, CStr, CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};
use std::sync::OnceLock;

use crate::runtime::{Address, ReadBytes, WriteBytes};

use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_LOCAL, RTLD_NOW};

use super::locate;

/// The shim's `DPM_ABI_VERSION` this code is written against.
const ABI_VERSION: u32 = 7;

/// Status codes (`DPM_*`).
#[cfg_attr(not(test), allow(dead_code))] // matched by the tests
pub const STATUS_SYCL: c_int = 1;
/// A `sycl::malloc_*` returned NULL: the runtime refused the allocation.
pub const STATUS_ALLOC: c_int = 4;
/// A NULL handle or out pointer, or an unknown USM kind; also what this side reports for
/// a NULL handle back or an address too wide for a pointer.
pub const STATUS_ARG: c_int = 5;

/// USM kinds (`DPM_USM_*`, dpctl's values).
pub const USM_UNKNOWN: c_int = 0;
/// Device memory (`sycl::usm::alloc::device`).
pub const USM_DEVICE: c_int = 1;
/// Shared memory (`sycl::usm::alloc::shared`).
pub const USM_SHARED: c_int = 2;
/// Host memory (`sycl::usm::alloc::host`).
pub const USM_HOST: c_int = 3;

/// Device types (`DPM_DEVICE_TYPE_*`).
pub const DEVICE_TYPE_CPU: u32 = 1;
/// A GPU (`sycl::info::device_type::gpu`).
pub const DEVICE_TYPE_GPU: u32 = 2;
/// An accelerator (`sycl::info::device_type::accelerator`).
pub const DEVICE_TYPE_ACCELERATOR: u32 = 3;
/// A custom device (`sycl::info::device_type::custom`).
pub const DEVICE_TYPE_CUSTOM: u32 = 4;

/// How to get the runtime, for every "not found" message.
pub const INSTALL_HINT: &str = "run `npx dpctl-memory-install-runtime` in your project (in a clone of \
                                dpctl-memory: `npm start`), or set ONEAPI_ROOT to an installed oneAPI";

// Opaque C types (never constructed in Rust).
/// The shim's `dpm_device`.
#[repr(C)]
pub struct RawDevice {
    _opaque: [u8; 0],
}
/// The shim's `dpm_context`.
#[repr(C)]
pub struct RawContext {
    _opaque: [u8; 0],
}
/// The shim's `dpm_queue`.
#[repr(C)]
pub struct RawQueue {
    _opaque: [u8; 0],
}

/// `dpm_device_info`.
#[repr(C)]
struct RawDeviceInfo {
    name: *mut c_char,
    vendor: *mut c_char,
    backend: *mut c_char,
    driver_version: *mut c_char,
    aspects: *mut c_char,
    device_type: u32,
    global_mem_size: u64,
    max_mem_alloc_size: u64,
    local_mem_size: u64,
}

type DeviceListFn = unsafe extern "C" fn(*mut *mut RawDevice, usize, *mut usize) -> c_int;
type ContextDeviceListFn = unsafe extern "C" fn(*const RawContext, *mut *mut RawDevice, usize, *mut usize) -> c_int;

/// The loaded shim: its function pointers, valid while `_shim` and `_sycl` stay loaded
/// (for the life of the process: a `Shim` lives only in the [`shim`] static).
pub struct Shim {
    _libm: Library,
    _sycl: Library,
    _shim: Library,
    /// The runtime root the libraries came from.
    #[cfg_attr(not(test), allow(dead_code, reason = "read by the tests of where the runtime came from"))]
    pub runtime_root: PathBuf,
    /// The shim file that was loaded.
    #[cfg_attr(not(test), allow(dead_code, reason = "read by the tests of where the runtime came from"))]
    pub shim_path: PathBuf,
    /// The runtime's SYCL ABI (which `libsycl`, so which shim).
    pub abi: &'static locate::Abi,
    last_error: unsafe extern "C" fn() -> *const c_char,
    get_devices: DeviceListFn,
    device_free: unsafe extern "C" fn(*mut RawDevice),
    device_get_info: unsafe extern "C" fn(*const RawDevice, *mut RawDeviceInfo) -> c_int,
    device_info_free: unsafe extern "C" fn(*mut RawDeviceInfo),
    device_equal: unsafe extern "C" fn(*const RawDevice, *const RawDevice, *mut c_int) -> c_int,
    device_default_context: unsafe extern "C" fn(*const RawDevice, *mut *mut RawContext) -> c_int,
    context_create: unsafe extern "C" fn(*const RawDevice, *mut *mut RawContext) -> c_int,
    context_free: unsafe extern "C" fn(*mut RawContext),
    context_equal: unsafe extern "C" fn(*const RawContext, *const RawContext, *mut c_int) -> c_int,
    context_get_devices: ContextDeviceListFn,
    free: unsafe extern "C" fn(*const RawContext, *mut c_void) -> c_int,
    pointer_type: unsafe extern "C" fn(*const RawContext, *const c_void, *mut c_int) -> c_int,
    pointer_device: unsafe extern "C" fn(*const RawContext, *const c_void, *mut *mut RawDevice) -> c_int,
    queue_create: unsafe extern "C" fn(*const RawContext, *const RawDevice, *mut *mut RawQueue) -> c_int,
    queue_free: unsafe extern "C" fn(*mut RawQueue),
    malloc: unsafe extern "C" fn(*const RawQueue, c_int, usize, usize, *mut *mut c_void) -> c_int,
    memcpy: unsafe extern "C" fn(*mut RawQueue, *mut c_void, *const c_void, usize) -> c_int,
    memset: unsafe extern "C" fn(*mut RawQueue, *mut c_void, c_int, usize) -> c_int,
    queue_wait: unsafe extern "C" fn(*mut RawQueue) -> c_int,
    host_register: unsafe extern "C" fn(*const RawContext, *mut c_void, usize, *mut c_int) -> c_int,
    host_unregister: unsafe extern "C" fn(*const RawContext, *mut c_void) -> c_int,
    prefetch: unsafe extern "C" fn(*mut RawQueue, *const c_void, usize, c_int, *mut c_int) -> c_int,
    mem_advise: unsafe extern "C" fn(*mut RawQueue, *const c_void, usize, c_int, *mut c_int) -> c_int,
    /// Queue properties, programs, kernels, submissions and events (`shim_program.rs`).
    pub(super) program: super::shim_program::ProgramFns,
}

/// A failed shim call: its `DPM_*` status and the shim's error text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShimError {
    pub status: c_int,
    pub message: String,
}

impl std::fmt::Display for ShimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

pub(super) type ShimResult<T> = Result<T, ShimError>;

static SHIM: OnceLock<Result<Shim, String>> = OnceLock::new();

/// The process-wide shim, loaded on first use (later calls, from any thread, get the same
/// result without loading again). `Err` says everything that was searched and how to
/// install the runtime.
pub fn shim() -> Result<&'static Shim, String> {
    match SHIM.get_or_init(load_shim) {
        Ok(shim) => Ok(shim),
        Err(message) => Err(message.clone()),
    }
}

/// Where the search for the shim of `abi` looks, in order, with what named each place.
pub fn shim_candidates(abi: &locate::Abi) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    if let Some(path) = std::env::var_os("DPCTL_MEMORY_SHIM").filter(|v| !v.is_empty()) {
        out.push(("DPCTL_MEMORY_SHIM".to_string(), PathBuf::from(path)));
    }
    if let Some(dir) = module_path().as_deref().and_then(Path::parent) {
        out.push(("beside the addon".to_string(), dir.join(abi.shim)));
    }
    // A test executable lives in target/: the shim is where build.rs copies it. Only test
    // builds know this path; the addon never looks in its build machine's folders.
    #[cfg(test)]
    out.push(("the crate's folder (cargo test)".to_string(), Path::new(env!("CARGO_MANIFEST_DIR")).join(abi.shim)));
    out
}

fn load_shim() -> Result<Shim, String> {
    let runtime = locate::locate(locate::Need::Library).map_err(|searched| {
        format!(
            "the SYCL runtime is not installed: no usable libsycl ({}) in any of: {}. To install it, {INSTALL_HINT}",
            locate::known_abis(),
            searched.join("; ")
        )
    })?;
    let shim_file = runtime.abi.shim;
    // Before anything of the cache is read by the loader (its constructors run at dlopen).
    locate::check_trusted(&runtime, &["lib"])?;
    let candidates = shim_candidates(runtime.abi);
    let Some((_, shim_path)) = candidates.iter().find(|(_, path)| path.is_file()) else {
        let searched: Vec<String> =
            candidates.iter().map(|(source, path)| format!("{} ({source})", path.display())).collect();
        return Err(format!(
            "the SYCL runtime at {} ({}, found via {}) needs the addon's SYCL shim {shim_file}, which is \
             missing; searched: {}. The addon was built without a runtime of that ABI: rebuild it with the \
             runtime installed ({INSTALL_HINT}), or set DPCTL_MEMORY_SHIM to the shim's path",
            runtime.root.display(),
            runtime.abi.libsycl,
            runtime.source,
            if searched.is_empty() { "nowhere (no candidate)".to_string() } else { searched.join("; ") }
        ));
    };

    point_ocl_icd_at(&runtime.root)?;
    if locate::is_cache_runtime(&runtime) {
        pin_ur_adapters(&runtime.root)?;
    }

    // libimf.so of the runtime calls libm's IFUNC symbols (cosf, ...) without naming
    // libm.so.6 as NEEDED: in a process that has not loaded libm yet (a test executable;
    // Node has it already), dlopen(libsycl) may relocate libimf before libm and crash in
    // libm's IFUNC resolver. Loading libm first, fully relocated, avoids that.
    // SAFETY: the C math library of the system, whose initialisers are the C runtime's;
    // kept loaded for the process along with the others.
    let libm = unsafe { Library::open(Some("libm.so.6"), RTLD_NOW | RTLD_GLOBAL) }
        .map_err(|e| format!("could not load the C math library libm.so.6: {e:?}"))?;

    let libsycl = runtime.root.join("lib").join(runtime.abi.libsycl);
    // SAFETY: the libsycl of an Intel SYCL runtime, of the ABI the shim below was built
    // for; its initialisers only set up the runtime's globals. RTLD_GLOBAL makes its
    // symbols bind the shim's `NEEDED libsycl.so.<N>`. The library is never unloaded (it
    // lives in `SHIM` for the process).
    let sycl = unsafe { Library::open(Some(&libsycl), RTLD_NOW | RTLD_GLOBAL) }.map_err(|e| {
        format!("could not load the SYCL runtime {} (found via {}): {e:?}", libsycl.display(), runtime.source)
    })?;
    // SAFETY: the shim built from shim/dpctl_memory_shim.cpp; it has no initialisers of
    // its own beyond the C++ runtime's. Never unloaded, as above.
    let lib = unsafe { Library::open(Some(shim_path), RTLD_NOW | RTLD_LOCAL) }
        .map_err(|e| format!("could not load the SYCL shim {}: {e:?}", shim_path.display()))?;

    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: every field's type is copied from the declaration of the same name
            // in shim/dpctl_memory_shim.h (whose version ABI_VERSION checks), and the
            // pointers are used only while `lib` is loaded, which is for the process.
            unsafe { symbol(&lib, shim_path, $name) }?
        };
    }

    let abi_version: unsafe extern "C" fn() -> u32 = sym!("dpm_abi_version");
    // SAFETY: `dpm_abi_version` takes nothing and cannot fail.
    let found_abi = unsafe { abi_version() };
    if found_abi != ABI_VERSION {
        return Err(format!(
            "the SYCL shim {} has ABI version {found_abi}, this addon needs {ABI_VERSION}: rebuild the addon",
            shim_path.display()
        ));
    }
    let shim = Shim {
        last_error: sym!("dpm_last_error"),
        get_devices: sym!("dpm_get_devices"),
        device_free: sym!("dpm_device_free"),
        device_get_info: sym!("dpm_device_get_info"),
        device_info_free: sym!("dpm_device_info_free"),
        device_equal: sym!("dpm_device_equal"),
        device_default_context: sym!("dpm_device_default_context"),
        context_create: sym!("dpm_context_create"),
        context_free: sym!("dpm_context_free"),
        context_equal: sym!("dpm_context_equal"),
        context_get_devices: sym!("dpm_context_get_devices"),
        free: sym!("dpm_free"),
        pointer_type: sym!("dpm_pointer_type"),
        pointer_device: sym!("dpm_pointer_device"),
        queue_create: sym!("dpm_queue_create"),
        queue_free: sym!("dpm_queue_free"),
        malloc: sym!("dpm_malloc"),
        memcpy: sym!("dpm_memcpy"),
        memset: sym!("dpm_memset"),
        queue_wait: sym!("dpm_queue_wait"),
        host_register: sym!("dpm_host_register"),
        host_unregister: sym!("dpm_host_unregister"),
        prefetch: sym!("dpm_prefetch"),
        mem_advise: sym!("dpm_mem_advise"),
        // SAFETY: as for `sym!`: the types are the header's, the library stays loaded.
        program: unsafe { super::shim_program::ProgramFns::load(&lib, shim_path) }?,
        runtime_root: runtime.root,
        abi: runtime.abi,
        shim_path: shim_path.clone(),
        _libm: libm,
        _sycl: sycl,
        _shim: lib,
    };
    Ok(shim)
}

/// Looks `name` up in the shim and copies the function pointer out.
///
/// # Safety
///
/// `T` must be the exact function-pointer type of `name` as the shim's header declares it,
/// and the pointer must not be called after `lib` is unloaded.
pub(super) unsafe fn symbol<T: Copy>(lib: &Library, path: &Path, name: &str) -> Result<T, String> {
    // SAFETY: the type contract is forwarded to the caller (see `# Safety`).
    let found = unsafe { lib.get::<T>(name) };
    found.map(|sym| *sym).map_err(|e| format!("the SYCL shim {} lacks `{name}`: {e:?}", path.display()))
}

/// The file this code was loaded from (the `.node` addon, or a test executable).
fn module_path() -> Option<PathBuf> {
    let mut info = libc::Dl_info {
        dli_fname: ptr::null(),
        dli_fbase: ptr::null_mut(),
        dli_sname: ptr::null(),
        dli_saddr: ptr::null_mut(),
    };
    let here = module_path as fn() -> Option<PathBuf> as *const c_void;
    // SAFETY: dladdr only reads the loader's tables; `info` is a valid out-parameter.
    let found = unsafe { libc::dladdr(here, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr succeeded, so dli_fname is a NUL-terminated path owned by the loader,
    // valid while the module stays loaded; it is copied at once.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(OsStr::from_bytes(name.to_bytes()));
    Some(path.canonicalize().unwrap_or(path))
}

/// Adds `<root>/lib/libintelocl.so` (the OpenCL CPU driver) to `OCL_ICD_FILENAMES`, in the
/// C environment (`process.env` of Node is not seen by C code), unless it is missing or
/// already named there.
fn point_ocl_icd_at(root: &Path) -> Result<(), String> {
    const VAR: &str = "OCL_ICD_FILENAMES";
    let driver = root.join("lib").join("libintelocl.so");
    if !driver.is_file() {
        return Ok(());
    }
    let driver = driver.into_os_string();
    let value: OsString = match std::env::var_os(VAR).filter(|v| !v.is_empty()) {
        Some(current) => {
            if current.as_bytes().split(|b| *b == b':').any(|part| part == driver.as_bytes()) {
                return Ok(());
            }
            let mut joined = current;
            joined.push(":");
            joined.push(&driver);
            joined
        }
        None => driver,
    };
    set_runtime_var(VAR, value)
}

/// Names the cache's Unified Runtime adapters to its loader by absolute path
/// (`UR_ADAPTERS_FORCE_LOAD`), unless the environment chose: by default the loader
/// `dlopen`s every adapter it knows by bare name, and an empty element of
/// `LD_LIBRARY_PATH` makes that search the working directory, whose planted
/// `libur_adapter_cuda.so.0` would run. Only for the runtime this package installed, whose
/// `lib/` the trust checks have just passed; an installed oneAPI keeps its own adapters.
fn pin_ur_adapters(root: &Path) -> Result<(), String> {
    const VAR: &str = "UR_ADAPTERS_FORCE_LOAD";
    if std::env::var_os(VAR).is_some() {
        return Ok(());
    }
    let lib = root.join("lib");
    let entries = std::fs::read_dir(&lib).map_err(|e| format!("{}: {e}", lib.display()))?;
    let mut adapters: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("libur_adapter_") && name.ends_with(".so.0"))
        })
        .collect();
    if adapters.is_empty() {
        return Ok(());
    }
    adapters.sort();
    let mut value = OsString::new();
    for (i, adapter) in adapters.iter().enumerate() {
        if i > 0 {
            value.push(",");
        }
        value.push(adapter);
    }
    set_runtime_var(VAR, value)
}

/// Sets `var` in the C environment (`process.env` of Node is not seen by C code) for the
/// SYCL runtime, which reads it when it loads.
fn set_runtime_var(var: &str, value: OsString) -> Result<(), String> {
    let name = CString::new(var).map_err(|e| format!("{var}: {e}"))?;
    let value = CString::new(value.into_vec()).map_err(|e| format!("{var}: {e}"))?;
    // SAFETY: both strings are NUL-terminated and outlive the call (setenv copies them).
    // setenv is not synchronised with getenv in other threads; it runs once per process,
    // inside the shim's OnceLock, before the SYCL runtime (the only reader that matters)
    // is loaded. Node's own threads do not read these variables; the residual risk is
    // JS on another worker reading `process.env` at that very moment.
    let rc = unsafe { libc::setenv(name.as_ptr(), value.as_ptr(), 1) };
    if rc != 0 {
        return Err(format!("could not set {var}: {:?}", std::io::Error::last_os_error()));
    }
    Ok(())
}

impl Shim {
    /// `Ok` for `DPM_OK`, else the status with the calling thread's error text.
    pub(super) fn check(&self, status: c_int) -> ShimResult<()> {
        if status == 0 {
            return Ok(());
        }
        // SAFETY: dpm_last_error takes nothing and cannot fail.
        let raw = unsafe { (self.last_error)() };
        if raw.is_null() {
            return Err(ShimError { status, message: format!("the SYCL shim failed with status {status}") });
        }
        // SAFETY: the calling thread's NUL-terminated error text, valid until the next
        // shim call on this thread; it is copied at once.
        let text = unsafe { CStr::from_ptr(raw) };
        let mut message = text.to_string_lossy().into_owned();
        if message.is_empty() {
            message = format!("the SYCL shim failed with status {status}");
        }
        Err(ShimError { status, message })
    }

    /// Every SYCL device (`sycl::device::get_devices()`).
    pub fn devices(&'static self) -> ShimResult<Vec<DeviceHandle>> {
        let list = self.device_list(|out, cap, count| {
            // SAFETY: `out` has room for `cap` handles (or is NULL with cap 0) and `count`
            // is valid, as dpm_get_devices requires.
            unsafe { (self.get_devices)(out, cap, count) }
        })?;
        Ok(list)
    }

    /// Runs a two-call device-list function (size, then fill) and wraps every handle.
    fn device_list(
        &'static self,
        call: impl Fn(*mut *mut RawDevice, usize, *mut usize) -> c_int,
    ) -> ShimResult<Vec<DeviceHandle>> {
        let mut count = 0usize;
        self.check(call(ptr::null_mut(), 0, &mut count))?;
        let mut raw: Vec<*mut RawDevice> = vec![ptr::null_mut(); count];
        let mut total = 0usize;
        self.check(call(raw.as_mut_ptr(), raw.len(), &mut total))?;
        // The shim wrote min(cap, total) handles; the list cannot grow in a process, but
        // take only what was written either way.
        let written = total.min(raw.len());
        Ok(raw
            .into_iter()
            .take(written)
            .filter_map(|p| NonNull::new(p).map(|raw| DeviceHandle { raw, shim: self }))
            .collect())
    }
}

/// What a device says about itself, as the shim reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFacts {
    pub name: String,
    pub vendor: String,
    pub backend: String,
    pub driver_version: String,
    /// The device's aspect names (the shim sends them space-separated).
    pub aspects: Vec<String>,
    /// One of the `DEVICE_TYPE_*` codes (0 for a type the shim does not know).
    pub device_type: u32,
    pub global_mem_size: u64,
    pub max_mem_alloc_size: u64,
    pub local_mem_size: u64,
}

/// An owned `dpm_device` handle, freed on drop.
pub struct DeviceHandle {
    pub(super) raw: NonNull<RawDevice>,
    pub(super) shim: &'static Shim,
}

/// An owned `dpm_context` handle, freed on drop.
pub struct ContextHandle {
    pub(super) raw: NonNull<RawContext>,
    pub(super) shim: &'static Shim,
}

/// An owned `dpm_queue` handle, freed on drop.
pub struct QueueHandle {
    pub(super) raw: NonNull<RawQueue>,
    pub(super) shim: &'static Shim,
}

// SAFETY: each handle owns a heap copy of a SYCL object (device, context, or queue plus
// its mutex-guarded error list). SYCL 2020 (4.3.1) makes the member functions of SYCL
// runtime classes thread-safe, the shim keeps no other shared state (its error text is
// thread-local), and a handle is freed only in Drop, when no other reference exists.
unsafe impl Send for DeviceHandle {}
// SAFETY: as for Send: every shim call on a handle is thread-safe.
unsafe impl Sync for DeviceHandle {}
// SAFETY: as for DeviceHandle.
unsafe impl Send for ContextHandle {}
// SAFETY: as for DeviceHandle.
unsafe impl Sync for ContextHandle {}
// SAFETY: as for DeviceHandle.
unsafe impl Send for QueueHandle {}
// SAFETY: as for DeviceHandle.
unsafe impl Sync for QueueHandle {}

impl Drop for DeviceHandle {
    fn drop(&mut self) {
        // SAFETY: `raw` came from the shim, is owned by this handle alone and is freed
        // exactly once, here. dpm_device_free never throws into Rust.
        unsafe { (self.shim.device_free)(self.raw.as_ptr()) }
    }
}

impl Drop for ContextHandle {
    fn drop(&mut self) {
        // SAFETY: as for DeviceHandle::drop.
        unsafe { (self.shim.context_free)(self.raw.as_ptr()) }
    }
}

impl Drop for QueueHandle {
    fn drop(&mut self) {
        // SAFETY: as for DeviceHandle::drop.
        unsafe { (self.shim.queue_free)(self.raw.as_ptr()) }
    }
}

/// Wraps a handle the shim wrote into an out-parameter after `DPM_OK`.
pub(super) fn non_null<T>(raw: *mut T, what: &str) -> ShimResult<NonNull<T>> {
    NonNull::new(raw)
        .ok_or_else(|| ShimError { status: STATUS_ARG, message: format!("the SYCL shim returned a NULL {what}") })
}

pub(super) fn as_pointer(address: Address) -> ShimResult<usize> {
    usize::try_from(address)
        .map_err(|_| ShimError { status: STATUS_ARG, message: format!("address 0x{address:x} does not fit a pointer") })
}

pub(super) fn size(n: u64, what: &str) -> ShimResult<usize> {
    usize::try_from(n)
        .map_err(|_| ShimError { status: STATUS_ARG, message: format!("{what} {n} does not fit a size_t") })
}

fn take_string(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a non-NULL string field of a dpm_device_info filled by the shim: NUL-
    // terminated and alive until dpm_device_info_free, which runs after this copy.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

impl DeviceHandle {
    /// Everything the shim reports of the device, copied out of the shim's memory.
    pub fn info(&self) -> ShimResult<DeviceFacts> {
        let mut raw = RawDeviceInfo {
            name: ptr::null_mut(),
            vendor: ptr::null_mut(),
            backend: ptr::null_mut(),
            driver_version: ptr::null_mut(),
            aspects: ptr::null_mut(),
            device_type: 0,
            global_mem_size: 0,
            max_mem_alloc_size: 0,
            local_mem_size: 0,
        };
        // SAFETY: a live device handle and a valid out-parameter.
        self.shim.check(unsafe { (self.shim.device_get_info)(self.raw.as_ptr(), &mut raw) })?;
        let facts = DeviceFacts {
            name: take_string(raw.name),
            vendor: take_string(raw.vendor),
            backend: take_string(raw.backend),
            driver_version: take_string(raw.driver_version),
            aspects: take_string(raw.aspects).split_whitespace().map(str::to_string).collect(),
            device_type: raw.device_type,
            global_mem_size: raw.global_mem_size,
            max_mem_alloc_size: raw.max_mem_alloc_size,
            local_mem_size: raw.local_mem_size,
        };
        // SAFETY: `raw` was filled by dpm_device_get_info and its strings are freed once,
        // here, after being copied.
        unsafe { (self.shim.device_info_free)(&mut raw) };
        Ok(facts)
    }

    /// Same SYCL device.
    pub fn equals(&self, other: &DeviceHandle) -> ShimResult<bool> {
        let mut same: c_int = 0;
        // SAFETY: two live device handles and a valid out-parameter.
        self.shim.check(unsafe { (self.shim.device_equal)(self.raw.as_ptr(), other.raw.as_ptr(), &mut same) })?;
        Ok(same != 0)
    }

    /// The platform's default context.
    pub fn default_context(&self) -> ShimResult<ContextHandle> {
        let mut out: *mut RawContext = ptr::null_mut();
        // SAFETY: a live device handle and a valid out-parameter.
        self.shim.check(unsafe { (self.shim.device_default_context)(self.raw.as_ptr(), &mut out) })?;
        Ok(ContextHandle { raw: non_null(out, "context")?, shim: self.shim })
    }

    /// A new context of this device alone.
    pub fn create_context(&self) -> ShimResult<ContextHandle> {
        let mut out: *mut RawContext = ptr::null_mut();
        // SAFETY: a live device handle and a valid out-parameter.
        self.shim.check(unsafe { (self.shim.context_create)(self.raw.as_ptr(), &mut out) })?;
        Ok(ContextHandle { raw: non_null(out, "context")?, shim: self.shim })
    }
}

impl ContextHandle {
    /// Same SYCL context.
    pub fn equals(&self, other: &ContextHandle) -> ShimResult<bool> {
        let mut same: c_int = 0;
        // SAFETY: two live context handles and a valid out-parameter.
        self.shim.check(unsafe { (self.shim.context_equal)(self.raw.as_ptr(), other.raw.as_ptr(), &mut same) })?;
        Ok(same != 0)
    }

    /// The devices the context was made for.
    pub fn devices(&self) -> ShimResult<Vec<DeviceHandle>> {
        let ctx = self.raw.as_ptr();
        let shim = self.shim;
        shim.device_list(|out, cap, count| {
            // SAFETY: a live context handle; `out` has room for `cap` handles (or is NULL
            // with cap 0) and `count` is valid.
            unsafe { (shim.context_get_devices)(ctx, out, cap, count) }
        })
    }

    /// A new (out-of-order) queue on `device`, which must be a device of this context.
    pub fn create_queue(&self, device: &DeviceHandle) -> ShimResult<QueueHandle> {
        let mut out: *mut RawQueue = ptr::null_mut();
        // SAFETY: live context and device handles and a valid out-parameter.
        self.shim.check(unsafe { (self.shim.queue_create)(self.raw.as_ptr(), device.raw.as_ptr(), &mut out) })?;
        Ok(QueueHandle { raw: non_null(out, "queue")?, shim: self.shim })
    }

    /// `DPM_USM_*` kind of `address` in this context. Safe for any address.
    pub fn pointer_type(&self, address: Address) -> ShimResult<c_int> {
        let p = as_pointer(address)? as *const c_void;
        let mut kind: c_int = USM_UNKNOWN;
        // SAFETY: a live context handle and a valid out-parameter; sycl::get_pointer_type
        // only looks the address up, it never dereferences it.
        self.shim.check(unsafe { (self.shim.pointer_type)(self.raw.as_ptr(), p, &mut kind) })?;
        Ok(kind)
    }

    /// The device a USM pointer of this context belongs to (an error for a foreign one).
    pub fn pointer_device(&self, address: Address) -> ShimResult<DeviceHandle> {
        let p = as_pointer(address)? as *const c_void;
        let mut out: *mut RawDevice = ptr::null_mut();
        // SAFETY: a live context handle and a valid out-parameter; the address is only
        // looked up (a foreign one makes SYCL throw, which the shim turns into a status).
        self.shim.check(unsafe { (self.shim.pointer_device)(self.raw.as_ptr(), p, &mut out) })?;
        Ok(DeviceHandle { raw: non_null(out, "device")?, shim: self.shim })
    }

    /// Registers host memory for device copies: `true` when the runtime did, `false` when
    /// the backend does not support it (nothing to undo).
    ///
    /// # Safety
    /// `addr..addr + nbytes` is host memory mapped now, unregistered once (with
    /// [`ContextHandle::host_unregister`]) before this context goes.
    pub unsafe fn host_register(&self, address: Address, nbytes: u64) -> ShimResult<bool> {
        let (p, n) = (as_pointer(address)? as *mut c_void, size(nbytes, "size")?);
        let mut registered: c_int = 0;
        // SAFETY: a live context handle, a valid out-parameter, and the range of this fn's
        // contract.
        self.shim.check(unsafe { (self.shim.host_register)(self.raw.as_ptr(), p, n, &mut registered) })?;
        Ok(registered != 0)
    }

    /// Ends a registration.
    ///
    /// # Safety
    /// `addr` was registered by [`ContextHandle::host_register`] of this context, is
    /// unregistered once, and no copy of it is in flight.
    pub unsafe fn host_unregister(&self, address: Address) -> ShimResult<()> {
        let p = as_pointer(address)? as *mut c_void;
        // SAFETY: a live context handle; the address is this fn's contract.
        self.shim.check(unsafe { (self.shim.host_unregister)(self.raw.as_ptr(), p) })
    }

    /// Frees USM memory of this context.
    ///
    /// # Safety
    /// `addr` is a live allocation of this context that nothing uses any more.
    pub unsafe fn free(&self, address: Address) -> ShimResult<()> {
        let p = as_pointer(address)? as *mut c_void;
        // SAFETY: a live context handle; the address is the caller's (this fn's contract).
        self.shim.check(unsafe { (self.shim.free)(self.raw.as_ptr(), p) })
    }
}

impl QueueHandle {
    /// `nbytes` of USM memory of `kind` (`USM_DEVICE`/`USM_SHARED`/`USM_HOST`); alignment 0
    /// for the runtime's default. A refusal by the runtime is `STATUS_ALLOC`.
    pub fn malloc(&self, kind: c_int, nbytes: u64, alignment: u64) -> ShimResult<u64> {
        let n = size(nbytes, "size")?;
        let align = size(alignment, "alignment")?;
        let mut out: *mut c_void = ptr::null_mut();
        // SAFETY: a live queue handle and a valid out-parameter.
        self.shim.check(unsafe { (self.shim.malloc)(self.raw.as_ptr(), kind, n, align, &mut out) })?;
        Ok(out as usize as u64)
    }

    /// Copies all of `src` to the start of `dst` (`nbytes`, at most `dst`'s length) and waits.
    pub fn memcpy(&self, dst: WriteBytes<'_>, src: ReadBytes<'_>, nbytes: u64) -> ShimResult<()> {
        let nbytes = nbytes.min(dst.len()).min(src.len());
        let (d, s) = (as_pointer(dst.address())? as *mut c_void, as_pointer(src.address())? as *const c_void);
        let n = size(nbytes, "size")?;
        // SAFETY: a live queue handle; both ranges are valid for `n` bytes (their types'
        // contract).
        self.shim.check(unsafe { (self.shim.memcpy)(self.raw.as_ptr(), d, s, n) })
    }

    /// Fills `dst` with `value` and waits.
    pub fn memset(&self, dst: WriteBytes<'_>, value: u8) -> ShimResult<()> {
        let (d, n) = (as_pointer(dst.address())? as *mut c_void, size(dst.len(), "size")?);
        // SAFETY: a live queue handle; `dst` is valid for writes of `n` bytes (its type's
        // contract).
        self.shim.check(unsafe { (self.shim.memset)(self.raw.as_ptr(), d, c_int::from(value), n) })
    }

    /// Prefetches shared memory to the device (`to_host` false) and waits: `true` when the
    /// runtime acts on it, `false` when it does nothing here.
    pub fn prefetch(&self, bytes: ReadBytes<'_>, to_host: bool) -> ShimResult<bool> {
        let (p, n) = (as_pointer(bytes.address())? as *const c_void, size(bytes.len(), "size")?);
        let mut applied: c_int = 0;
        let raw = self.raw.as_ptr();
        // SAFETY: a live queue handle and a valid out-parameter; `bytes` is valid for reads
        // of `n` bytes (its type's contract), and the call waits for the prefetch.
        let status = unsafe { (self.shim.prefetch)(raw, p, n, c_int::from(to_host), &mut applied) };
        self.shim.check(status)?;
        Ok(applied != 0)
    }

    /// `queue::mem_advise` with a `ur_usm_advice_flags_t` value, waited for: `true` when
    /// the runtime acts on it.
    pub fn mem_advise(&self, bytes: ReadBytes<'_>, advice: c_int) -> ShimResult<bool> {
        let (p, n) = (as_pointer(bytes.address())? as *const c_void, size(bytes.len(), "size")?);
        let mut applied: c_int = 0;
        // SAFETY: as `prefetch`; advice never changes the bytes.
        self.shim.check(unsafe { (self.shim.mem_advise)(self.raw.as_ptr(), p, n, advice, &mut applied) })?;
        Ok(applied != 0)
    }

    /// Waits for all work on the queue, reporting asynchronous errors.
    pub fn wait(&self) -> ShimResult<()> {
        // SAFETY: a live queue handle.
        self.shim.check(unsafe { (self.shim.queue_wait)(self.raw.as_ptr()) })
    }
}
