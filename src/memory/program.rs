//! Kernels on the memory: building programs, checking a submission against the kernel,
//! and holding every operand until the runtime says the work finished.
//!
//! A [`Submission`] owns the memory objects (and so the allocations) its arguments
//! address. `wait` drops them after the event completes; `when_done` hands them to the
//! completion thread, which drops them once the runtime's completion callback fired (the
//! callback itself runs on a runtime thread that must not call the runtime back, and a
//! release can: a pool trim, `sycl::free`). So `free()` of memory a pending kernel uses
//! only lets go of the object's own reference: the allocation goes after the kernel.
//!
//! What is still in flight when its owner goes: a JS environment's asynchronous
//! submissions are kept in its [`Pending`] until they finished, and the environment's
//! teardown (a worker that ends or is terminated) waits for them (`Pending::wait_all`), so
//! no work of a gone environment runs on. At process exit each provider waits for the work
//! of the whole process itself (the SYCL shim's and the CUDA provider's exit handlers).

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use crate::error::{MemoryError, Result};
use crate::memory::usm::UsmMemory;
use crate::runtime::program::{
    ArgKind, BuildFailure, Built, Event, EventStatus, Kernel, KernelInfo, LaunchArg, NdRange, Program, ProgramSource,
    QueueProperties,
};
use crate::runtime::{Queue, UsmKind};

/// The type of a scalar argument, as `kernelArg.<name>(value)` writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarType {
    Int8,
    Uint8,
    Int16,
    Uint16,
    Int32,
    Uint32,
    Int64,
    Uint64,
    Float32,
    Float64,
    /// IEEE half (OpenCL C `half`, which needs the device's `cl_khr_fp16`).
    Float16,
}

impl ScalarType {
    /// Every type, in the order of their codes (the JS layer sends the index).
    pub const ALL: [ScalarType; 11] = [
        ScalarType::Int8,
        ScalarType::Uint8,
        ScalarType::Int16,
        ScalarType::Uint16,
        ScalarType::Int32,
        ScalarType::Uint32,
        ScalarType::Int64,
        ScalarType::Uint64,
        ScalarType::Float32,
        ScalarType::Float64,
        ScalarType::Float16,
    ];

    /// The JS name (`kernelArg.int32`).
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Int8 => "int8",
            ScalarType::Uint8 => "uint8",
            ScalarType::Int16 => "int16",
            ScalarType::Uint16 => "uint16",
            ScalarType::Int32 => "int32",
            ScalarType::Uint32 => "uint32",
            ScalarType::Int64 => "int64",
            ScalarType::Uint64 => "uint64",
            ScalarType::Float32 => "float32",
            ScalarType::Float64 => "float64",
            ScalarType::Float16 => "float16",
        }
    }

    /// Bytes of the value.
    pub fn size(self) -> u32 {
        match self {
            ScalarType::Int8 | ScalarType::Uint8 => 1,
            ScalarType::Int16 | ScalarType::Uint16 | ScalarType::Float16 => 2,
            ScalarType::Int32 | ScalarType::Uint32 | ScalarType::Float32 => 4,
            ScalarType::Int64 | ScalarType::Uint64 | ScalarType::Float64 => 8,
        }
    }

    /// Whether it is an integer type.
    pub fn is_integer(self) -> bool {
        !matches!(self, ScalarType::Float16 | ScalarType::Float32 | ScalarType::Float64)
    }

    /// The type a parameter's declared type (OpenCL C, or a PTX parameter type) stands
    /// for; `None` for one this table does not know (a vector, a struct): then only the
    /// kind is checked.
    pub fn of_declared(type_name: &str) -> Option<ScalarType> {
        let name = type_name.trim().trim_start_matches("const ").trim();
        Some(match name {
            "char" | "signed char" | "int8_t" | ".s8" => ScalarType::Int8,
            "uchar" | "unsigned char" | "uint8_t" | ".u8" | ".b8" => ScalarType::Uint8,
            "short" | "int16_t" | ".s16" => ScalarType::Int16,
            "ushort" | "unsigned short" | "uint16_t" | ".u16" | ".b16" => ScalarType::Uint16,
            "int" | "int32_t" | ".s32" => ScalarType::Int32,
            "uint" | "unsigned int" | "uint32_t" | ".u32" | ".b32" => ScalarType::Uint32,
            "long" | "int64_t" | "ptrdiff_t" | "intptr_t" | ".s64" => ScalarType::Int64,
            "ulong" | "unsigned long" | "uint64_t" | "size_t" | "uintptr_t" | ".u64" | ".b64" => ScalarType::Uint64,
            "float" | ".f32" => ScalarType::Float32,
            "double" | ".f64" => ScalarType::Float64,
            "half" | ".f16" => ScalarType::Float16,
            _ => return None,
        })
    }
}

/// Whether a parameter declared `type_name` (read as `declared`) takes a `given` scalar.
/// A C type says its signedness; a PTX one does not (`nvcc` and NVRTC declare an `int`
/// parameter `.u32`): there `.uN` and `.sN` take an integer of N bits either way, and `.bN`
/// any scalar of N bits.
fn accepts(type_name: &str, declared: ScalarType, given: ScalarType) -> bool {
    let ptx = type_name.trim();
    if ptx.starts_with(".b") {
        given.size() == declared.size()
    } else if ptx.starts_with(".u") || ptx.starts_with(".s") {
        given.size() == declared.size() && given.is_integer()
    } else {
        declared == given
    }
}

/// One argument of a submission, as the caller gave it.
#[derive(Clone)]
pub enum KernelArgument {
    /// A memory object: the kernel gets its address; the submission holds it.
    Memory(UsmMemory),
    /// A typed scalar: its bits (the low `ty.size()` bytes).
    Scalar { ty: ScalarType, bits: u64 },
    /// Bytes of work-group local memory.
    Local(u64),
}

impl KernelArgument {
    fn describe(&self) -> String {
        match self {
            KernelArgument::Memory(memory) => memory.describe(),
            KernelArgument::Scalar { ty, .. } => format!("a scalar of type {}", ty.name()),
            KernelArgument::Local(n) => format!("{n} bytes of local memory"),
        }
    }
}

/// The kind codes of a submission's argument spec (`lib/program.js` writes them): 0 is an
/// unfilled slot, never an argument, so that zeros never read as memory handle 0.
const SPEC_SCALAR: f64 = 1.0;
const SPEC_LOCAL: f64 = 2.0;
const SPEC_MEMORY: f64 = 3.0;

/// The arguments a submission's `spec` (three numbers per argument: kind, value, scalar
/// type) and `bits` (two words per argument: a scalar's bits, low first) describe, memory
/// handles resolved by `memory`. Anything but a filled, well-formed slot is refused:
/// an unfilled one, an unknown kind or type, a local size that is no positive safe integer.
pub fn decode_arguments(
    kernel: &str,
    spec: &[f64],
    bits: &[u32],
    mut memory: impl FnMut(f64) -> Result<UsmMemory>,
) -> Result<Vec<KernelArgument>> {
    let count = spec.len() / 3;
    let wrong = |index: usize, message: &str| MemoryError::KernelArgType {
        kernel: kernel.to_string(),
        index: u32::try_from(index).unwrap_or(u32::MAX),
        message: message.to_string(),
    };
    if !spec.len().is_multiple_of(3) || bits.len() != 2 * count {
        return Err(wrong(count, "the argument list was not encoded whole"));
    }
    let mut out = Vec::with_capacity(count);
    for (index, slot) in spec.chunks_exact(3).enumerate() {
        let (kind, value, scalar) = (slot[0], slot[1], slot[2]);
        let arg = if kind == SPEC_MEMORY {
            KernelArgument::Memory(memory(value)?)
        } else if kind == SPEC_SCALAR {
            let ty = match crate::memory::interface::js_integer(scalar) {
                crate::memory::interface::JsInteger::Safe(n) => {
                    usize::try_from(n).ok().and_then(|n| ScalarType::ALL.get(n))
                }
                _ => None,
            };
            let ty = *ty.ok_or_else(|| wrong(index, "a scalar of no known type"))?;
            let word = |i: usize| u64::from(bits.get(i).copied().unwrap_or(0));
            KernelArgument::Scalar { ty, bits: word(2 * index) | (word(2 * index + 1) << 32) }
        } else if kind == SPEC_LOCAL {
            match crate::memory::interface::js_integer(value) {
                crate::memory::interface::JsInteger::Safe(n) if n > 0 => KernelArgument::Local(n.unsigned_abs()),
                _ => return Err(wrong(index, "local memory of a size that is no positive safe integer")),
            }
        } else {
            return Err(wrong(index, "no argument was encoded in this place (the list changed while it was read)"));
        };
        out.push(arg);
    }
    Ok(out)
}

/// Refuses local memory beyond the device's: the sum of the `Local` arguments (at their
/// indices in `args`) and the kernel's own must fit where the device says how much it has.
fn check_local_memory(queue: &Arc<dyn Queue>, info: &KernelInfo, args: &[KernelArgument]) -> Result<()> {
    let device = queue.device().info().local_mem_size;
    if device == 0 {
        return Ok(());
    }
    let available = device.saturating_sub(info.local_mem_size);
    let mut requested: u64 = 0;
    for (index, arg) in args.iter().enumerate() {
        if let KernelArgument::Local(nbytes) = arg {
            requested = requested.saturating_add(*nbytes);
            if requested > available {
                return Err(MemoryError::LocalMemoryTooLarge {
                    kernel: info.function_name.clone(),
                    index: u32::try_from(index).unwrap_or(u32::MAX),
                    requested,
                    available,
                });
            }
        }
    }
    Ok(())
}

/// Builds `source` for the queue's device in its context: `Ok(Err(failure))` carries the
/// compiler's log.
pub fn build(queue: &Arc<dyn Queue>, source: ProgramSource<'_>, options: &str) -> Result<Built> {
    let context = queue.context();
    let device = queue.device();
    let Some(builder) = context.programs() else {
        return Err(MemoryError::ProgramsUnsupported {
            message: format!("the runtime of '{}' cannot build programs", device.info().name),
        });
    };
    if let Some(failure) = malformed(&source) {
        return Ok(Err(failure));
    }
    builder.build(&device, source, options)
}

/// What no compiler should be handed: an OpenCL C or SYCL source with a NUL (the runtime reads the
/// text only up to it, and would drop what follows without a word), and a SPIR-V module
/// whose instructions do not tile its words (the OpenCL CPU device's reader loops forever
/// on an instruction of word count 0). A build failure, as the compiler's own would be.
fn malformed(source: &ProgramSource<'_>) -> Option<BuildFailure> {
    let failure = |summary: String| Some(BuildFailure { log: summary.clone(), summary });
    match source {
        ProgramSource::OpenClC(text) | ProgramSource::Sycl { text, .. } => text
            .find('\0')
            .and_then(|at| failure(format!("the {} source has a NUL character at offset {at}", source.format_name()))),
        ProgramSource::SpirV(bytes) => spirv_problem(bytes).and_then(failure),
        _ => None,
    }
}

/// Why `bytes` is not a well-formed SPIR-V module's word stream, if it is not: a whole
/// number of 32-bit words, the 5-word header with the magic number (either byte order),
/// then instructions whose word counts (the high half of each first word) are at least 1
/// and end within the module.
fn spirv_problem(bytes: &[u8]) -> Option<String> {
    const MAGIC: u32 = 0x0723_0203;
    const HEADER_WORDS: usize = 5;
    if !bytes.len().is_multiple_of(4) || bytes.len() < 4 * HEADER_WORDS {
        return Some(format!(
            "a SPIR-V module is a whole number of 32-bit words, at least 5; this is {} bytes",
            bytes.len()
        ));
    }
    let little = |i: usize| u32::from_le_bytes([bytes[4 * i], bytes[4 * i + 1], bytes[4 * i + 2], bytes[4 * i + 3]]);
    let swapped = match little(0) {
        MAGIC => false,
        magic if magic.swap_bytes() == MAGIC => true,
        magic => {
            return Some(format!(
                "not a SPIR-V module: its first word is {magic:#010x}, not the magic number {MAGIC:#010x}"
            ))
        }
    };
    let word = |i: usize| if swapped { little(i).swap_bytes() } else { little(i) };
    let words = bytes.len() / 4;
    let mut at = HEADER_WORDS;
    while at < words {
        let count = (word(at) >> 16) as usize;
        if count == 0 || at + count > words {
            return Some(format!(
                "the SPIR-V instruction at word {at} has a word count of {count}, which {} the module's {words} words",
                if count == 0 { "cannot end in" } else { "runs past" }
            ));
        }
        at += count;
    }
    None
}

/// The kernel `name` of `program`, or `ERR_KERNEL_NOT_FOUND` naming what it has.
pub fn kernel(program: &dyn Program, name: &str) -> Result<Arc<dyn Kernel>> {
    program.kernel(name)?.ok_or_else(|| {
        let names = program.kernel_names();
        MemoryError::KernelNotFound {
            name: name.to_string(),
            available: if names.is_empty() { "none".into() } else { names.join(", ") },
        }
    })
}

/// Checks `global` and `local` (entries of 1..=3 dimensions) against each other and the
/// kernel's largest work-group.
pub fn nd_range(info: Option<&KernelInfo>, global: &[u64], local: Option<&[u64]>) -> Result<NdRange> {
    let bad = |message: String| Err(MemoryError::InvalidRange { message });
    if global.is_empty() || global.len() > 3 {
        return bad(format!("a global range has 1, 2 or 3 dimensions, not {}", global.len()));
    }
    if let Some(zero) = global.iter().position(|&n| n == 0) {
        return bad(format!("the global range [{}] is empty in dimension {zero}", join(global)));
    }
    // The runtimes count work items in 64 bits: a count that wraps reaches them as a small
    // one, or as 0, which the OpenCL CPU device divides by.
    if global.iter().try_fold(1u64, |acc, &n| acc.checked_mul(n)).is_none() {
        return bad(format!("the global range [{}] has 2^64 work items or more", join(global)));
    }
    let mut range = NdRange { dims: global.len() as u32, global: [1; 3], local: None };
    range.global[..global.len()].copy_from_slice(global);
    if let Some(local) = local {
        if local.len() != global.len() {
            return bad(format!(
                "the local range [{}] has {} dimensions, the global range [{}] has {}",
                join(local),
                local.len(),
                join(global),
                global.len()
            ));
        }
        if local.contains(&0) {
            return bad(format!("the local range [{}] is empty in a dimension", join(local)));
        }
        if let Some(d) = (0..global.len()).find(|&d| !global[d].is_multiple_of(local[d])) {
            return bad(format!(
                "the local range [{}] does not divide the global range [{}] (dimension {d})",
                join(local),
                join(global)
            ));
        }
        let items = local.iter().try_fold(1u64, |acc, &n| acc.checked_mul(n)).unwrap_or(u64::MAX);
        if let Some(info) = info.filter(|info| info.work_group_size > 0 && items > info.work_group_size) {
            return bad(format!(
                "a work-group of {items} work items ([{}]) is more than kernel '{}' can run with ({})",
                join(local),
                info.function_name,
                info.work_group_size
            ));
        }
        let mut l = [1; 3];
        l[..local.len()].copy_from_slice(local);
        range.local = Some(l);
    }
    Ok(range)
}

fn join(values: &[u64]) -> String {
    values.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
}

/// The runtime's arguments for `args`, checked against what the kernel declares; the
/// memory the submission must hold.
fn launch_args(queue: &Arc<dyn Queue>, info: &KernelInfo, args: &[KernelArgument]) -> Result<Vec<LaunchArg>> {
    check_local_memory(queue, info, args)?;
    // Where local memory is no parameter (CUDA's dynamic shared memory), one
    // `kernelArg.local` may follow the parameters.
    let (args, trailing) = match args.split_last() {
        Some((KernelArgument::Local(nbytes), params))
            if info.trailing_local && params.len() == info.num_args as usize =>
        {
            (params, Some(*nbytes))
        }
        _ => (args, None),
    };
    if args.len() != info.num_args as usize {
        return Err(MemoryError::KernelArgCount {
            kernel: info.function_name.clone(),
            expected: info.num_args,
            given: args.len() as u64,
        });
    }
    let context = queue.context();
    let mut out = Vec::with_capacity(args.len() + 1);
    for (index, arg) in args.iter().enumerate() {
        let declared = info.args.get(index);
        let kind = declared.map_or(ArgKind::Unknown, |a| a.kind);
        let type_name = declared.map_or("", |a| a.type_name.as_str());
        let wrong = |message: String| MemoryError::KernelArgType {
            kernel: info.function_name.clone(),
            index: index as u32,
            message,
        };
        let expects = |what: &str| {
            wrong(format!(
                "the kernel declares {}{}, and was given {}",
                what,
                if type_name.is_empty() { String::new() } else { format!(" ('{type_name}')") },
                arg.describe()
            ))
        };
        match arg {
            KernelArgument::Memory(memory) => {
                if matches!(kind, ArgKind::Local) {
                    return Err(expects("local memory (pass kernelArg.local(nbytes))"));
                }
                if matches!(kind, ArgKind::Value) {
                    return Err(expects("a value"));
                }
                if memory.read_only() {
                    return Err(wrong(format!(
                        "{} comes from a read-only interface, and a kernel may write through any pointer",
                        memory.describe()
                    )));
                }
                let reachable = context.pointer_kind(memory.address()) != UsmKind::Unknown
                    || memory.queue().context().same_context(context.as_ref());
                if !reachable {
                    return Err(MemoryError::KernelQueueMismatch {
                        message: format!(
                            "argument {index} of kernel '{}': {} is not memory of the queue's context",
                            info.function_name,
                            memory.describe()
                        ),
                    });
                }
                out.push(LaunchArg::Pointer(memory.address()));
            }
            KernelArgument::Scalar { ty, bits } => {
                if matches!(kind, ArgKind::Global) {
                    return Err(expects("a pointer to global memory (pass a memory object)"));
                }
                if matches!(kind, ArgKind::Local) {
                    return Err(expects("local memory (pass kernelArg.local(nbytes))"));
                }
                if let Some(declared) = ScalarType::of_declared(type_name) {
                    if !accepts(type_name, declared, *ty) {
                        return Err(wrong(format!(
                            "the kernel declares '{type_name}' (kernelArg.{}), and was given a scalar of type {}",
                            declared.name(),
                            ty.name()
                        )));
                    }
                }
                if *ty == ScalarType::Float16 && !queue.device().info().aspects.iter().any(|a| a == "fp16") {
                    return Err(wrong(format!(
                        "a float16 scalar needs a device with half precision (OpenCL's cl_khr_fp16, aspect \
                         'fp16'), which '{}' lacks",
                        queue.device().info().name
                    )));
                }
                out.push(LaunchArg::Scalar { size: ty.size(), bits: *bits });
            }
            KernelArgument::Local(nbytes) => {
                if !matches!(kind, ArgKind::Local | ArgKind::Unknown) {
                    return Err(expects(if kind == ArgKind::Global {
                        "a pointer to global memory"
                    } else {
                        "a value"
                    }));
                }
                if *nbytes == 0 {
                    return Err(wrong("local memory of 0 bytes".into()));
                }
                if info.trailing_local {
                    return Err(wrong(
                        "kernelArg.local is this runtime's dynamic shared memory (extern __shared__), not a \
                         parameter: give it after the kernel's parameters"
                            .into(),
                    ));
                }
                out.push(LaunchArg::Local(*nbytes));
            }
        }
    }
    if let Some(nbytes) = trailing {
        if nbytes == 0 {
            return Err(MemoryError::KernelArgType {
                kernel: info.function_name.clone(),
                index: info.num_args,
                message: "local memory of 0 bytes".into(),
            });
        }
        out.push(LaunchArg::Local(nbytes));
    }
    Ok(out)
}

/// The memory a submission holds until its work is done.
pub struct Operands {
    _held: Vec<UsmMemory>,
}

/// Work on a queue with its event and the memory it holds.
pub struct Submission {
    event: Arc<dyn Event>,
    operands: Operands,
}

fn submissions(queue: &Arc<dyn Queue>) -> Result<&dyn crate::runtime::program::Submissions> {
    queue.submissions().ok_or_else(|| MemoryError::ProgramsUnsupported {
        message: format!("the runtime of '{}' cannot run submissions with events", queue.device().info().name),
    })
}

/// Submits `kernel` on `queue` after `deps`, holding the memory of `args`.
pub fn submit(
    queue: &Arc<dyn Queue>,
    kernel: &Arc<dyn Kernel>,
    args: &[KernelArgument],
    range: &NdRange,
    deps: &[Arc<dyn Event>],
) -> Result<Submission> {
    let launch = launch_args(queue, kernel.info(), args)?;
    let runner = submissions(queue)?;
    let operands = Operands {
        _held: args
            .iter()
            .filter_map(|a| match a {
                KernelArgument::Memory(m) => Some(m.clone()),
                _ => None,
            })
            .collect(),
    };
    // SAFETY: every pointer argument is the address of a memory object checked to be of
    // the queue's context above, held by the returned Submission until the event
    // completes (`wait`, `when_done`), so its allocation stays alive meanwhile.
    let event = unsafe { runner.submit(kernel.as_ref(), &launch, range, deps) }?;
    Ok(Submission { event, operands })
}

/// Whether the event of a finished synchronous operation on `queue` is kept: only a
/// profiling queue's has more to say (its times) than that the work is done. Letting go of
/// the others at once keeps a loop of sync operations from piling up runtime events.
fn keeps_sync_events(queue: &Arc<dyn Queue>) -> bool {
    queue.properties().enable_profiling
}

/// Runs `kernel` on `queue` after `deps` and waits (dpctl's `submit`): its event where the
/// queue keeps one (`keeps_sync_events`). After no dependency, without an event to keep,
/// the provider waits its cheapest way (`Submissions::submit_and_wait`).
pub fn submit_sync(
    queue: &Arc<dyn Queue>,
    kernel: &Arc<dyn Kernel>,
    args: &[KernelArgument],
    range: &NdRange,
    deps: &[Arc<dyn Event>],
) -> Result<Option<Arc<dyn Event>>> {
    if !deps.is_empty() || keeps_sync_events(queue) {
        return submit(queue, kernel, args, range, deps)?.wait_sync(queue);
    }
    let launch = launch_args(queue, kernel.info(), args)?;
    let runner = submissions(queue)?;
    // SAFETY: every pointer argument is the address of a memory object checked to be of
    // the queue's context above; `args` holds each object, so its allocation stays alive
    // until the call has waited for the kernel.
    unsafe { runner.submit_and_wait(kernel.as_ref(), &launch, range) }?;
    Ok(None)
}

/// `nbytes` (at most both lengths) from `src` to `dst`, after `deps`.
pub fn memcpy_async(
    queue: &Arc<dyn Queue>,
    dst: &UsmMemory,
    src: &UsmMemory,
    nbytes: u64,
    deps: &[Arc<dyn Event>],
) -> Result<Submission> {
    if nbytes > dst.nbytes() || nbytes > src.nbytes() {
        return Err(MemoryError::InvalidRange {
            message: format!(
                "a copy of {nbytes} bytes from {} into {}: both must hold that many",
                src.describe(),
                dst.describe()
            ),
        });
    }
    if dst.read_only() {
        return Err(MemoryError::ReadOnlyWrite { address: dst.address() });
    }
    check_reachable(queue, &[dst, src])?;
    let runner = submissions(queue)?;
    // SAFETY: both ranges lie inside memory objects of the queue's context, held by the
    // Submission until the event completes.
    let event = unsafe { runner.memcpy_async(dst.address(), src.address(), nbytes, deps) }?;
    Ok(Submission { event, operands: Operands { _held: vec![dst.clone(), src.clone()] } })
}

/// `count` copies of `pattern` (1, 2, 4, 8 or 16 bytes) at the start of `dst`, after `deps`.
pub fn fill_async(
    queue: &Arc<dyn Queue>,
    dst: &UsmMemory,
    pattern: &[u8],
    count: u64,
    deps: &[Arc<dyn Event>],
) -> Result<Submission> {
    if !matches!(pattern.len(), 1 | 2 | 4 | 8 | 16) {
        return Err(MemoryError::InvalidRange { message: format!("a fill pattern of {} bytes", pattern.len()) });
    }
    let bytes = count.saturating_mul(pattern.len() as u64);
    if bytes > dst.nbytes() {
        return Err(MemoryError::InvalidRange {
            message: format!("{count} elements of {} bytes do not fit in {}", pattern.len(), dst.describe()),
        });
    }
    if dst.read_only() {
        return Err(MemoryError::ReadOnlyWrite { address: dst.address() });
    }
    check_reachable(queue, &[dst])?;
    let runner = submissions(queue)?;
    // SAFETY: the range lies inside a memory object of the queue's context, held by the
    // Submission until the event completes.
    let event = unsafe { runner.fill_async(dst.address(), pattern, count, deps) }?;
    Ok(Submission { event, operands: Operands { _held: vec![dst.clone()] } })
}

/// What `write_value` writes: 32 or 64 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressValue {
    U32(u32),
    U64(u64),
}

impl ProgressValue {
    fn bytes(self) -> Vec<u8> {
        match self {
            ProgressValue::U32(v) => v.to_le_bytes().to_vec(),
            ProgressValue::U64(v) => v.to_le_bytes().to_vec(),
        }
    }
}

/// Writes `value` at `offset` bytes into `dst` (host or shared memory, so that JS threads
/// can watch it with `Atomics`) once everything submitted to `queue` before it and `deps`
/// are done. Aligned to its size, as `Atomics` needs and a single store of the runtime
/// can give.
pub fn write_value(
    queue: &Arc<dyn Queue>,
    dst: &UsmMemory,
    offset: u64,
    value: ProgressValue,
    deps: &[Arc<dyn Event>],
) -> Result<Submission> {
    let bytes = value.bytes();
    let size = bytes.len() as u64;
    if !matches!(dst.usm_type(None), UsmKind::Host | UsmKind::Shared) {
        return Err(MemoryError::ValueTargetNotHost { what: dst.describe() });
    }
    if offset.checked_add(size).is_none_or(|end| end > dst.nbytes()) {
        return Err(MemoryError::InvalidRange {
            message: format!(
                "writeValue: {size} bytes at offset {offset} do not fit in {} of {} bytes",
                dst.describe(),
                dst.nbytes()
            ),
        });
    }
    let address = dst.address() + offset;
    if !address.is_multiple_of(size) {
        return Err(MemoryError::ValueMisaligned { address, size });
    }
    if dst.read_only() {
        return Err(MemoryError::ReadOnlyWrite { address: dst.address() });
    }
    check_reachable(queue, &[dst])?;
    let runner = submissions(queue)?;
    // SAFETY: the `size` bytes lie inside a memory object of the queue's context, held by
    // the Submission until the event completes.
    let event = unsafe { runner.write_value(address, &bytes, deps) }?;
    Ok(Submission { event, operands: Operands { _held: vec![dst.clone()] } })
}

/// A barrier after `deps` (everything so far when empty).
pub fn barrier(queue: &Arc<dyn Queue>, deps: &[Arc<dyn Event>]) -> Result<Submission> {
    let event = submissions(queue)?.barrier(deps)?;
    Ok(Submission { event, operands: Operands { _held: Vec::new() } })
}

fn check_reachable(queue: &Arc<dyn Queue>, memories: &[&UsmMemory]) -> Result<()> {
    let context = queue.context();
    for memory in memories {
        if context.pointer_kind(memory.address()) == UsmKind::Unknown
            && !memory.queue().context().same_context(context.as_ref())
        {
            return Err(MemoryError::KernelQueueMismatch {
                message: format!("{} is not memory of the queue's context", memory.describe()),
            });
        }
    }
    Ok(())
}

/// What the completion thread runs: drops a finished submission's operands, then tells.
type Finished = Box<dyn FnOnce() + Send>;

/// The completion thread of asynchronous submissions, started at the first one. The
/// process value holds the process's (`ProcessRuntime::completions`).
#[derive(Default)]
pub struct Completions {
    sender: OnceLock<Option<Mutex<mpsc::Sender<Finished>>>>,
}

impl Completions {
    /// The thread's queue (`None`: it could not be started).
    fn sender(&self) -> Option<mpsc::Sender<Finished>> {
        let sender = self.sender.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Finished>();
            let spawned = std::thread::Builder::new().name("dpctl-memory-completions".into()).spawn(move || {
                for finished in rx {
                    finished();
                }
            });
            spawned.ok().map(|_| Mutex::new(tx))
        });
        sender.as_ref().map(|tx| crate::sync::lock(tx).clone())
    }
}

/// How many operand sets `Submission::hold_in` keeps before it asks which are done.
const HELD_BEFORE_ASKING: usize = 8;

/// The asynchronous submissions of one owner (a JS environment) that have not finished,
/// each until the completion thread let go of its operands and told its owner; and the
/// operands of work nobody is told about (`Submission::hold_in`), let go of once found done.
#[derive(Default)]
pub struct Pending {
    book: Mutex<PendingBook>,
    finished: Condvar,
    held: Mutex<VecDeque<(Arc<dyn Event>, Operands)>>,
}

#[derive(Default)]
struct PendingBook {
    next: u64,
    events: HashMap<u64, Arc<dyn Event>>,
}

impl Pending {
    fn add(&self, event: &Arc<dyn Event>) -> u64 {
        let mut book = crate::sync::lock(&self.book);
        let key = book.next;
        book.next += 1;
        book.events.insert(key, Arc::clone(event));
        key
    }

    fn remove(&self, key: u64) {
        let mut book = crate::sync::lock(&self.book);
        book.events.remove(&key);
        if book.events.is_empty() {
            self.finished.notify_all();
        }
    }

    /// How many operand sets `hold_in` keeps.
    #[cfg(test)]
    fn held(&self) -> usize {
        crate::sync::lock(&self.held).len()
    }

    /// How many submissions have not finished.
    #[cfg(test)]
    fn unfinished(&self) -> usize {
        crate::sync::lock(&self.book).events.len()
    }

    /// Waits until every submission finished: their work is done, their operands are let
    /// go and their owners were told. A failure was the submitter's to hear, so none is
    /// reported here. Submissions added meanwhile are waited for too.
    pub fn wait_all(&self) {
        let held: Vec<(Arc<dyn Event>, Operands)> = crate::sync::lock(&self.held).drain(..).collect();
        for (event, operands) in held {
            let _ = event.wait();
            drop(operands);
        }
        let events: Vec<Arc<dyn Event>> = crate::sync::lock(&self.book).events.values().cloned().collect();
        for event in events {
            let _ = event.wait();
        }
        // The runtime's completion callbacks, and then the completion thread, finish each
        // one after its event completed.
        let mut book = crate::sync::lock(&self.book);
        while !book.events.is_empty() {
            book = self.finished.wait(book).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

impl Submission {
    pub fn event(&self) -> &Arc<dyn Event> {
        &self.event
    }

    /// Waits for the work, then lets go of its operands.
    pub fn wait(self) -> Result<Arc<dyn Event>> {
        let Submission { event, operands } = self;
        let waited = event.wait();
        drop(operands);
        waited.map(|()| event)
    }

    /// `wait`, for a synchronous operation on `queue`: the event where the queue keeps one
    /// (`keeps_sync_events`).
    pub fn wait_sync(self, queue: &Arc<dyn Queue>) -> Result<Option<Arc<dyn Event>>> {
        let event = self.wait()?;
        Ok(keeps_sync_events(queue).then_some(event))
    }

    /// Keeps the operands in `pending` until the work is done, with no completion callback
    /// (which would cost more than the operation itself): once `HELD_BEFORE_ASKING` are
    /// held, each `hold_in` first lets go of the oldest ones whose work is complete, in the
    /// order they were held, and `Pending::wait_all` waits for the rest. Returns the event
    /// at once.
    pub fn hold_in(self, pending: &Pending) -> Arc<dyn Event> {
        let Submission { event, operands } = self;
        let done = {
            let mut held = crate::sync::lock(&pending.held);
            let mut done = Vec::new();
            // Asking the runtime costs about as much as the write: ask once a few are held.
            if held.len() >= HELD_BEFORE_ASKING {
                while held.front().is_some_and(|(e, _)| matches!(e.status(), Ok(EventStatus::Complete))) {
                    done.extend(held.pop_front());
                }
            }
            held.push_back((Arc::clone(&event), operands));
            done
        };
        // Released outside the lock (a release may trim the pool or call the runtime).
        drop(done);
        event
    }

    /// Calls `notify` on the thread of `completions` once the work is done, after letting
    /// go of its operands; the submission is in `pending` until then. Returns the event at
    /// once.
    pub fn when_done(
        self,
        completions: &Completions,
        pending: &Arc<Pending>,
        notify: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Arc<dyn Event> {
        let Submission { event, operands } = self;
        let Some(sender) = completions.sender() else {
            // No completion thread: wait here (the operands stay held until done).
            let result = event.wait();
            drop(operands);
            notify(result);
            return event;
        };
        let key = pending.add(&event);
        let owner = Arc::clone(pending);
        let notify = move |result| {
            notify(result);
            owner.remove(key);
        };
        let slot = Arc::new(Mutex::new(Some((operands, notify))));
        let from_callback = Arc::clone(&slot);
        let registered = event.on_complete(Box::new(move |result| {
            let taken = crate::sync::lock(&from_callback).take();
            if let Some((operands, notify)) = taken {
                let finished: Finished = Box::new(move || {
                    drop(operands);
                    notify(result);
                });
                // The completion thread lives for the process; if it is gone the work
                // is dropped here, which only means a release from this thread.
                if let Err(mpsc::SendError(finished)) = sender.send(finished) {
                    finished();
                }
            }
        }));
        if let Err(error) = registered {
            // No callback: wait here, then settle.
            let taken = crate::sync::lock(&slot).take();
            if let Some((operands, notify)) = taken {
                let result = event.wait().and(Err(error));
                drop(operands);
                notify(result);
            }
        }
        event
    }
}

/// The properties dpctl's `property=` names: `in_order`, `enable_profiling`.
pub fn queue_properties(names: &[String]) -> Result<QueueProperties> {
    let mut properties = QueueProperties::default();
    for name in names {
        match name.as_str() {
            "in_order" => properties.in_order = true,
            "enable_profiling" => properties.enable_profiling = true,
            "default" => {}
            other => {
                return Err(MemoryError::QueueCreation {
                    message: format!(
                        "unknown queue property '{other}' (the properties are 'in_order' and 'enable_profiling')"
                    ),
                })
            }
        }
    }
    Ok(properties)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {

    #[test]
    fn a_ptx_parameter_takes_an_integer_of_its_width_either_way_and_a_c_one_its_own_type() {
        use ScalarType::*;
        let takes = |name: &str, given| accepts(name, ScalarType::of_declared(name).unwrap(), given);
        // nvcc and NVRTC declare `int` and `long long` parameters `.u32` and `.u64`.
        assert!(takes(".u32", Int32) && takes(".u32", Uint32) && takes(".s32", Uint32));
        assert!(takes(".u64", Int64) && !takes(".u64", Int32) && !takes(".u32", Float32));
        assert!(takes(".b32", Float32) && takes(".b64", Uint64) && !takes(".b32", Int64));
        assert!(takes(".f32", Float32) && !takes(".f32", Int32) && !takes(".f64", Float32));
        assert!(takes("int", Int32) && !takes("int", Uint32) && !takes("uint", Int32) && !takes("float", Int32));
    }
    use super::*;
    use crate::runtime::program::ArgInfo;

    fn info(args: Vec<ArgInfo>) -> KernelInfo {
        KernelInfo {
            function_name: "k".into(),
            num_args: args.len() as u32,
            args,
            work_group_size: 64,
            preferred_work_group_size_multiple: 8,
            private_mem_size: 0,
            local_mem_size: 0,
            compile_work_group_size: [0; 3],
            trailing_local: false,
        }
    }

    #[test]
    fn a_global_range_of_2_to_the_64_work_items_or_more_is_refused() {
        let two_32 = 1u64 << 32;
        for global in [[two_32, two_32, 1], [two_32, two_32, 2], [two_32, two_32, two_32]] {
            assert!(matches!(nd_range(None, &global, None), Err(MemoryError::InvalidRange { .. })), "{global:?}");
        }
        assert!(nd_range(None, &[two_32, two_32 - 1], None).is_ok(), "just below 2^64 is the runtime's to run");
    }

    #[test]
    fn malformed_sources_never_reach_a_compiler() {
        let header =
            |magic: u32| [magic, 0x0001_0000, 0, 8, 0].iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
        let with = |magic: u32, words: &[u32]| {
            let mut bytes = header(magic);
            bytes.extend(words.iter().flat_map(|w| w.to_le_bytes()));
            bytes
        };
        // OpCapability Shader: word count 2, opcode 17.
        let capability = (2u32 << 16) | 17;
        assert!(spirv_problem(&with(0x0723_0203, &[capability, 1])).is_none());
        assert!(
            spirv_problem(&with(0x0302_2307, &[capability.swap_bytes(), 1u32.swap_bytes()])).is_none(),
            "big-endian"
        );
        assert!(spirv_problem(&with(0x0723_0203, &[0])).unwrap().contains("word count of 0"));
        assert!(spirv_problem(&with(0x0723_0203, &[capability])).unwrap().contains("runs past"));
        assert!(spirv_problem(&with(0x1234_5678, &[])).unwrap().contains("magic number"));
        assert!(spirv_problem(&[0u8; 22]).unwrap().contains("22 bytes"));
        let nul = malformed(&ProgramSource::OpenClC("kernel void a() {}\0kernel void b() {}"));
        assert!(nul.is_some_and(|f| f.summary.contains("NUL character at offset 18")));
        assert!(malformed(&ProgramSource::OpenClC("kernel void a() {}")).is_none());
    }

    #[test]
    fn ranges_are_checked() {
        let i = info(vec![]);
        assert_eq!(nd_range(Some(&i), &[8, 4], None).unwrap().global, [8, 4, 1]);
        assert!(matches!(nd_range(None, &[], None), Err(MemoryError::InvalidRange { .. })));
        assert!(matches!(nd_range(None, &[1, 1, 1, 1], None), Err(MemoryError::InvalidRange { .. })));
        assert!(matches!(nd_range(None, &[4, 0], None), Err(MemoryError::InvalidRange { .. })));
        assert!(matches!(nd_range(None, &[10], Some(&[3])), Err(MemoryError::InvalidRange { .. })));
        assert!(matches!(nd_range(None, &[10, 10], Some(&[5])), Err(MemoryError::InvalidRange { .. })));
        assert!(matches!(nd_range(Some(&i), &[128, 128], Some(&[16, 8])), Err(MemoryError::InvalidRange { .. })));
        let ok = nd_range(Some(&i), &[128, 128], Some(&[8, 8])).unwrap();
        assert_eq!(ok.local, Some([8, 8, 1]));
    }

    #[test]
    fn local_memory_after_the_parameters_where_the_runtime_takes_it_so() {
        let queue =
            crate::runtime::fake::FakeContext::new(1, crate::runtime::fake::FakeDevice::new(1 << 20, 1 << 20)).queue();
        let value = ArgInfo { kind: ArgKind::Value, type_name: ".f32".into() };
        let mut cuda = info(vec![value.clone()]);
        cuda.trailing_local = true;
        let scalar = KernelArgument::Scalar { ty: ScalarType::Float32, bits: 0 };
        let launch = launch_args(&queue, &cuda, &[scalar.clone(), KernelArgument::Local(4096)]).unwrap();
        assert_eq!(launch, vec![LaunchArg::Scalar { size: 4, bits: 0 }, LaunchArg::Local(4096)]);
        assert_eq!(launch_args(&queue, &cuda, std::slice::from_ref(&scalar)).unwrap().len(), 1, "it is optional");
        let misplaced = launch_args(&queue, &cuda, &[KernelArgument::Local(64)]);
        assert!(matches!(misplaced, Err(MemoryError::KernelArgType { index: 0, .. })), "in a parameter's place");
        let zero = launch_args(&queue, &cuda, &[scalar.clone(), KernelArgument::Local(0)]);
        assert!(matches!(zero, Err(MemoryError::KernelArgType { index: 1, .. })));
        let two = launch_args(&queue, &cuda, &[scalar.clone(), KernelArgument::Local(8), KernelArgument::Local(8)]);
        assert!(matches!(two, Err(MemoryError::KernelArgCount { .. })));
        // Where local memory is a parameter (OpenCL), an extra one is one argument too many.
        let opencl = info(vec![value]);
        let extra = launch_args(&queue, &opencl, &[scalar, KernelArgument::Local(64)]);
        assert!(matches!(extra, Err(MemoryError::KernelArgCount { .. })));
    }

    /// An event the test completes by hand.
    #[derive(Default)]
    struct ByHand {
        complete: Mutex<bool>,
        changed: Condvar,
        callback: Mutex<Option<crate::runtime::program::Completion>>,
    }

    impl ByHand {
        fn complete(&self) {
            *crate::sync::lock(&self.complete) = true;
            self.changed.notify_all();
            if let Some(done) = crate::sync::lock(&self.callback).take() {
                done(Ok(()));
            }
        }
    }

    impl Event for ByHand {
        fn wait(&self) -> Result<()> {
            let mut complete = crate::sync::lock(&self.complete);
            while !*complete {
                complete = self.changed.wait(complete).unwrap();
            }
            Ok(())
        }
        fn status(&self) -> Result<crate::runtime::program::EventStatus> {
            Ok(if *crate::sync::lock(&self.complete) { EventStatus::Complete } else { EventStatus::Submitted })
        }
        fn profile(&self) -> Result<crate::runtime::program::Profile> {
            Err(MemoryError::ProfilingNotEnabled)
        }
        fn on_complete(&self, done: crate::runtime::program::Completion) -> Result<()> {
            *crate::sync::lock(&self.callback) = Some(done);
            Ok(())
        }
    }

    #[test]
    fn an_owner_waits_for_its_unfinished_submissions_until_their_owners_were_told() {
        let completions = Completions::default();
        let pending = Arc::new(Pending::default());
        let told = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let events: Vec<Arc<ByHand>> = (0..3).map(|_| Arc::new(ByHand::default())).collect();
        for event in &events {
            let submission =
                Submission { event: Arc::clone(event) as Arc<dyn Event>, operands: Operands { _held: Vec::new() } };
            let told = Arc::clone(&told);
            submission.when_done(&completions, &pending, move |result| {
                assert!(result.is_ok());
                told.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        assert_eq!(pending.unfinished(), 3);
        events[0].complete();
        let waiter = {
            let pending = Arc::clone(&pending);
            std::thread::spawn(move || pending.wait_all())
        };
        events[1].complete();
        events[2].complete();
        waiter.join().unwrap();
        // wait_all returned only once every owner was told, on the completion thread.
        assert_eq!(told.load(std::sync::atomic::Ordering::SeqCst), 3);
        assert_eq!(pending.unfinished(), 0);
        pending.wait_all(); // nothing left: returns at once
    }

    #[test]
    fn held_operands_go_once_their_work_is_found_done_oldest_first_and_the_rest_at_wait_all() {
        let queue =
            crate::runtime::fake::FakeContext::new(1, crate::runtime::fake::FakeDevice::new(1 << 20, 1 << 20)).queue();
        let memory = UsmMemory::allocate(crate::memory::pool::test_pool(), &queue, UsmKind::Host, 64, 0).unwrap();
        let holders = || Arc::strong_count(memory.owner().allocation().unwrap());
        let base = holders();
        let pending = Arc::new(Pending::default());
        const N: usize = HELD_BEFORE_ASKING;
        let events: Vec<Arc<ByHand>> = (0..N + 2).map(|_| Arc::new(ByHand::default())).collect();
        let hold = |i: usize| {
            let submission = Submission {
                event: Arc::clone(&events[i]) as Arc<dyn Event>,
                operands: Operands { _held: vec![memory.clone()] },
            };
            submission.hold_in(&pending);
        };
        for i in 0..N {
            hold(i);
        }
        events[1].complete();
        hold(N);
        assert_eq!((pending.held(), holders()), (N + 1, base + N + 1), "the oldest is not done: nothing goes");
        events[0].complete();
        hold(N + 1);
        assert_eq!((pending.held(), holders()), (N, base + N), "the two oldest, done, went");
        let waiter = {
            let pending = Arc::clone(&pending);
            std::thread::spawn(move || pending.wait_all())
        };
        for event in &events[2..] {
            event.complete();
        }
        waiter.join().unwrap();
        assert_eq!((pending.held(), holders()), (0, base), "wait_all waited for the rest and let go");
    }

    #[test]
    fn a_value_is_written_into_host_memory_aligned_inside_after_everything_before() {
        use crate::runtime::fake::{FakeContext, FakeDevice, FakeEvent, FakeOp};
        let context = FakeContext::new(1, FakeDevice::new(1 << 20, 1 << 20));
        let queue = context.queue();
        let pool = crate::memory::pool::test_pool();
        let host = UsmMemory::allocate(pool, &queue, UsmKind::Host, 64, 0).unwrap();
        let shared = UsmMemory::allocate(pool, &queue, UsmKind::Shared, 64, 0).unwrap();
        let device = UsmMemory::allocate(pool, &queue, UsmKind::Device, 64, 0).unwrap();
        let refused = |memory: &UsmMemory, offset: u64, value: ProgressValue| {
            write_value(&queue, memory, offset, value, &[]).err().unwrap()
        };
        assert!(matches!(refused(&device, 0, ProgressValue::U32(1)), MemoryError::ValueTargetNotHost { .. }));
        assert!(matches!(refused(&host, 64, ProgressValue::U32(1)), MemoryError::InvalidRange { .. }));
        assert!(matches!(refused(&host, 60, ProgressValue::U64(1)), MemoryError::InvalidRange { .. }));
        assert!(matches!(refused(&host, u64::MAX - 1, ProgressValue::U32(1)), MemoryError::InvalidRange { .. }));
        assert!(matches!(refused(&host, 2, ProgressValue::U32(1)), MemoryError::ValueMisaligned { size: 4, .. }));
        assert!(matches!(refused(&shared, 4, ProgressValue::U64(1)), MemoryError::ValueMisaligned { size: 8, .. }));
        assert!(context.counts().ops.is_empty(), "nothing refused reached the runtime");

        write_value(&queue, &host, 60, ProgressValue::U32(0x0102_0304), &[]).unwrap().wait().unwrap();
        let dep: Arc<dyn Event> = Arc::new(FakeEvent);
        write_value(&queue, &shared, 8, ProgressValue::U64(u64::MAX - 1), &[dep]).unwrap().wait().unwrap();
        // The provider's default: a barrier after everything so far, then a one-element
        // fill after it and the caller's dependencies.
        assert_eq!(
            context.counts().ops,
            vec![
                FakeOp::Barrier { deps: 0 },
                FakeOp::Fill { dst: host.address() + 60, pattern: vec![4, 3, 2, 1], count: 1, deps: 1 },
                FakeOp::Barrier { deps: 0 },
                FakeOp::Fill {
                    dst: shared.address() + 8,
                    pattern: (u64::MAX - 1).to_le_bytes().to_vec(),
                    count: 1,
                    deps: 2
                },
            ]
        );
    }

    #[test]
    fn an_argument_spec_is_read_only_where_every_slot_was_filled() {
        let queue =
            crate::runtime::fake::FakeContext::new(1, crate::runtime::fake::FakeDevice::new(1 << 20, 1 << 20)).queue();
        let memory = UsmMemory::allocate(crate::memory::pool::test_pool(), &queue, UsmKind::Shared, 64, 0).unwrap();
        let asked = std::cell::RefCell::new(Vec::new());
        let lookup = |id: f64| {
            asked.borrow_mut().push(id);
            Ok(memory.clone())
        };
        // A memory object (handle 0), an int32 of -1, 256 bytes of local memory.
        let spec = [3.0, 0.0, 0.0, 1.0, 0.0, 4.0, 2.0, 256.0, 0.0];
        let bits = [0, 0, 0xffff_ffff, 0, 0, 0];
        let args = decode_arguments("k", &spec, &bits, &lookup).unwrap();
        assert_eq!(args.len(), 3);
        assert!(matches!(args[1], KernelArgument::Scalar { ty: ScalarType::Int32, bits: 0xffff_ffff }));
        assert!(matches!(args[2], KernelArgument::Local(256)));
        assert_eq!(*asked.borrow(), vec![0.0]);
        // Zeros (a slot the JS layer never filled) are no memory handle 0.
        let unfilled = decode_arguments("k", &[3.0, 1.0, 0.0, 0.0, 0.0, 0.0], &[0; 4], &lookup);
        assert!(matches!(unfilled, Err(MemoryError::KernelArgType { index: 1, .. })), "{:?}", unfilled.err());
        asked.borrow_mut().clear();
        for (spec, index) in [
            ([9.0, 0.0, 0.0], 0),           // an unknown kind
            ([1.5, 0.0, 0.0], 0),           // a fraction of a kind
            ([1.0, 0.0, 11.0], 0),          // an unknown scalar type
            ([1.0, 0.0, f64::NAN], 0),      // no type at all
            ([2.0, 0.0, 0.0], 0),           // no local bytes
            ([2.0, -16.0, 0.0], 0),         // negative
            ([2.0, 16.5, 0.0], 0),          // a fraction
            ([2.0, 2f64.powi(60), 0.0], 0), // beyond a safe integer
        ] {
            let refused = decode_arguments("k", &spec, &[0, 0], &lookup);
            assert!(
                matches!(refused, Err(MemoryError::KernelArgType { index: i, .. }) if i == index),
                "{spec:?}: {:?}",
                refused.err()
            );
        }
        assert!(asked.borrow().is_empty(), "no memory was looked up for a refused spec");
        // Lengths that do not agree: part of a slot, or bits of another count.
        assert!(decode_arguments("k", &[3.0, 0.0], &[], &lookup).is_err());
        assert!(decode_arguments("k", &[1.0, 0.0, 4.0], &[0], &lookup).is_err());
    }

    #[test]
    fn local_memory_beyond_the_devices_is_an_invalid_size() {
        // The fake device has 64 KiB of local memory.
        let queue =
            crate::runtime::fake::FakeContext::new(1, crate::runtime::fake::FakeDevice::new(1 << 20, 1 << 20)).queue();
        let local = ArgInfo { kind: ArgKind::Local, type_name: "uchar*".into() };
        let mut k = info(vec![local.clone(), local]);
        let fits = launch_args(&queue, &k, &[KernelArgument::Local(32 << 10), KernelArgument::Local(32 << 10)]);
        assert_eq!(fits.unwrap().len(), 2);
        let error = launch_args(&queue, &k, &[KernelArgument::Local(32 << 10), KernelArgument::Local((32 << 10) + 1)])
            .unwrap_err();
        assert!(matches!(error, MemoryError::LocalMemoryTooLarge { index: 1, available: 65536, .. }), "{error:?}");
        assert_eq!(
            (error.error_code().as_str(), error.class()),
            ("ERR_INVALID_SIZE", crate::error::ErrorClass::RangeError)
        );
        // 2^32 + 16 bytes is refused, not taken modulo 2^32.
        let wrap = launch_args(&queue, &k, &[KernelArgument::Local((1 << 32) + 16), KernelArgument::Local(16)]);
        assert!(matches!(wrap, Err(MemoryError::LocalMemoryTooLarge { index: 0, .. })));
        let huge = launch_args(&queue, &k, &[KernelArgument::Local(u64::MAX), KernelArgument::Local(u64::MAX)]);
        assert!(matches!(huge, Err(MemoryError::LocalMemoryTooLarge { index: 0, .. })));
        // The kernel's own local memory counts.
        k.local_mem_size = 1024;
        let own = launch_args(&queue, &k, &[KernelArgument::Local(32 << 10), KernelArgument::Local(32 << 10)]);
        assert!(matches!(own, Err(MemoryError::LocalMemoryTooLarge { index: 1, available: 64512, .. })));
    }

    #[test]
    fn a_float16_scalar_needs_a_device_with_half_precision() {
        use crate::runtime::fake::{FakeContext, FakeDevice};
        let half = vec![ArgInfo { kind: ArgKind::Value, type_name: "half".into() }];
        let arg = [KernelArgument::Scalar { ty: ScalarType::Float16, bits: 0x3c00 }];
        // The fake device reports no aspects: no fp16.
        let without = FakeContext::new(1, FakeDevice::new(1 << 20, 1 << 20)).queue();
        let refused = launch_args(&without, &info(half.clone()), &arg).err().unwrap();
        assert!(
            matches!(&refused, MemoryError::KernelArgType { index: 0, message, .. } if message.contains("cl_khr_fp16"))
        );
        let mut facts = crate::runtime::Device::info(FakeDevice::new(1 << 20, 1 << 20).as_ref()).clone();
        facts.aspects = vec!["fp16".into()];
        let with = FakeContext::new(2, FakeDevice::of(facts)).queue();
        assert_eq!(launch_args(&with, &info(half), &arg).unwrap(), vec![LaunchArg::Scalar { size: 2, bits: 0x3c00 }]);
        // A half parameter takes no other 16-bit scalar.
        let int16 = [KernelArgument::Scalar { ty: ScalarType::Uint16, bits: 0x3c00 }];
        let halfs = vec![ArgInfo { kind: ArgKind::Value, type_name: "half".into() }];
        assert!(matches!(launch_args(&with, &info(halfs), &int16), Err(MemoryError::KernelArgType { .. })));
    }

    #[test]
    fn declared_types_map_to_scalars() {
        assert_eq!(ScalarType::of_declared("float"), Some(ScalarType::Float32));
        assert_eq!(ScalarType::of_declared("ulong"), Some(ScalarType::Uint64));
        assert_eq!(ScalarType::of_declared(".s32"), Some(ScalarType::Int32));
        assert_eq!(ScalarType::of_declared("float4"), None);
        for ty in ScalarType::ALL {
            assert!(matches!(ty.size(), 1 | 2 | 4 | 8));
        }
    }

    #[test]
    fn properties_by_name() {
        let p = queue_properties(&["in_order".into(), "enable_profiling".into()]).unwrap();
        assert!(p.in_order && p.enable_profiling);
        assert!(queue_properties(&["fast".into()]).is_err());
    }
}
