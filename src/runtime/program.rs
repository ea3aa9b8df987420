//! Programs, kernels and submissions: optional capabilities of a `Context`
//! (`Context::programs`, building code for one of its devices) and of a `Queue`
//! (`Queue::submissions`, running kernels and the queue's own asynchronous operations,
//! each giving an [`Event`]). SYCL builds OpenCL C and SPIR-V through its OpenCL backend;
//! CUDA loads PTX and compiles CUDA C with NVRTC. A provider that cannot returns `None`.
//!
//! Submissions are asynchronous: the memory their arguments address must stay alive until
//! the event completes, which is why every submitting call is an `unsafe fn` whose caller
//! (the model, `memory::program`) holds the memory until then.

use std::any::Any;
use std::sync::Arc;

use crate::error::{MemoryError, Result};
use crate::runtime::{Address, Device};

/// What a program is built from.
#[derive(Debug, Clone, Copy)]
pub enum ProgramSource<'a> {
    /// OpenCL C source text.
    OpenClC(&'a str),
    /// A SPIR-V module.
    SpirV(&'a [u8]),
    /// PTX text (CUDA).
    #[allow(dead_code, reason = "read by a provider that loads PTX")]
    Ptx(&'a str),
    /// CUDA C++ source, compiled with NVRTC.
    #[allow(dead_code, reason = "read by a provider that compiles CUDA C")]
    CudaC(&'a str),
    /// SYCL C++ source with free-function kernels (the kernel_compiler extension): the
    /// text, virtual include files (name, content), name expressions to register, and
    /// compiler arguments (one each: a build's `options` text is not used).
    Sycl { text: &'a str, headers: &'a [(String, String)], registered: &'a [String], flags: &'a [String] },
}

/// A language programs are built from, as dpctl's `SyclDevice.can_compile` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceLanguage {
    OpenClC,
    SpirV,
    Sycl,
    Ptx,
    CudaC,
}

impl SourceLanguage {
    /// Every name taken, with its language: dpctl's (and its short forms), then CUDA's.
    pub const NAMES: [(&'static str, SourceLanguage); 7] = [
        ("opencl", SourceLanguage::OpenClC),
        ("ocl", SourceLanguage::OpenClC),
        ("spirv", SourceLanguage::SpirV),
        ("spv", SourceLanguage::SpirV),
        ("sycl", SourceLanguage::Sycl),
        ("ptx", SourceLanguage::Ptx),
        ("cuda", SourceLanguage::CudaC),
    ];

    /// The language `name` names (case as dpctl: exact), or `ERR_INVALID_ARG_VALUE`.
    pub fn parse(name: &str) -> Result<SourceLanguage, crate::error::MemoryError> {
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|(_, language)| *language).ok_or_else(|| {
            crate::error::MemoryError::UnknownSourceLanguage {
                language: name.to_string(),
                known: Self::NAMES.iter().map(|(n, _)| format!("'{n}'")).collect::<Vec<_>>().join(", "),
            }
        })
    }
}

impl ProgramSource<'_> {
    /// How messages name the format.
    pub fn format_name(&self) -> &'static str {
        match self {
            ProgramSource::OpenClC(_) => "OpenCL C",
            ProgramSource::SpirV(_) => "SPIR-V",
            ProgramSource::Ptx(_) => "PTX",
            ProgramSource::CudaC(_) => "CUDA C",
            ProgramSource::Sycl { .. } => "SYCL",
        }
    }
}

/// What a failed build says: the compiler's log, and a one-line summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildFailure {
    pub summary: String,
    pub log: String,
}

/// A build's outcome: the program with its log, or the failure with its log. Any other
/// failure (no runtime library, a broken device) is the outer `Result`'s error.
pub type Built = std::result::Result<(Arc<dyn Program>, String), BuildFailure>;

/// The capability to build programs for a context's devices.
pub trait ProgramBuilder: Send + Sync {
    /// Builds `source` for `device` (a device of the context) with compiler `options`.
    fn build(&self, device: &Arc<dyn Device>, source: ProgramSource<'_>, options: &str) -> Result<Built>;
}

/// A built program.
pub trait Program: Send + Sync + Any {
    /// The names of its kernels, as the runtime lists them (where it can).
    fn kernel_names(&self) -> Vec<String>;
    /// The kernel `name`; `Ok(None)` when the program has none of that name.
    fn kernel(&self, name: &str) -> Result<Option<Arc<dyn Kernel>>>;
}

/// What an argument of a kernel is, where the runtime or the program says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// Nothing is known about it.
    Unknown,
    /// A pointer to global (or constant) memory.
    Global,
    /// A pointer to work-group local memory.
    Local,
    /// Passed by value.
    Value,
}

/// One argument as the kernel declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgInfo {
    pub kind: ArgKind,
    /// Its type as the source wrote it (`float*`, `int`, `u64`), or empty when unknown.
    pub type_name: String,
}

/// What the runtime reports of a kernel on its device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    pub function_name: String,
    pub num_args: u32,
    /// One entry per argument (`num_args` of them).
    pub args: Vec<ArgInfo>,
    /// The largest work-group the kernel can run with.
    pub work_group_size: u64,
    pub preferred_work_group_size_multiple: u64,
    /// Bytes of private memory per work item.
    pub private_mem_size: u64,
    /// Bytes of local (shared) memory the kernel itself uses.
    pub local_mem_size: u64,
    /// The work-group size the kernel was compiled for (`reqd_work_group_size`), or zeros.
    pub compile_work_group_size: [u64; 3],
    /// Whether work-group local memory is one more argument after the parameters rather
    /// than a parameter: CUDA's dynamic shared memory (`extern __shared__`), a size the
    /// launch takes, not the kernel.
    pub trailing_local: bool,
}

/// A kernel of a program.
pub trait Kernel: Send + Sync + Any {
    fn info(&self) -> &KernelInfo;
}

/// `kernel` as the kernel type `K` of the provider `runtime` names, or
/// `ERR_KERNEL_QUEUE_MISMATCH` for a kernel another runtime built.
pub fn kernel_of<'a, K: Kernel>(kernel: &'a dyn Kernel, runtime: &str) -> Result<&'a K> {
    let any: &dyn Any = kernel;
    any.downcast_ref::<K>().ok_or_else(|| MemoryError::KernelQueueMismatch {
        message: format!("the kernel was built by another runtime than the queue's ({runtime})"),
    })
}

/// Each of `deps` as the event type `E` of the provider `runtime` names, or
/// `ERR_KERNEL_QUEUE_MISMATCH` for an event of another runtime.
pub fn events_of<'a, E: Event>(deps: &'a [Arc<dyn Event>], runtime: &str) -> Result<Vec<&'a E>> {
    deps.iter()
        .map(|dep| {
            let any: &dyn Any = dep.as_ref();
            any.downcast_ref::<E>().ok_or_else(|| MemoryError::KernelQueueMismatch {
                message: format!("a dependency is an event of another runtime than the queue's ({runtime})"),
            })
        })
        .collect()
}

/// One argument of a submission, as the runtime takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchArg {
    /// A device address.
    Pointer(Address),
    /// `size` (1, 2, 4 or 8) bytes: the low bytes of `bits`.
    Scalar { size: u32, bits: u64 },
    /// Bytes of work-group local memory (as the last argument where the kernel's
    /// `trailing_local` says so).
    Local(u64),
}

/// The work items of a submission: `dims` (1..=3) entries of `global`, in work-groups of
/// `local` where given (it divides `global`). In SYCL's order, as dpctl's `submit` takes
/// ranges: entry 0 is the slowest dimension and entry `dims - 1` the fastest, which an
/// OpenCL kernel sees as its dimension 0 (`get_global_id(0)`) and CUDA as x.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdRange {
    pub dims: u32,
    pub global: [u64; 3],
    pub local: Option<[u64; 3]>,
}

/// Where an event's work is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventStatus {
    Submitted,
    Running,
    Complete,
}

impl EventStatus {
    /// dpctl's names of `event_status_type`.
    pub fn name(self) -> &'static str {
        match self {
            EventStatus::Submitted => "submitted",
            EventStatus::Running => "running",
            EventStatus::Complete => "complete",
        }
    }
}

/// Nanosecond timestamps of a completed submission of a profiling queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    pub submit: u64,
    pub start: u64,
    pub end: u64,
}

/// What an event calls when its work is done: `Ok` when it completed, else why not. It
/// runs on a thread of the runtime's and must not call the runtime back.
pub type Completion = Box<dyn FnOnce(Result<()>) + Send>;

/// A submission's event.
pub trait Event: Send + Sync + Any {
    /// Waits for the work; its failure (or an asynchronous error of the queue) is the error.
    fn wait(&self) -> Result<()>;
    fn status(&self) -> Result<EventStatus>;
    /// The timestamps, on a profiling queue once complete.
    fn profile(&self) -> Result<Profile>;
    /// Calls `done` once when the work completes or fails (see [`Completion`]), at once
    /// when it has already.
    fn on_complete(&self, done: Completion) -> Result<()>;
}

/// The native objects under a queue, for other addons (`include/dpctl_memory.h`): addresses
/// of the runtime's own objects, valid while the queue lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeQueue {
    /// `sycl::queue *`, `sycl::context *`, `sycl::device *` of the loaded SYCL runtime.
    Sycl { queue: usize, context: usize, device: usize },
    /// `CUcontext`, `CUstream` and the device ordinal.
    Cuda { context: usize, stream: usize, ordinal: i32 },
}

/// Properties a queue was made with (dpctl's `property=` of `SyclQueue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueProperties {
    pub in_order: bool,
    pub enable_profiling: bool,
}

/// The capability to run kernels and asynchronous operations on a queue.
pub trait Submissions: Send + Sync {
    /// Runs `kernel` (of a program of this queue's context and device) over `range` with
    /// `args`, after `deps` (events of this provider).
    ///
    /// # Safety
    /// Every `LaunchArg::Pointer` addresses memory of the queue's context that stays
    /// allocated until the returned event completes, and the kernel stays within it.
    unsafe fn submit(
        &self,
        kernel: &dyn Kernel,
        args: &[LaunchArg],
        range: &NdRange,
        deps: &[Arc<dyn Event>],
    ) -> Result<Arc<dyn Event>>;
    /// Runs `kernel` as `submit` does, after nothing, and waits for it; no event is kept.
    /// A provider can take a cheaper way than an event (a queue of its own for waits, a
    /// stream synchronize); the default submits and waits on the event.
    ///
    /// # Safety
    /// Every `LaunchArg::Pointer` addresses memory of the queue's context that stays
    /// allocated until this returns, and the kernel stays within it.
    unsafe fn submit_and_wait(&self, kernel: &dyn Kernel, args: &[LaunchArg], range: &NdRange) -> Result<()> {
        // SAFETY: this fn's contract, forwarded: the memory outlives the wait below.
        unsafe { self.submit(kernel, args, range, &[]) }?.wait()
    }
    /// Copies `nbytes` from `src` to `dst` after `deps`.
    ///
    /// # Safety
    /// Both ranges are memory the queue can reach, valid until the event completes.
    unsafe fn memcpy_async(
        &self,
        dst: Address,
        src: Address,
        nbytes: u64,
        deps: &[Arc<dyn Event>],
    ) -> Result<Arc<dyn Event>>;
    /// Fills `count` elements of `pattern` (1, 2, 4, 8 or 16 bytes) at `dst` after `deps`.
    ///
    /// # Safety
    /// `dst..dst + count * pattern.len()` is writable memory the queue can reach, valid
    /// until the event completes.
    unsafe fn fill_async(
        &self,
        dst: Address,
        pattern: &[u8],
        count: u64,
        deps: &[Arc<dyn Event>],
    ) -> Result<Arc<dyn Event>>;
    /// A barrier after `deps` (after everything submitted so far when empty).
    fn barrier(&self, deps: &[Arc<dyn Event>]) -> Result<Arc<dyn Event>>;
    /// Writes `value` (4 or 8 bytes, little-endian) at `dst` once everything submitted to
    /// this queue before it, and `deps`, are done: progress another thread can watch in
    /// host memory. The default is a one-element fill after a barrier (everything so far)
    /// and `deps`; a provider overrides it with a cheaper way where it has one (an
    /// in-order queue needs no barrier; CUDA writes values on the stream).
    ///
    /// # Safety
    /// `dst..dst + value.len()` is writable memory the queue can reach, valid until the
    /// event completes.
    unsafe fn write_value(&self, dst: Address, value: &[u8], deps: &[Arc<dyn Event>]) -> Result<Arc<dyn Event>> {
        let mut after = deps.to_vec();
        after.push(self.barrier(&[])?);
        // SAFETY: this fn's contract, forwarded.
        unsafe { self.fill_async(dst, value, 1, &after) }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn source_languages_are_dpctl_s_names_and_cuda_s_and_nothing_else() {
        assert_eq!(SourceLanguage::parse("ocl").ok(), Some(SourceLanguage::OpenClC));
        assert_eq!(SourceLanguage::parse("spv").ok(), Some(SourceLanguage::SpirV));
        assert_eq!(SourceLanguage::parse("sycl").ok(), Some(SourceLanguage::Sycl));
        assert_eq!(SourceLanguage::parse("cuda").ok(), Some(SourceLanguage::CudaC));
        for bad in ["OpenCL", "", "sycl ", "c++"] {
            let error = SourceLanguage::parse(bad).unwrap_err();
            assert_eq!(error.code(), "ERR_INVALID_ARG_VALUE");
            assert!(error.to_string().contains("'opencl', 'ocl', 'spirv', 'spv', 'sycl', 'ptx', 'cuda'"));
        }
    }
}
