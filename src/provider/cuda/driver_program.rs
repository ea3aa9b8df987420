//! The driver calls of programs, kernels and events (`cuModuleLoadDataEx`,
//! `cuLaunchKernel`, `cuEvent*`, `cuLaunchHostFunc`): typed wrappers in a child of
//! `driver.rs`, which stays the one place the driver is called.

use std::ffi::{c_int, c_uint, c_void, CString};

use cudarc::driver::sys::{CUevent, CUfunction, CUmodule};

use super::{ContextHandle, CurrentContext, Driver, DriverError, DriverResult, Stream};

/// `CU_JIT_INFO_LOG_BUFFER` ... of `CUjit_option`.
const CU_JIT_INFO_LOG_BUFFER: c_int = 3;
const CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: c_int = 4;
const CU_JIT_ERROR_LOG_BUFFER: c_int = 5;
const CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;
/// `CU_EVENT_DEFAULT` (timing on) and `CU_EVENT_DISABLE_TIMING`.
const CU_EVENT_DEFAULT: c_uint = 0;
const CU_EVENT_DISABLE_TIMING: c_uint = 2;
/// `CUDA_ERROR_NOT_READY`.
const CUDA_ERROR_NOT_READY: c_uint = 600;
/// `CU_FUNC_ATTRIBUTE_*`.
pub(in crate::provider::cuda) const FUNC_MAX_THREADS_PER_BLOCK: c_int = 0;
pub(in crate::provider::cuda) const FUNC_SHARED_SIZE_BYTES: c_int = 1;
pub(in crate::provider::cuda) const FUNC_LOCAL_SIZE_BYTES: c_int = 3;
pub(in crate::provider::cuda) const FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;

const LOG_BYTES: usize = 16 << 10;

/// A loaded module (`cuModuleUnload` with its context pushed, when dropped).
pub(in crate::provider::cuda) struct Module {
    driver: &'static Driver,
    context: ContextHandle,
    raw: CUmodule,
}

// SAFETY: a module handle may be used from any thread with its context current (every
// call on it pushes the context); the driver API is thread-safe.
unsafe impl Send for Module {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for Module {}

impl Drop for Module {
    fn drop(&mut self) {
        if let (Ok(_current), Some(unload)) = (self.driver.push(self.context), self.driver.table.cuModuleUnload) {
            // SAFETY: loaded by `module_load` and unloaded once; kernels of it that still
            // run hold the `Module` through their program (see `CudaKernel`).
            let _ = unsafe { unload(self.raw) };
        }
    }
}

/// A kernel function of a [`Module`] (valid while the module is loaded).
#[derive(Clone, Copy)]
pub(in crate::provider::cuda) struct Function(CUfunction);

// SAFETY: a function handle is an identifier valid on every thread while its module is
// loaded (its owner keeps the module); the driver API is thread-safe.
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

/// An event (`cuEventDestroy` when dropped; the driver destroys it once its work is done).
pub(in crate::provider::cuda) struct Event {
    driver: &'static Driver,
    context: ContextHandle,
    raw: CUevent,
}

// SAFETY: events may be used from any thread (the calls that need a context push it);
// the driver API is thread-safe.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl Drop for Event {
    fn drop(&mut self) {
        if let (Ok(_current), Some(destroy)) = (self.driver.push(self.context), self.driver.table.cuEventDestroy) {
            // SAFETY: made by `event_create`, destroyed once.
            let _ = unsafe { destroy(self.raw) };
        }
    }
}

fn missing(symbol: &'static str) -> DriverError {
    DriverError::missing(symbol, "this CUDA driver cannot load or launch kernels")
}

fn log_text(buffer: &[u8]) -> String {
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).trim_end().to_string()
}

impl CurrentContext {
    /// `cuModuleLoadDataEx` of PTX text: the module and the JIT's info log, or the error
    /// with the JIT's error log.
    pub(in crate::provider::cuda) fn module_load(&self, ptx: &str) -> Result<(Module, String), (DriverError, String)> {
        let load = self.table().cuModuleLoadDataEx.ok_or_else(|| (missing("cuModuleLoadDataEx"), String::new()))?;
        let image = CString::new(ptx).map_err(|_| (missing("a PTX image without NUL bytes"), String::new()))?;
        let mut info = vec![0u8; LOG_BYTES];
        let mut error = vec![0u8; LOG_BYTES];
        let mut options = [
            CU_JIT_INFO_LOG_BUFFER,
            CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            CU_JIT_ERROR_LOG_BUFFER,
            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // The JIT takes each option's value in a pointer-sized slot: the sizes as integers.
        let mut values: [*mut c_void; 4] =
            [info.as_mut_ptr().cast(), LOG_BYTES as *mut c_void, error.as_mut_ptr().cast(), LOG_BYTES as *mut c_void];
        let mut module: CUmodule = std::ptr::null_mut();
        // SAFETY: `image` is a NUL-terminated PTX image; the log buffers have the sizes the
        // options give and outlive the call; a context is current.
        let r = unsafe {
            load(&mut module, image.as_ptr().cast(), options.len() as c_uint, options.as_mut_ptr(), values.as_mut_ptr())
        };
        match self.driver.status("cuModuleLoadDataEx", r) {
            Ok(()) if !module.is_null() => {
                Ok((Module { driver: self.driver, context: self.context, raw: module }, log_text(&info)))
            }
            Ok(()) => Err((missing("cuModuleLoadDataEx (a NULL module)"), log_text(&error))),
            Err(e) => Err((e, log_text(&error))),
        }
    }

    /// `cuModuleGetFunction`: `Ok(None)` when the module has no such kernel.
    pub(in crate::provider::cuda) fn module_function(
        &self,
        module: &Module,
        name: &str,
    ) -> DriverResult<Option<Function>> {
        let get = self.table().cuModuleGetFunction.ok_or_else(|| missing("cuModuleGetFunction"))?;
        let Ok(name) = CString::new(name) else { return Ok(None) };
        let mut function: CUfunction = std::ptr::null_mut();
        // SAFETY: a loaded module, a NUL-terminated name, a valid out-pointer; a context is current.
        let r = unsafe { get(&mut function, module.raw, name.as_ptr()) };
        const CUDA_ERROR_NOT_FOUND: c_uint = 500;
        if r == CUDA_ERROR_NOT_FOUND {
            return Ok(None);
        }
        self.driver.status("cuModuleGetFunction", r)?;
        Ok((!function.is_null()).then_some(Function(function)))
    }

    /// `cuFuncGetAttribute`.
    pub(in crate::provider::cuda) fn function_attribute(
        &self,
        function: Function,
        attribute: c_int,
    ) -> DriverResult<i32> {
        let get = self.table().cuFuncGetAttribute.ok_or_else(|| missing("cuFuncGetAttribute"))?;
        let mut value: c_int = 0;
        // SAFETY: a function of a loaded module, a documented attribute, a valid out-pointer.
        self.driver.status("cuFuncGetAttribute", unsafe { get(&mut value, attribute, function.0) })?;
        Ok(value)
    }

    /// `cuFuncSetAttribute` (the kernel's dynamic shared memory limit, say).
    pub(in crate::provider::cuda) fn set_function_attribute(
        &self,
        function: Function,
        attribute: c_int,
        value: i32,
    ) -> DriverResult<()> {
        let set = self.table().cuFuncSetAttribute.ok_or_else(|| missing("cuFuncSetAttribute"))?;
        // SAFETY: a function of a loaded module and a documented attribute; a context is current.
        self.driver.status("cuFuncSetAttribute", unsafe { set(function.0, attribute, value) })
    }

    /// `cuLaunchKernel` on `stream`: `grid` blocks of `block` threads, `params` pointing at
    /// each argument's bytes.
    ///
    /// # Safety
    /// `params` has one pointer per kernel parameter, each to a value of that parameter's
    /// size (read during the call); every device pointer among them addresses memory that
    /// stays allocated until the launch's work completes.
    pub(in crate::provider::cuda) unsafe fn launch(
        &self,
        function: Function,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        stream: &Stream,
        params: &mut [*mut c_void],
    ) -> DriverResult<()> {
        let launch = self.table().cuLaunchKernel.ok_or_else(|| missing("cuLaunchKernel"))?;
        let params_ptr = if params.is_empty() { std::ptr::null_mut() } else { params.as_mut_ptr() };
        // SAFETY: forwarded to the caller (see `# Safety`); the stream is live.
        let r = unsafe {
            launch(
                function.0,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared_bytes,
                stream.raw,
                params_ptr,
                std::ptr::null_mut(),
            )
        };
        self.driver.status("cuLaunchKernel", r)
    }

    /// `cuEventCreate` (with timing when `timing`).
    pub(in crate::provider::cuda) fn event_create(&self, timing: bool) -> DriverResult<Event> {
        let create = self.table().cuEventCreate.ok_or_else(|| missing("cuEventCreate"))?;
        let mut event: CUevent = std::ptr::null_mut();
        let flags = if timing { CU_EVENT_DEFAULT } else { CU_EVENT_DISABLE_TIMING };
        // SAFETY: a valid out-pointer and documented flags; a context is current.
        self.driver.status("cuEventCreate", unsafe { create(&mut event, flags) })?;
        Ok(Event { driver: self.driver, context: self.context, raw: event })
    }

    /// `cuEventRecord` of `event` on `stream`.
    pub(in crate::provider::cuda) fn event_record(&self, event: &Event, stream: &Stream) -> DriverResult<()> {
        let record = self.table().cuEventRecord.ok_or_else(|| missing("cuEventRecord"))?;
        // SAFETY: a live event and stream of this context.
        self.driver.status("cuEventRecord", unsafe { record(event.raw, stream.raw) })
    }

    /// `cuStreamWaitEvent`: later work on `stream` waits for `event`.
    pub(in crate::provider::cuda) fn stream_wait_event(&self, stream: &Stream, event: &Event) -> DriverResult<()> {
        let wait = self.table().cuStreamWaitEvent.ok_or_else(|| missing("cuStreamWaitEvent"))?;
        // SAFETY: a live stream and event; flags must be 0.
        self.driver.status("cuStreamWaitEvent", unsafe { wait(stream.raw, event.raw, 0) })
    }

    /// Whether this driver has `cuStreamWriteValue32`/`64` (`cuStreamWriteValue{32,64}_v2`).
    pub(in crate::provider::cuda) fn has_stream_write_value(&self) -> bool {
        self.table().cuStreamWriteValue32.is_some() && self.table().cuStreamWriteValue64.is_some()
    }

    /// `cuStreamWriteValue32` or `cuStreamWriteValue64` (by `value`'s length, 4 or 8):
    /// writes `value` (little-endian) at `dst` once the work queued on `stream` before it
    /// is done, as one store of its size.
    ///
    /// # Safety
    /// `dst` is aligned to the value's size, and `dst..dst + value.len()` is memory the
    /// device can write through this address that stays allocated until `stream` has
    /// been synchronised: not managed memory, which these calls do not take.
    pub(in crate::provider::cuda) unsafe fn stream_write_value(
        &self,
        stream: &Stream,
        dst: u64,
        value: &[u8],
    ) -> DriverResult<()> {
        if let Ok(word) = <[u8; 4]>::try_from(value) {
            let write = self.table().cuStreamWriteValue32.ok_or_else(|| missing("cuStreamWriteValue32"))?;
            // SAFETY: forwarded to the caller; a live stream; flags 0 (the default write).
            return self
                .driver
                .status("cuStreamWriteValue32", unsafe { write(stream.raw, dst, u32::from_le_bytes(word), 0) });
        }
        let Ok(word) = <[u8; 8]>::try_from(value) else {
            return Err(DriverError::missing("cuStreamWriteValue", "a value is 4 or 8 bytes"));
        };
        let write = self.table().cuStreamWriteValue64.ok_or_else(|| missing("cuStreamWriteValue64"))?;
        // SAFETY: forwarded to the caller; a live stream; flags 0 (the default write).
        self.driver.status("cuStreamWriteValue64", unsafe { write(stream.raw, dst, u64::from_le_bytes(word), 0) })
    }

    /// `cuLaunchHostFunc`: calls `done(user)` on a driver thread once the work queued on
    /// `stream` before it is done.
    ///
    /// # Safety
    /// `done` takes ownership of `user` and makes no CUDA call (the driver forbids it there).
    pub(in crate::provider::cuda) unsafe fn launch_host_func(
        &self,
        stream: &Stream,
        done: unsafe extern "C" fn(*mut c_void),
        user: *mut c_void,
    ) -> DriverResult<()> {
        let launch = self.table().cuLaunchHostFunc.ok_or_else(|| missing("cuLaunchHostFunc"))?;
        // SAFETY: forwarded to the caller; the stream is live.
        self.driver.status("cuLaunchHostFunc", unsafe { launch(stream.raw, Some(done), user) })
    }
}

impl Event {
    /// `cuEventSynchronize`.
    pub(in crate::provider::cuda) fn synchronize(&self) -> DriverResult<()> {
        let sync = self.driver.table.cuEventSynchronize.ok_or_else(|| missing("cuEventSynchronize"))?;
        // SAFETY: a live event; no context needs to be current.
        self.driver.status("cuEventSynchronize", unsafe { sync(self.raw) })
    }

    /// `cuEventElapsedTime`: milliseconds from `start` to this event (both made with
    /// timing, both complete).
    pub(in crate::provider::cuda) fn elapsed_since(&self, start: &Event) -> DriverResult<f32> {
        let elapsed = self.driver.table.cuEventElapsedTime.ok_or_else(|| missing("cuEventElapsedTime"))?;
        let mut ms: f32 = 0.0;
        // SAFETY: two live events and a valid out-pointer; the driver checks they completed.
        self.driver.status("cuEventElapsedTime", unsafe { elapsed(&mut ms, start.raw, self.raw) })?;
        Ok(ms)
    }

    /// `cuEventQuery`: whether its work is done.
    pub(in crate::provider::cuda) fn is_complete(&self) -> DriverResult<bool> {
        let query = self.driver.table.cuEventQuery.ok_or_else(|| missing("cuEventQuery"))?;
        // SAFETY: a live event.
        let r = unsafe { query(self.raw) };
        if r == CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        self.driver.status("cuEventQuery", r).map(|()| true)
    }
}
