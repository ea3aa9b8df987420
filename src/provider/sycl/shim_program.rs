//! The shim's programs, kernels, submissions and events (the second half of
//! `shim/dpctl_memory_shim.h`, implemented in `shim/program.cpp`), through owned handles.
//! With `shim.rs`, the only `unsafe` of the SYCL provider.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;
use std::ptr::{self, NonNull};

use libloading::os::unix::Library;

use super::shim::{
    as_pointer, non_null, size, symbol, ContextHandle, DeviceHandle, QueueHandle, RawContext, RawDevice, RawQueue,
    Shim, ShimError, ShimResult, STATUS_ARG,
};

/// `DPM_ERR_BUILD`: the program did not build (its log came back).
pub const STATUS_BUILD: c_int = 6;
/// `DPM_ERR_NOT_FOUND`: no kernel of that name.
pub const STATUS_NOT_FOUND: c_int = 7;
/// `DPM_ERR_UNSUPPORTED`: this runtime or device cannot do it.
pub const STATUS_UNSUPPORTED: c_int = 9;

/// `DPM_QUEUE_*` flags.
pub const QUEUE_IN_ORDER: c_int = 1;
/// Profiling timestamps on the queue's events.
pub const QUEUE_ENABLE_PROFILING: c_int = 2;

/// `DPM_PROGRAM_*` formats.
pub const PROGRAM_OPENCL_C: c_int = 1;
/// A SPIR-V module.
pub const PROGRAM_SPIRV: c_int = 2;

/// `DPM_ARG_*` kinds.
pub const ARG_GLOBAL: c_int = 1;
/// A `__local` pointer.
pub const ARG_LOCAL: c_int = 2;
/// By value.
pub const ARG_VALUE: c_int = 3;

/// `DPM_KARG_*` argument kinds of a submission.
pub const KARG_POINTER: c_int = 1;
/// A scalar's bits.
pub const KARG_SCALAR: c_int = 2;
/// Bytes of local memory.
pub const KARG_LOCAL: c_int = 3;

/// The shim's `dpm_program`.
#[repr(C)]
pub struct RawProgram {
    _opaque: [u8; 0],
}
/// The shim's `dpm_kernel`.
#[repr(C)]
pub struct RawKernel {
    _opaque: [u8; 0],
}
/// The shim's `dpm_event`.
#[repr(C)]
pub struct RawEvent {
    _opaque: [u8; 0],
}

/// `dpm_kernel_info`.
#[repr(C)]
#[derive(Default)]
pub struct RawKernelInfo {
    pub num_args: u32,
    pub work_group_size: u64,
    pub preferred_work_group_size_multiple: u64,
    pub private_mem_size: u64,
    pub local_mem_size: u64,
    pub compile_work_group_size: [u64; 3],
}

/// `dpm_kernel_arg`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RawKernelArg {
    pub kind: c_int,
    pub size: u32,
    pub value: u64,
}

type Deps = *const *const RawEvent;
type DoneFn = unsafe extern "C" fn(*mut c_void, c_int);

/// The function pointers of this half of the header.
pub struct ProgramFns {
    queue_create_with: unsafe extern "C" fn(*const RawContext, *const RawDevice, c_int, *mut *mut RawQueue) -> c_int,
    queue_native: unsafe extern "C" fn(*const RawQueue, *mut *mut c_void, *mut *mut c_void, *mut *mut c_void) -> c_int,
    #[allow(clippy::type_complexity)]
    program_create: unsafe extern "C" fn(
        *const RawContext,
        *const RawDevice,
        c_int,
        *const c_void,
        usize,
        *const c_char,
        *mut *mut RawProgram,
        *mut *mut c_char,
    ) -> c_int,
    #[allow(clippy::type_complexity)]
    program_create_sycl: unsafe extern "C" fn(
        *const RawContext,
        *const RawDevice,
        *const c_char,
        usize,
        *const *const c_char,
        *const *const c_char,
        usize,
        *const *const c_char,
        usize,
        *const *const c_char,
        usize,
        *mut *mut RawProgram,
        *mut *mut c_char,
    ) -> c_int,
    device_can_compile_sycl: unsafe extern "C" fn(*const RawDevice, *mut c_int) -> c_int,
    program_free: unsafe extern "C" fn(*mut RawProgram),
    program_kernel_names: unsafe extern "C" fn(*const RawProgram, *mut *mut c_char) -> c_int,
    string_free: unsafe extern "C" fn(*mut c_char),
    kernel_create: unsafe extern "C" fn(*const RawProgram, *const c_char, *mut *mut RawKernel) -> c_int,
    kernel_free: unsafe extern "C" fn(*mut RawKernel),
    kernel_get_info: unsafe extern "C" fn(*const RawKernel, *mut RawKernelInfo) -> c_int,
    kernel_arg_info: unsafe extern "C" fn(*const RawKernel, u32, *mut c_int, *mut *mut c_char) -> c_int,
    #[allow(clippy::type_complexity)]
    submit: unsafe extern "C" fn(
        *mut RawQueue,
        *const RawKernel,
        *const RawKernelArg,
        usize,
        u32,
        *const u64,
        *const u64,
        Deps,
        usize,
        *mut *mut RawEvent,
    ) -> c_int,
    #[allow(clippy::type_complexity)]
    submit_wait: unsafe extern "C" fn(
        *mut RawQueue,
        *const RawKernel,
        *const RawKernelArg,
        usize,
        u32,
        *const u64,
        *const u64,
    ) -> c_int,
    memcpy_async: unsafe extern "C" fn(
        *mut RawQueue,
        *mut c_void,
        *const c_void,
        usize,
        Deps,
        usize,
        *mut *mut RawEvent,
    ) -> c_int,
    #[allow(clippy::type_complexity)]
    fill_async: unsafe extern "C" fn(
        *mut RawQueue,
        *mut c_void,
        *const c_void,
        usize,
        usize,
        Deps,
        usize,
        *mut *mut RawEvent,
    ) -> c_int,
    barrier: unsafe extern "C" fn(*mut RawQueue, Deps, usize, *mut *mut RawEvent) -> c_int,
    event_on_complete: unsafe extern "C" fn(*const RawEvent, DoneFn, *mut c_void) -> c_int,
    event_wait: unsafe extern "C" fn(*mut RawQueue, *const RawEvent) -> c_int,
    event_status: unsafe extern "C" fn(*const RawEvent, *mut c_int) -> c_int,
    event_profiling: unsafe extern "C" fn(*const RawEvent, *mut u64, *mut u64, *mut u64) -> c_int,
    event_free: unsafe extern "C" fn(*mut RawEvent),
}

impl ProgramFns {
    /// Looks every function up in the loaded shim.
    ///
    /// # Safety
    /// `lib` is the shim of `DPM_ABI_VERSION` 3 (the field types are the header's), kept
    /// loaded for as long as the pointers are used (the process).
    pub(super) unsafe fn load(lib: &Library, path: &Path) -> Result<ProgramFns, String> {
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: this fn's contract: the field types are copied from the header.
                unsafe { symbol(lib, path, $name) }?
            };
        }
        Ok(ProgramFns {
            queue_create_with: sym!("dpm_queue_create_with"),
            queue_native: sym!("dpm_queue_native"),
            program_create: sym!("dpm_program_create"),
            program_create_sycl: sym!("dpm_program_create_sycl"),
            device_can_compile_sycl: sym!("dpm_device_can_compile_sycl"),
            program_free: sym!("dpm_program_free"),
            program_kernel_names: sym!("dpm_program_kernel_names"),
            string_free: sym!("dpm_string_free"),
            kernel_create: sym!("dpm_kernel_create"),
            kernel_free: sym!("dpm_kernel_free"),
            kernel_get_info: sym!("dpm_kernel_get_info"),
            kernel_arg_info: sym!("dpm_kernel_arg_info"),
            submit: sym!("dpm_submit"),
            submit_wait: sym!("dpm_submit_wait"),
            memcpy_async: sym!("dpm_memcpy_async"),
            fill_async: sym!("dpm_fill_async"),
            barrier: sym!("dpm_barrier"),
            event_on_complete: sym!("dpm_event_on_complete"),
            event_wait: sym!("dpm_event_wait"),
            event_status: sym!("dpm_event_status"),
            event_profiling: sym!("dpm_event_profiling"),
            event_free: sym!("dpm_event_free"),
        })
    }
}

/// An owned `dpm_program`, freed on drop.
pub struct ProgramHandle {
    raw: NonNull<RawProgram>,
    shim: &'static Shim,
}

/// An owned `dpm_kernel`, freed on drop.
pub struct KernelHandle {
    raw: NonNull<RawKernel>,
    shim: &'static Shim,
}

/// An owned `dpm_event`, freed on drop.
pub struct EventHandle {
    raw: NonNull<RawEvent>,
    shim: &'static Shim,
}

// SAFETY: each handle owns a heap copy of SYCL objects (a cl_program with its context and
// device; a sycl::kernel; a sycl::event), whose member functions are thread-safe (SYCL
// 2020 4.3.1; OpenCL 1.2 makes every API call but clSetKernelArg thread-safe, and the shim
// never sets arguments on a shared cl_kernel: SYCL sets them per submission). Freed only
// in Drop.
unsafe impl Send for ProgramHandle {}
// SAFETY: as for Send.
unsafe impl Sync for ProgramHandle {}
// SAFETY: as for ProgramHandle.
unsafe impl Send for KernelHandle {}
// SAFETY: as for ProgramHandle.
unsafe impl Sync for KernelHandle {}
// SAFETY: as for ProgramHandle.
unsafe impl Send for EventHandle {}
// SAFETY: as for ProgramHandle.
unsafe impl Sync for EventHandle {}

impl Drop for ProgramHandle {
    fn drop(&mut self) {
        // SAFETY: owned by this handle alone, freed once, here; never throws into Rust.
        unsafe { (self.shim.program.program_free)(self.raw.as_ptr()) }
    }
}

impl Drop for KernelHandle {
    fn drop(&mut self) {
        // SAFETY: as for ProgramHandle::drop.
        unsafe { (self.shim.program.kernel_free)(self.raw.as_ptr()) }
    }
}

impl Drop for EventHandle {
    fn drop(&mut self) {
        // SAFETY: as for ProgramHandle::drop.
        unsafe { (self.shim.program.event_free)(self.raw.as_ptr()) }
    }
}

/// Copies and frees a string the shim returned (NULL: empty).
fn take_shim_string(shim: &Shim, raw: *mut c_char) -> String {
    if raw.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string malloc'ed by the shim, copied here and then freed
    // once with dpm_string_free.
    let text = unsafe { CStr::from_ptr(raw) }.to_string_lossy().into_owned();
    // SAFETY: as above; freed once.
    unsafe { (shim.program.string_free)(raw) };
    text
}

fn c_string(text: &str, what: &str) -> ShimResult<CString> {
    CString::new(text)
        .map_err(|_| ShimError { status: STATUS_ARG, message: format!("the {what} contains a NUL character") })
}

/// A failed build: the status error and the compiler's log.
pub struct BuildError {
    pub error: ShimError,
    pub log: String,
}

impl ContextHandle {
    /// A new queue on `device` with `DPM_QUEUE_*` flags.
    pub fn create_queue_with(&self, device: &DeviceHandle, properties: c_int) -> ShimResult<QueueHandle> {
        let mut out: *mut RawQueue = ptr::null_mut();
        let f = self.shim.program.queue_create_with;
        // SAFETY: live context and device handles and a valid out-parameter.
        self.shim.check(unsafe { f(self.raw.as_ptr(), device.raw.as_ptr(), properties, &mut out) })?;
        Ok(QueueHandle { raw: non_null(out, "queue")?, shim: self.shim })
    }

    /// Builds a program (`PROGRAM_*` format) for `device`: the program and its log, or
    /// (a build failure) the error with the log.
    pub fn build_program(
        &self,
        device: &DeviceHandle,
        format: c_int,
        data: &[u8],
        options: &str,
    ) -> Result<(ProgramHandle, String), BuildError> {
        let no_log = |error: ShimError| BuildError { error, log: String::new() };
        let options = c_string(options, "build options").map_err(no_log)?;
        let mut out: *mut RawProgram = ptr::null_mut();
        let mut log: *mut c_char = ptr::null_mut();
        let f = self.shim.program.program_create;
        // SAFETY: live handles; `data` is valid for its length and `options` is NUL-
        // terminated, both only read during the call; valid out-parameters.
        let status = unsafe {
            f(
                self.raw.as_ptr(),
                device.raw.as_ptr(),
                format,
                data.as_ptr().cast(),
                data.len(),
                options.as_ptr(),
                &mut out,
                &mut log,
            )
        };
        self.built(status, out, log)
    }
}

impl ContextHandle {
    /// What a build call left: the program and its log, or the error with the log (the
    /// log is taken either way).
    fn built(
        &self,
        status: c_int,
        out: *mut RawProgram,
        log: *mut c_char,
    ) -> Result<(ProgramHandle, String), BuildError> {
        let checked = self.shim.check(status);
        let log = take_shim_string(self.shim, log);
        match checked {
            Ok(()) => match non_null(out, "program") {
                Ok(raw) => Ok((ProgramHandle { raw, shim: self.shim }, log)),
                Err(error) => Err(BuildError { error, log: String::new() }),
            },
            Err(error) => Err(BuildError { error, log }),
        }
    }
}

/// SYCL source to build: the text, virtual include files (name, content), name
/// expressions to register, and compiler flags (one each).
pub struct SyclSource<'a> {
    pub text: &'a str,
    pub headers: &'a [(String, String)],
    pub registered: &'a [String],
    pub options: &'a [String],
}

impl ContextHandle {
    /// Builds SYCL source for `device`: the program and its log, or (a build failure, or
    /// `STATUS_UNSUPPORTED`) the error with the log.
    pub fn build_sycl_program(
        &self,
        device: &DeviceHandle,
        source: &SyclSource<'_>,
    ) -> Result<(ProgramHandle, String), BuildError> {
        let no_log = |error: ShimError| BuildError { error, log: String::new() };
        let strings = |items: &mut dyn Iterator<Item = &String>, what: &str| -> Result<Vec<CString>, BuildError> {
            items.map(|item| c_string(item, what).map_err(no_log)).collect()
        };
        let names = strings(&mut source.headers.iter().map(|(name, _)| name), "a header name")?;
        let contents = strings(&mut source.headers.iter().map(|(_, content)| content), "a header's content")?;
        let registered = strings(&mut source.registered.iter(), "a registered name")?;
        let options = strings(&mut source.options.iter(), "a build option")?;
        let pointers = |items: &[CString]| items.iter().map(|item| item.as_ptr()).collect::<Vec<_>>();
        let (names_p, contents_p, registered_p, options_p) =
            (pointers(&names), pointers(&contents), pointers(&registered), pointers(&options));
        let mut out: *mut RawProgram = ptr::null_mut();
        let mut log: *mut c_char = ptr::null_mut();
        let f = self.shim.program.program_create_sycl;
        // SAFETY: live handles; the text is valid for its length and every array holds as
        // many NUL-terminated strings as its count says, all only read during the call;
        // valid out-parameters.
        let status = unsafe {
            f(
                self.raw.as_ptr(),
                device.raw.as_ptr(),
                source.text.as_ptr().cast(),
                source.text.len(),
                names_p.as_ptr(),
                contents_p.as_ptr(),
                names_p.len(),
                registered_p.as_ptr(),
                registered_p.len(),
                options_p.as_ptr(),
                options_p.len(),
                &mut out,
                &mut log,
            )
        };
        self.built(status, out, log)
    }
}

impl DeviceHandle {
    /// Whether this shim's runtime compiles SYCL source for the device.
    pub fn can_compile_sycl(&self) -> ShimResult<bool> {
        let mut out: c_int = 0;
        // SAFETY: a live device handle and a valid out-parameter.
        self.shim.check(unsafe { (self.shim.program.device_can_compile_sycl)(self.raw.as_ptr(), &mut out) })?;
        Ok(out != 0)
    }
}

impl QueueHandle {
    /// Addresses of the queue's `sycl::queue`, `sycl::context` and `sycl::device`.
    pub fn native(&self) -> ShimResult<(usize, usize, usize)> {
        let (mut q, mut c, mut d) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
        // SAFETY: a live queue handle and valid out-parameters.
        self.shim.check(unsafe { (self.shim.program.queue_native)(self.raw.as_ptr(), &mut q, &mut c, &mut d) })?;
        Ok((q as usize, c as usize, d as usize))
    }

    fn event(&self, status: c_int, out: *mut RawEvent) -> ShimResult<EventHandle> {
        self.shim.check(status)?;
        Ok(EventHandle { raw: non_null(out, "event")?, shim: self.shim })
    }

    /// Submits `kernel` over `dims` dimensions of `global` (work-groups of `local`) after
    /// `deps`.
    ///
    /// # Safety
    /// Every pointer argument addresses memory that stays allocated until the event completes.
    pub unsafe fn submit(
        &self,
        kernel: &KernelHandle,
        args: &[RawKernelArg],
        dims: u32,
        global: &[u64; 3],
        local: Option<&[u64; 3]>,
        deps: &[&EventHandle],
    ) -> ShimResult<EventHandle> {
        let deps: Vec<*const RawEvent> = deps.iter().map(|e| e.raw.as_ptr().cast_const()).collect();
        let mut out: *mut RawEvent = ptr::null_mut();
        let local = local.map_or(ptr::null(), |l| l.as_ptr());
        let f = self.shim.program.submit;
        // SAFETY: live handles; `args`, `global`, `local` (NULL or 3 values) and `deps`
        // are valid for the call, which copies what it keeps; the memory the arguments
        // address is this fn's contract.
        let status = unsafe {
            f(
                self.raw.as_ptr(),
                kernel.raw.as_ptr(),
                args.as_ptr(),
                args.len(),
                dims,
                global.as_ptr(),
                local,
                deps.as_ptr(),
                deps.len(),
                &mut out,
            )
        };
        self.event(status, out)
    }

    /// Submits `kernel` as `submit` does, after nothing, and waits for it (`dpm_submit_wait`).
    ///
    /// # Safety
    /// Every pointer argument addresses memory that stays allocated until this returns.
    pub unsafe fn submit_wait(
        &self,
        kernel: &KernelHandle,
        args: &[RawKernelArg],
        dims: u32,
        global: &[u64; 3],
        local: Option<&[u64; 3]>,
    ) -> ShimResult<()> {
        let local = local.map_or(ptr::null(), |l| l.as_ptr());
        let f = self.shim.program.submit_wait;
        // SAFETY: live handles; `args`, `global` and `local` (NULL or 3 values) are valid
        // for the call, which copies what it keeps; the memory the arguments address is
        // this fn's contract.
        let status = unsafe {
            f(self.raw.as_ptr(), kernel.raw.as_ptr(), args.as_ptr(), args.len(), dims, global.as_ptr(), local)
        };
        self.shim.check(status)
    }

    /// Copies `nbytes` from `src` to `dst` after `deps`.
    ///
    /// # Safety
    /// Both ranges stay valid until the event completes.
    pub unsafe fn memcpy_async(
        &self,
        dst: u64,
        src: u64,
        nbytes: u64,
        deps: &[&EventHandle],
    ) -> ShimResult<EventHandle> {
        let (d, s, n) = (as_pointer(dst)? as *mut c_void, as_pointer(src)? as *const c_void, size(nbytes, "size")?);
        let deps: Vec<*const RawEvent> = deps.iter().map(|e| e.raw.as_ptr().cast_const()).collect();
        let mut out: *mut RawEvent = ptr::null_mut();
        let f = self.shim.program.memcpy_async;
        // SAFETY: live handles and valid arrays; the ranges are this fn's contract.
        let status = unsafe { f(self.raw.as_ptr(), d, s, n, deps.as_ptr(), deps.len(), &mut out) };
        self.event(status, out)
    }

    /// Fills `count` copies of `pattern` at `dst` after `deps`.
    ///
    /// # Safety
    /// `dst..dst + count * pattern.len()` stays valid until the event completes.
    pub unsafe fn fill_async(
        &self,
        dst: u64,
        pattern: &[u8],
        count: u64,
        deps: &[&EventHandle],
    ) -> ShimResult<EventHandle> {
        let (d, n) = (as_pointer(dst)? as *mut c_void, size(count, "count")?);
        let deps: Vec<*const RawEvent> = deps.iter().map(|e| e.raw.as_ptr().cast_const()).collect();
        let mut out: *mut RawEvent = ptr::null_mut();
        let f = self.shim.program.fill_async;
        // SAFETY: live handles and valid arrays; the pattern is read during the call (SYCL
        // copies it); the destination is this fn's contract.
        let status = unsafe {
            f(self.raw.as_ptr(), d, pattern.as_ptr().cast(), pattern.len(), n, deps.as_ptr(), deps.len(), &mut out)
        };
        self.event(status, out)
    }

    /// A barrier after `deps` (everything so far when empty).
    pub fn barrier(&self, deps: &[&EventHandle]) -> ShimResult<EventHandle> {
        let deps: Vec<*const RawEvent> = deps.iter().map(|e| e.raw.as_ptr().cast_const()).collect();
        let mut out: *mut RawEvent = ptr::null_mut();
        // SAFETY: a live queue handle, valid event handles and out-parameter.
        let status = unsafe { (self.shim.program.barrier)(self.raw.as_ptr(), deps.as_ptr(), deps.len(), &mut out) };
        self.event(status, out)
    }

    /// Waits for `event`, reporting its failure or the queue's asynchronous errors.
    pub fn wait_event(&self, event: &EventHandle) -> ShimResult<()> {
        // SAFETY: live queue and event handles.
        self.shim.check(unsafe { (self.shim.program.event_wait)(self.raw.as_ptr(), event.raw.as_ptr()) })
    }
}

impl ProgramHandle {
    /// The kernel names the runtime lists.
    pub fn kernel_names(&self) -> ShimResult<Vec<String>> {
        let mut out: *mut c_char = ptr::null_mut();
        // SAFETY: a live program handle and a valid out-parameter.
        self.shim.check(unsafe { (self.shim.program.program_kernel_names)(self.raw.as_ptr(), &mut out) })?;
        let names = take_shim_string(self.shim, out);
        Ok(names.split(';').filter(|n| !n.is_empty()).map(str::to_string).collect())
    }

    /// The kernel `name`: `Ok(None)` when there is none of that name.
    pub fn kernel(&self, name: &str) -> ShimResult<Option<KernelHandle>> {
        let name = c_string(name, "kernel name")?;
        let mut out: *mut RawKernel = ptr::null_mut();
        // SAFETY: a live program handle, a NUL-terminated name and a valid out-parameter.
        let status = unsafe { (self.shim.program.kernel_create)(self.raw.as_ptr(), name.as_ptr(), &mut out) };
        if status == STATUS_NOT_FOUND {
            return Ok(None);
        }
        self.shim.check(status)?;
        Ok(Some(KernelHandle { raw: non_null(out, "kernel")?, shim: self.shim }))
    }
}

impl KernelHandle {
    /// The runtime's facts of the kernel.
    pub fn info(&self) -> ShimResult<RawKernelInfo> {
        let mut info = RawKernelInfo::default();
        // SAFETY: a live kernel handle and a valid out-parameter.
        self.shim.check(unsafe { (self.shim.program.kernel_get_info)(self.raw.as_ptr(), &mut info) })?;
        Ok(info)
    }

    /// `(DPM_ARG_* kind, type name)` of argument `index`.
    pub fn arg_info(&self, index: u32) -> ShimResult<(c_int, String)> {
        let mut kind: c_int = 0;
        let mut name: *mut c_char = ptr::null_mut();
        let f = self.shim.program.kernel_arg_info;
        // SAFETY: a live kernel handle and valid out-parameters.
        let status = unsafe { f(self.raw.as_ptr(), index, &mut kind, &mut name) };
        self.shim.check(status)?;
        Ok((kind, take_shim_string(self.shim, name)))
    }
}

/// What `on_complete` hands the shim: the Rust closure, boxed twice so that one thin
/// pointer carries it.
type BoxedDone = Box<Box<dyn FnOnce(c_int) + Send>>;

unsafe extern "C" fn call_done(user: *mut c_void, status: c_int) {
    // SAFETY: `user` is the BoxedDone `on_complete` leaked, which the shim calls exactly
    // once: ownership comes back here.
    let done: BoxedDone = unsafe { Box::from_raw(user.cast()) };
    // A panic must not unwind into C.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || done(status)));
}

impl EventHandle {
    /// 0 submitted, 1 running, 2 complete.
    pub fn status(&self) -> ShimResult<c_int> {
        let mut out: c_int = 0;
        // SAFETY: a live event handle and a valid out-parameter.
        self.shim.check(unsafe { (self.shim.program.event_status)(self.raw.as_ptr(), &mut out) })?;
        Ok(out)
    }

    /// `(submit, start, end)` nanoseconds, on a profiling queue.
    pub fn profiling(&self) -> ShimResult<(u64, u64, u64)> {
        let (mut submit, mut start, mut end) = (0u64, 0u64, 0u64);
        let f = self.shim.program.event_profiling;
        // SAFETY: a live event handle and valid out-parameters.
        self.shim.check(unsafe { f(self.raw.as_ptr(), &mut submit, &mut start, &mut end) })?;
        Ok((submit, start, end))
    }

    /// Calls `done(status)` once when the event completes (0) or fails, from a runtime
    /// thread (or this one, if it is complete already).
    pub fn on_complete(&self, done: Box<dyn FnOnce(c_int) + Send>) -> ShimResult<()> {
        let user: *mut c_void = Box::into_raw(Box::new(done)).cast();
        // SAFETY: a live event handle; `call_done` takes back `user` when the shim calls
        // it, exactly once, and the shim calls nothing when it fails (then it is ours).
        let status = unsafe { (self.shim.program.event_on_complete)(self.raw.as_ptr(), call_done, user) };
        if status != 0 {
            // SAFETY: the shim failed, so it will never call `call_done`: `user` is still
            // the box leaked above, taken back once here.
            drop(unsafe { Box::<Box<dyn FnOnce(c_int) + Send>>::from_raw(user.cast()) });
        }
        self.shim.check(status)
    }
}
