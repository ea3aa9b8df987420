//! Programs, kernels and submissions of the CUDA provider: PTX loaded by the driver
//! (`cuModuleLoadDataEx`, which compiles it for the GPU it has), kernels launched with
//! `cuLaunchKernel` on the queue's stream, and events recorded after each submission. A
//! completion callback is a host function queued on the stream after the work
//! (`cuLaunchHostFunc`), which makes no CUDA call. CUDA C is compiled to PTX by NVRTC
//! (`nvrtc.rs`, loaded at run time) and then loaded as PTX is.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::{MemoryError, Result};
use crate::runtime::program::{
    events_of, kernel_of, ArgInfo, ArgKind, BuildFailure, Built, Completion, Event, EventStatus, Kernel, KernelInfo,
    LaunchArg, NdRange, Profile, Program, ProgramBuilder, ProgramSource, QueueProperties, Submissions,
};
use crate::runtime::{Address, Context, Device};

use super::driver::program_calls::{
    Event as DriverEvent, Function, Module, FUNC_LOCAL_SIZE_BYTES, FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES,
    FUNC_MAX_THREADS_PER_BLOCK, FUNC_SHARED_SIZE_BYTES,
};
use super::driver::{CurrentContext, Stream};
use super::logic::fill_steps;
use super::nvrtc::{self, Compiled};
use super::{CudaContext, CudaQueue};
use cudarc::driver::sys::CUdevice_attribute;

/// One `.entry` of a PTX module: its name and its parameters' PTX types (`.u64`, `.f32`,
/// or the whole declaration for one this parser does not know, such as `.b8 p[16]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PtxEntry {
    pub name: String,
    pub params: Vec<String>,
}

/// The kernels a PTX module declares (`.entry name ( .param .TYPE name, ... )`).
pub(super) fn ptx_entries(ptx: &str) -> Vec<PtxEntry> {
    // Comments out first, so that a commented-out entry is not listed.
    let mut text = String::with_capacity(ptx.len());
    for line in ptx.lines() {
        text.push_str(line.split("//").next().unwrap_or(""));
        text.push('\n');
    }
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(".entry") {
        rest = &rest[at + ".entry".len()..];
        let name: String =
            rest.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect();
        if name.is_empty() {
            continue;
        }
        let after_name = rest.trim_start()[name.len()..].trim_start();
        let mut params = Vec::new();
        if let Some(list) = after_name.strip_prefix('(') {
            let list = list.split(')').next().unwrap_or("");
            for param in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let words: Vec<&str> = param.split_whitespace().collect();
                // `.param .u64 name`, or `.param .u64 .ptr .global .align 4 name`.
                let ty = words.get(1).copied().unwrap_or("");
                let known = matches!(
                    ty,
                    ".u8"
                        | ".s8"
                        | ".b8"
                        | ".u16"
                        | ".s16"
                        | ".b16"
                        | ".u32"
                        | ".s32"
                        | ".b32"
                        | ".u64"
                        | ".s64"
                        | ".b64"
                        | ".f32"
                        | ".f64"
                ) && !param.contains('[');
                params.push(if known { ty.to_string() } else { param.to_string() });
            }
        }
        out.push(PtxEntry { name, params });
    }
    out
}

/// The entry of `names` that `name` stands for: itself, or the one C++ kernel (not
/// `extern "C"`) whose mangled name is that of a function `name` (`_Z5saxpyPfS_fj` for
/// `saxpy`); `None` when there is none or more than one (overloads, templates).
pub(super) fn entry_named<'a>(names: &'a [String], name: &str) -> Option<&'a str> {
    if let Some(exact) = names.iter().find(|n| *n == name) {
        return Some(exact);
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return None;
    }
    let prefix = format!("_Z{}{name}", name.len());
    let mut found = names.iter().filter(|n| n.starts_with(&prefix));
    match (found.next(), found.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// The size of a PTX parameter type (`None`: one this provider does not pass).
fn ptx_size(ty: &str) -> Option<u32> {
    Some(match ty {
        ".u8" | ".s8" | ".b8" => 1,
        ".u16" | ".s16" | ".b16" => 2,
        ".u32" | ".s32" | ".b32" | ".f32" => 4,
        ".u64" | ".s64" | ".b64" | ".f64" => 8,
        _ => return None,
    })
}

/// Dynamic shared memory every kernel may use without asking (`cuFuncSetAttribute`
/// raises it, up to the device's opt-in limit).
const DEFAULT_SHARED_LIMIT: u32 = 48 << 10;

/// A module loaded from PTX in one context.
pub struct CudaProgram {
    module: Arc<Module>,
    context: Arc<CudaContext>,
    entries: HashMap<String, Vec<String>>,
    names: Vec<String>,
}

/// A kernel function of a [`CudaProgram`] (it holds the module).
pub struct CudaKernel {
    function: Function,
    _module: Arc<Module>,
    context: Arc<CudaContext>,
    params: Vec<String>,
    info: KernelInfo,
}

/// A submission's event: recorded on the stream after the work.
pub struct CudaEvent {
    event: DriverEvent,
    /// On a profiling queue: the event before the work, and when it was submitted.
    timing: Option<Timing>,
    stream: Arc<Stream>,
    // Last: the events above are destroyed with the context alive.
    context: Arc<CudaContext>,
}

/// What a profiling queue's event needs for its timestamps.
struct Timing {
    start: DriverEvent,
    anchor: Arc<Anchor>,
    submit_ns: u64,
}

/// A point where the device's event clock and the host's clock agree: an event recorded
/// on an idle stream and waited for, and the host time once it had happened (so a
/// timestamp measured from it is never earlier than the truth).
struct Anchor {
    event: DriverEvent,
    host_ns: u64,
    taken: Instant,
}

/// How long an anchor serves: `cuEventElapsedTime` is an `f32` of milliseconds, precise
/// to well under a microsecond over this span.
const ANCHOR_SPAN: Duration = Duration::from_secs(1);

/// A profiling queue's clock: its own stream for anchors (so taking one never waits for
/// the queue's work) and the latest anchor.
struct ProfileClock {
    anchor: Mutex<Option<Arc<Anchor>>>,
    stream: Stream,
}

/// What a CUDA queue keeps for submissions: the properties it was made with (a stream
/// runs its work in order whatever they say) and, with `enable_profiling`, its clock.
#[derive(Default)]
pub(super) struct QueueKernels {
    pub properties: QueueProperties,
    clock: Option<ProfileClock>,
}

impl QueueKernels {
    pub(super) fn new(current: &CurrentContext, properties: QueueProperties) -> Result<Self> {
        let clock = if properties.enable_profiling {
            Some(ProfileClock { anchor: Mutex::new(None), stream: current.stream_create()? })
        } else {
            None
        };
        Ok(QueueKernels { properties, clock })
    }
}

fn host_now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl ProfileClock {
    /// The anchor to measure a submission made now from (a new one past [`ANCHOR_SPAN`]).
    fn anchor(&self, current: &CurrentContext) -> Result<Arc<Anchor>> {
        let mut slot = crate::sync::lock(&self.anchor);
        if let Some(anchor) = slot.as_ref().filter(|a| a.taken.elapsed() < ANCHOR_SPAN) {
            return Ok(Arc::clone(anchor));
        }
        let event = current.event_create(true)?;
        current.event_record(&event, &self.stream)?;
        event.synchronize()?;
        let anchor = Arc::new(Anchor { event, host_ns: host_now_ns(), taken: Instant::now() });
        *slot = Some(Arc::clone(&anchor));
        Ok(anchor)
    }
}

impl ProgramBuilder for CudaContext {
    fn build(&self, device: &Arc<dyn Device>, source: ProgramSource<'_>, options: &str) -> Result<Built> {
        if !self.device.same_device(device.as_ref()) {
            return Err(MemoryError::KernelQueueMismatch {
                message: format!("device '{}' is not the device of this CUDA context", device.info().name),
            });
        }
        let Some(context) = self.me.upgrade() else {
            return Err(MemoryError::ProgramsUnsupported { message: "the CUDA context is being dropped".into() });
        };
        let (ptx, compile_log) = match source {
            ProgramSource::Ptx(text) => {
                if !options.trim().is_empty() {
                    return Err(MemoryError::ProgramsUnsupported {
                        message: "the PTX loader takes no options (CUDA C's go to NVRTC)".into(),
                    });
                }
                (std::borrow::Cow::Borrowed(text), String::new())
            }
            ProgramSource::CudaC(text) => match self.compile_cuda(text, options)? {
                Ok(compiled) => (std::borrow::Cow::Owned(compiled.ptx), compiled.log),
                Err(failure) => return Ok(Err(failure)),
            },
            other => {
                return Err(MemoryError::ProgramsUnsupported {
                    message: format!(
                        "CUDA devices load PTX and CUDA C, not {} (that is for SYCL OpenCL devices)",
                        other.format_name()
                    ),
                })
            }
        };
        let current = self.current()?;
        let joined = |jit: String| match (compile_log.is_empty(), jit.is_empty()) {
            (true, _) => jit,
            (false, true) => compile_log.clone(),
            (false, false) => format!("{compile_log}\n{jit}"),
        };
        match current.module_load(&ptx) {
            Ok((module, log)) => {
                let list = ptx_entries(&ptx);
                let names = list.iter().map(|e| e.name.clone()).collect();
                let entries = list.into_iter().map(|e| (e.name, e.params)).collect();
                let program = CudaProgram { module: Arc::new(module), context, entries, names };
                Ok(Ok((Arc::new(program) as Arc<dyn Program>, joined(log))))
            }
            Err((error, log)) => Ok(Err(BuildFailure {
                summary: format!("the PTX did not load: {}", error.description()),
                log: joined(log),
            })),
        }
    }
}

impl CudaContext {
    /// CUDA C through NVRTC, for this context's device: PTX of the newest virtual
    /// architecture NVRTC has that the device runs, unless `options` name one.
    fn compile_cuda(&self, source: &str, options: &str) -> Result<std::result::Result<Compiled, BuildFailure>> {
        let version = self.driver.driver_version()?;
        let nvrtc = nvrtc::load(Some((version / 1000, (version % 1000) / 10)))
            .map_err(|message| MemoryError::NvrtcUnavailable { message })?;
        let mut list = nvrtc::split_options(options);
        if !nvrtc::names_arch(&list) {
            let attr = |a| self.driver.device_attribute(self.device.handle, a);
            let cc = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? * 10
                + attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
            let Some(arch) = nvrtc::arch_for(&nvrtc.archs, cc) else {
                return Err(MemoryError::ProgramsUnsupported {
                    message: format!(
                        "NVRTC {}.{} ({}) compiles for none of the architectures of '{}' (compute capability {}.{})",
                        nvrtc.version.0,
                        nvrtc.version.1,
                        nvrtc.path.display(),
                        self.device.info.name,
                        cc / 10,
                        cc % 10
                    ),
                });
            };
            list.push(format!("--gpu-architecture=compute_{arch}"));
        }
        let summary = |what: &str| {
            format!("the CUDA C program {what} (NVRTC {}.{} from {})", nvrtc.version.0, nvrtc.version.1, nvrtc.source)
        };
        Ok(match nvrtc.compile(source, "program.cu", &list) {
            Ok(Ok(compiled)) => Ok(compiled),
            Ok(Err(log)) => Err(BuildFailure { summary: summary("did not compile"), log }),
            Err(message) => Err(BuildFailure { summary: summary("was refused"), log: message }),
        })
    }
}

impl Program for CudaProgram {
    fn kernel_names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn kernel(&self, name: &str) -> Result<Option<Arc<dyn Kernel>>> {
        let current = self.context.current()?;
        let entry = entry_named(&self.names, name).unwrap_or(name);
        let Some(function) = current.module_function(&self.module, entry)? else { return Ok(None) };
        let params = self.entries.get(entry).cloned().unwrap_or_default();
        let args = params
            .iter()
            .map(|ty| ArgInfo {
                // A `.u64` may be a pointer or a 64-bit value: PTX does not say.
                kind: if ty == ".u64" || ty == ".b64" || ty == ".s64" { ArgKind::Unknown } else { ArgKind::Value },
                type_name: ty.clone(),
            })
            .collect();
        let attribute = |a| current.function_attribute(function, a).map(|v| v.max(0) as u64);
        let info = KernelInfo {
            function_name: name.to_string(),
            num_args: params.len() as u32,
            args,
            work_group_size: attribute(FUNC_MAX_THREADS_PER_BLOCK)?,
            preferred_work_group_size_multiple: 32,
            private_mem_size: attribute(FUNC_LOCAL_SIZE_BYTES)?,
            local_mem_size: attribute(FUNC_SHARED_SIZE_BYTES)?,
            compile_work_group_size: [0; 3],
            trailing_local: true,
        };
        let kernel = CudaKernel {
            function,
            _module: Arc::clone(&self.module),
            context: Arc::clone(&self.context),
            params,
            info,
        };
        Ok(Some(Arc::new(kernel)))
    }
}

impl Kernel for CudaKernel {
    fn info(&self) -> &KernelInfo {
        &self.info
    }
}

/// What `cuLaunchHostFunc` hands back: the completion, boxed twice for one thin pointer.
type BoxedCompletion = Box<Completion>;

unsafe extern "C" fn host_done(user: *mut c_void) {
    // SAFETY: `user` is the BoxedCompletion `on_complete` leaked, which the driver hands to
    // exactly one call of this function.
    let done: BoxedCompletion = unsafe { Box::from_raw(user.cast()) };
    // A panic must not unwind into the driver; the completion makes no CUDA call.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || done(Ok(()))));
}

impl Event for CudaEvent {
    fn wait(&self) -> Result<()> {
        Ok(self.event.synchronize()?)
    }

    fn status(&self) -> Result<EventStatus> {
        Ok(if self.event.is_complete()? { EventStatus::Complete } else { EventStatus::Submitted })
    }

    fn profile(&self) -> Result<Profile> {
        let Some(timing) = &self.timing else { return Err(MemoryError::ProfilingNotEnabled) };
        self.event.synchronize()?;
        let ns = |ms: f32| (f64::from(ms.max(0.0)) * 1e6) as u64;
        let start = timing.anchor.host_ns + ns(timing.start.elapsed_since(&timing.anchor.event)?);
        let end = start + ns(self.event.elapsed_since(&timing.start)?);
        Ok(Profile { submit: timing.submit_ns, start, end })
    }

    fn on_complete(&self, done: Completion) -> Result<()> {
        if self.event.is_complete()? {
            done(Ok(()));
            return Ok(());
        }
        let current = self.context.current()?;
        current.stream_wait_event(&self.stream, &self.event)?;
        let user: *mut c_void = Box::into_raw(Box::new(done)).cast();
        // SAFETY: `host_done` takes `user` back exactly once and makes no CUDA call.
        let launched = unsafe { current.launch_host_func(&self.stream, host_done, user) };
        if let Err(error) = launched {
            // SAFETY: the driver did not take `user` (the launch failed): it is still the
            // box leaked above, taken back once here.
            drop(unsafe { Box::<Completion>::from_raw(user.cast()) });
            return Err(error.into());
        }
        Ok(())
    }
}

/// `values` (in SYCL's order, the last dimension the fastest) in CUDA's: x is the last.
fn cuda_order(values: &[u64; 3], dims: u32) -> [u64; 3] {
    let dims = (dims as usize).clamp(1, 3);
    let mut out = [1; 3];
    for (i, slot) in out.iter_mut().enumerate().take(dims) {
        *slot = values[dims - 1 - i];
    }
    out
}

/// Blocks and threads per block (x, y, z) for `range`: the range's last dimension is
/// CUDA's x, as SYCL hands it to an OpenCL kernel as dimension 0. Blocks of the local
/// range, or else of up to `max_threads` threads in x that divide it.
fn launch_shape(range: &NdRange, max_threads: u64) -> Result<([u32; 3], [u32; 3])> {
    let global = cuda_order(&range.global, range.dims);
    let block: [u64; 3] = match range.local {
        Some(local) => cuda_order(&local, range.dims),
        None => {
            let limit = max_threads.clamp(1, 1024).min(global[0]);
            let first = (1..=limit).rev().find(|b| global[0].is_multiple_of(*b)).unwrap_or(1);
            [first, 1, 1]
        }
    };
    let mut grid = [1u32; 3];
    let mut threads = [1u32; 3];
    for d in 0..3 {
        let blocks = global[d] / block[d];
        let limit = if d == 0 { u64::from(u32::MAX >> 1) } else { 65_535 };
        if blocks > limit || block[d] > 1024 {
            return Err(MemoryError::InvalidRange {
                message: format!(
                    "{blocks} blocks of {} threads in CUDA's {} (range dimension {}) are beyond what CUDA launches",
                    block[d],
                    ["x", "y", "z"][d],
                    (range.dims as usize).saturating_sub(1 + d)
                ),
            });
        }
        grid[d] = blocks as u32;
        threads[d] = block[d] as u32;
    }
    Ok((grid, threads))
}

/// The streams this process queued asynchronous work on, synchronised at exit. A process
/// that exits with work in flight otherwise has the driver's own exit handler tear its
/// contexts down under kernels and under the host functions that complete submissions
/// (which run this library's code). The handler here is registered at the first
/// asynchronous submission, after `cuInit` registered the driver's, so `exit` runs it first
/// (handlers run in reverse order of registration): the process waits for that work, then
/// ends with its own status.
mod at_exit {
    use std::sync::{Arc, Mutex};

    use super::super::driver::Stream;
    use super::super::CudaContext;

    /// A stream with the context it is of (dropped in this order: the stream first).
    struct Busy {
        stream: Arc<Stream>,
        context: Arc<CudaContext>,
    }

    struct Book {
        streams: Vec<Busy>,
        prune_at: usize,
        hooked: bool,
    }

    const MIN_PRUNE: usize = 16;

    static BOOK: Mutex<Book> = Mutex::new(Book { streams: Vec::new(), prune_at: MIN_PRUNE, hooked: false });

    /// Notes that `stream` has work queued.
    pub(super) fn note(stream: &Arc<Stream>, context: &Arc<CudaContext>) {
        let orphans = {
            let mut book = crate::sync::lock(&BOOK);
            if !book.hooked {
                // SAFETY: `drain` is an `extern "C" fn()` of this library, which stays loaded
                // for the process (Node never unloads an addon).
                book.hooked = unsafe { libc::atexit(drain) } == 0;
            }
            if book.streams.iter().any(|b| Arc::ptr_eq(&b.stream, stream)) {
                return;
            }
            // A stream only this book holds (its queue and events are gone) gets no more
            // work: it is let go once what it has is done, outside the lock.
            let mut orphans = Vec::new();
            if book.streams.len() >= book.prune_at {
                let (kept, gone): (Vec<Busy>, Vec<Busy>) =
                    std::mem::take(&mut book.streams).into_iter().partition(|b| Arc::strong_count(&b.stream) > 1);
                book.streams = kept;
                book.prune_at = MIN_PRUNE.max(2 * book.streams.len());
                orphans = gone;
            }
            book.streams.push(Busy { stream: Arc::clone(stream), context: Arc::clone(context) });
            orphans
        };
        for busy in orphans {
            synchronize(&busy);
        }
    }

    fn synchronize(busy: &Busy) {
        if let Ok(current) = busy.context.current() {
            // A failure is the submitter's to hear; here the work is only waited for.
            let _ = current.synchronize(&busy.stream);
        }
    }

    /// The exit handler: waits for every noted stream's work, host functions included.
    /// What it holds is left to the process's end (nothing is destroyed during exit).
    extern "C" fn drain() {
        let _ = std::panic::catch_unwind(|| {
            let streams = std::mem::take(&mut crate::sync::lock(&BOOK).streams);
            for busy in &streams {
                synchronize(busy);
            }
            std::mem::forget(streams);
        });
    }
}

impl CudaQueue {
    /// On a profiling queue, an event recorded now, before the work (after its
    /// dependencies), with the anchor and submission time to measure it by.
    fn begin(&self, current: &CurrentContext, submit_at: Instant) -> Result<Option<Timing>> {
        let Some(clock) = &self.kernels.clock else { return Ok(None) };
        let anchor = clock.anchor(current)?;
        let start = current.event_create(true)?;
        current.event_record(&start, &self.stream)?;
        let since = submit_at.checked_duration_since(anchor.taken).unwrap_or_default();
        let submit_ns = anchor.host_ns + u64::try_from(since.as_nanos()).unwrap_or(u64::MAX);
        Ok(Some(Timing { start, anchor, submit_ns }))
    }

    /// The launch's dynamic shared memory: `requested` bytes, checked against what the
    /// device gives one block beside the kernel's static shared memory.
    fn shared_bytes(&self, kernel: &CudaKernel, requested: Option<u64>) -> Result<u32> {
        let Some(nbytes) = requested else { return Ok(0) };
        let device = &self.context.device;
        let optin = device
            .driver
            .device_attribute(device.handle, CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .map_or(DEFAULT_SHARED_LIMIT, |v| u32::try_from(v).unwrap_or(0).max(DEFAULT_SHARED_LIMIT));
        let available = u64::from(optin).saturating_sub(kernel.info.local_mem_size);
        if nbytes > available {
            return Err(MemoryError::KernelArgType {
                kernel: kernel.info.function_name.clone(),
                index: kernel.info.num_args,
                message: format!(
                    "{nbytes} bytes of dynamic shared memory: a block of '{}' has {available} beside the kernel's \
                     own {} bytes",
                    device.info.name, kernel.info.local_mem_size
                ),
            });
        }
        Ok(nbytes as u32)
    }

    /// The event after the work queued since `begin`.
    fn record(&self, current: &CurrentContext, timing: Option<Timing>) -> Result<Arc<dyn Event>> {
        at_exit::note(&self.stream, &self.context);
        let event = current.event_create(timing.is_some())?;
        current.event_record(&event, &self.stream)?;
        Ok(Arc::new(CudaEvent { event, timing, stream: Arc::clone(&self.stream), context: Arc::clone(&self.context) }))
    }

    /// Whether the device takes 64-bit stream memory operations
    /// (`CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS`, 122 in CUDA 12's `cuda.h`).
    fn can_write_64(&self) -> bool {
        const CAN_USE_64_BIT_STREAM_MEM_OPS: std::ffi::c_int = 122;
        let device = &self.context.device;
        self.context.driver.device_attribute_code(device.handle, CAN_USE_64_BIT_STREAM_MEM_OPS).is_ok_and(|v| v != 0)
    }

    fn wait_for(&self, current: &CurrentContext, deps: &[Arc<dyn Event>]) -> Result<()> {
        for dep in events_of::<CudaEvent>(deps, "CUDA")? {
            current.stream_wait_event(&self.stream, &dep.event)?;
        }
        Ok(())
    }
}

impl CudaQueue {
    /// Checks `args` against `kernel` and launches it on the stream after `deps`; gives the
    /// current context and, on a profiling queue, the timing begun before the launch.
    ///
    /// # Safety
    /// As `Submissions::submit`: the memory the pointer arguments address stays allocated
    /// until the launch is waited for.
    unsafe fn launch_kernel(
        &self,
        kernel: &dyn Kernel,
        args: &[LaunchArg],
        range: &NdRange,
        deps: &[Arc<dyn Event>],
    ) -> Result<(CurrentContext, Option<Timing>)> {
        let kernel = kernel_of::<CudaKernel>(kernel, "CUDA")?;
        if !std::ptr::eq(kernel.context.as_ref(), self.context.as_ref()) {
            return Err(MemoryError::KernelQueueMismatch {
                message: format!(
                    "kernel '{}' was loaded in another CUDA context than the queue's",
                    kernel.info.function_name
                ),
            });
        }
        let submit_at = Instant::now();
        // Dynamic shared memory is a trailing `Local` (the model put it last), no parameter.
        let (args, shared_bytes) = match args.split_last() {
            Some((LaunchArg::Local(nbytes), params)) if params.len() == kernel.params.len() => (params, Some(*nbytes)),
            _ => (args, None),
        };
        let shared = self.shared_bytes(kernel, shared_bytes)?;
        // One 8-byte slot per parameter, each holding the argument's bytes.
        let mut slots = vec![0u64; args.len()];
        for (index, arg) in args.iter().enumerate() {
            let ty = kernel.params.get(index).map_or("", String::as_str);
            let wrong = |message: String| MemoryError::KernelArgType {
                kernel: kernel.info.function_name.clone(),
                index: index as u32,
                message,
            };
            let Some(size) = ptx_size(ty) else {
                return Err(wrong(format!("the parameter '{ty}' is of a type this version does not pass")));
            };
            slots[index] =
                match *arg {
                    LaunchArg::Pointer(address) if size == 8 => address,
                    LaunchArg::Pointer(_) => return Err(wrong(format!("a pointer for a parameter of type '{ty}'"))),
                    LaunchArg::Scalar { size: given, bits } if given == size => bits,
                    LaunchArg::Scalar { size: given, .. } => {
                        return Err(wrong(format!("a {given}-byte scalar for a parameter of type '{ty}'")))
                    }
                    LaunchArg::Local(_) => return Err(wrong(
                        "kernelArg.local is a launch's dynamic shared memory on CUDA, not a parameter: give it after \
                         the kernel's parameters"
                            .into(),
                    )),
                };
        }
        let (grid, block) = launch_shape(range, kernel.info.work_group_size)?;
        let mut params: Vec<*mut c_void> = slots.iter_mut().map(|slot| (slot as *mut u64).cast()).collect();
        let current = self.context.current()?;
        if shared > DEFAULT_SHARED_LIMIT {
            current.set_function_attribute(kernel.function, FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)?;
        }
        self.wait_for(&current, deps)?;
        let timing = self.begin(&current, submit_at)?;
        // SAFETY: one pointer per parameter, each to an 8-byte slot holding a value of at
        // most that size (little-endian: its low bytes are the value), read during the
        // call; the memory the pointers address stays allocated until the launch is
        // waited for (this fn's contract, forwarded).
        unsafe { current.launch(kernel.function, grid, block, shared, &self.stream, &mut params) }?;
        Ok((current, timing))
    }
}

impl Submissions for CudaQueue {
    unsafe fn submit(
        &self,
        kernel: &dyn Kernel,
        args: &[LaunchArg],
        range: &NdRange,
        deps: &[Arc<dyn Event>],
    ) -> Result<Arc<dyn Event>> {
        // SAFETY: this fn's contract, forwarded: the memory outlives the recorded event.
        let (current, timing) = unsafe { self.launch_kernel(kernel, args, range, deps) }?;
        self.record(&current, timing)
    }

    unsafe fn submit_and_wait(&self, kernel: &dyn Kernel, args: &[LaunchArg], range: &NdRange) -> Result<()> {
        // A stream runs in order: waiting for all of it waits for the launch, without an
        // event made and recorded for it.
        // SAFETY: this fn's contract, forwarded: the memory outlives the synchronize below.
        let (current, _timing) = unsafe { self.launch_kernel(kernel, args, range, &[]) }?;
        Ok(current.synchronize(&self.stream)?)
    }

    unsafe fn memcpy_async(
        &self,
        dst: Address,
        src: Address,
        nbytes: u64,
        deps: &[Arc<dyn Event>],
    ) -> Result<Arc<dyn Event>> {
        let submit_at = Instant::now();
        let current = self.context.current()?;
        self.wait_for(&current, deps)?;
        let timing = self.begin(&current, submit_at)?;
        if let Some(size) = usize::try_from(nbytes).ok().filter(|&n| n > 0) {
            // SAFETY: this fn's contract, forwarded: both ranges stay valid until the
            // event recorded after the copy completes.
            unsafe { current.memcpy_async(dst, src, size, &self.stream) }?;
        }
        self.record(&current, timing)
    }

    unsafe fn fill_async(
        &self,
        dst: Address,
        pattern: &[u8],
        count: u64,
        deps: &[Arc<dyn Event>],
    ) -> Result<Arc<dyn Event>> {
        let steps = fill_steps(pattern, dst);
        if steps.is_empty() {
            return Err(MemoryError::InvalidRange { message: format!("a fill pattern of {} bytes", pattern.len()) });
        }
        let submit_at = Instant::now();
        let current = self.context.current()?;
        self.wait_for(&current, deps)?;
        let timing = self.begin(&current, submit_at)?;
        if let Some(count) = usize::try_from(count).ok().filter(|&n| n > 0) {
            for step in steps {
                // SAFETY: this fn's contract, forwarded: the `count` copies of `pattern`
                // from `dst` are the range the caller vouches for.
                unsafe { current.memset_step_async(dst, step, count, &self.stream) }?;
            }
        }
        self.record(&current, timing)
    }

    fn barrier(&self, deps: &[Arc<dyn Event>]) -> Result<Arc<dyn Event>> {
        // A stream runs in order: an event recorded now completes after everything before.
        let submit_at = Instant::now();
        let current = self.context.current()?;
        self.wait_for(&current, deps)?;
        let timing = self.begin(&current, submit_at)?;
        self.record(&current, timing)
    }

    unsafe fn write_value(&self, dst: Address, value: &[u8], deps: &[Arc<dyn Event>]) -> Result<Arc<dyn Event>> {
        // A stream runs in order: the write comes after everything queued before it.
        // cuStreamWriteValue writes host memory (cuMemHostAlloc's, mapped) as one store,
        // with no kernel or copy engine behind it; managed memory it does not take, and a
        // 64-bit write needs the device's CAN_USE_64_BIT_STREAM_MEM_OPS. Elsewhere a
        // one-element memset on the stream writes it (a 64-bit value as two words).
        let host = self.context.pointer_kind(dst) == crate::runtime::UsmKind::Host;
        let submit_at = Instant::now();
        let current = self.context.current()?;
        let stream_op = host && current.has_stream_write_value() && (value.len() == 4 || self.can_write_64());
        if !stream_op {
            // SAFETY: this fn's contract, forwarded.
            return unsafe { self.fill_async(dst, value, 1, deps) };
        }
        self.wait_for(&current, deps)?;
        let timing = self.begin(&current, submit_at)?;
        // SAFETY: this fn's contract (the range is writable and stays allocated until the
        // event recorded after it completes); host memory of this context, aligned to the
        // value's size (the model checked), not managed.
        unsafe { current.stream_write_value(&self.stream, dst, value) }?;
        self.record(&current, timing)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ptx_entries_and_their_parameters() {
        let ptx = include_str!("../../../__test__/fixtures/kernels/saxpy.ptx");
        let entries = ptx_entries(ptx);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].name, "saxpy");
        assert_eq!(entries[0].params, vec![".u64", ".u64", ".f32", ".u32"]);
        assert_eq!(entries[1], PtxEntry { name: "empty".into(), params: vec![] });
        let odd =
            ptx_entries(".visible .entry k(.param .u64 .ptr .global .align 4 k_p0, .param .align 8 .b8 k_p1[16])");
        assert_eq!(odd[0].params[0], ".u64");
        assert!(ptx_size(&odd[0].params[1]).is_none());
        assert!(ptx_entries("// .entry commented(.param .u32 a)\n").is_empty());
    }

    #[test]
    fn plain_names_find_mangled_cpp_kernels() {
        let names: Vec<String> =
            ["saxpy", "_Z6scaledPfS_f", "_Z4pickIfEvPT_", "_Z4pickIiEvPT_", "_Z55long"].map(String::from).into();
        assert_eq!(entry_named(&names, "saxpy"), Some("saxpy"));
        assert_eq!(entry_named(&names, "scaled"), Some("_Z6scaledPfS_f"));
        assert_eq!(entry_named(&names, "_Z6scaledPfS_f"), Some("_Z6scaledPfS_f"));
        assert_eq!(entry_named(&names, "pick"), None, "two instantiations: ambiguous");
        assert_eq!(entry_named(&names, "scale"), None);
        assert_eq!(entry_named(&names, "5long"), None);
        assert_eq!(entry_named(&names, ""), None);
    }

    #[test]
    fn launch_shapes() {
        let r = NdRange { dims: 1, global: [1000, 1, 1], local: None };
        let (grid, block) = launch_shape(&r, 1024).unwrap();
        assert_eq!(u64::from(grid[0]) * u64::from(block[0]), 1000);
        assert!(block[0] <= 1024);
        // SYCL's order: [rows, columns], columns the fastest, CUDA's x.
        let r = NdRange { dims: 2, global: [64, 256, 1], local: Some([4, 32, 1]) };
        assert_eq!(launch_shape(&r, 1024).unwrap(), ([8, 16, 1], [32, 4, 1]));
        let r = NdRange { dims: 3, global: [2, 3, 8], local: None };
        assert_eq!(launch_shape(&r, 1024).unwrap(), ([1, 3, 2], [8, 1, 1]));
        let r = NdRange { dims: 2, global: [1 << 20, 1, 1], local: Some([1, 1, 1]) };
        assert!(launch_shape(&r, 1024).is_err(), "2^20 blocks in y");
        let r = NdRange { dims: 2, global: [1, 1 << 20, 1], local: Some([1, 1, 1]) };
        assert!(launch_shape(&r, 1024).is_ok(), "2^20 blocks in x");
    }
}
