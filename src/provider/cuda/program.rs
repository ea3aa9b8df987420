//! Programs, kernels and submissions of the CUDA provider: PTX loaded by the driver
//! (`cuModuleLoadDataEx`, which compiles it for the GPU it has), kernels launched with
//! `cuLaunchKernel` on the queue's stream, and events recorded after each submission. A
//! completion callback is a host function queued on the stream after the work
//! (`cuLaunchHostFunc`), which makes no CUDA call. CUDA C (NVRTC) is not built here yet:
//! `ERR_PROGRAMS_UNSUPPORTED` says so.

use std::any::Any;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

use crate::error::{MemoryError, Result};
use crate::runtime::program::{
    ArgInfo, ArgKind, BuildFailure, Built, Completion, Event, EventStatus, Kernel, KernelInfo, LaunchArg, NdRange,
    Profile, Program, ProgramBuilder, ProgramSource, Submissions,
};
use crate::runtime::{Address, Device};

use super::driver::program_calls::{
    Event as DriverEvent, Function, Module, FUNC_LOCAL_SIZE_BYTES, FUNC_MAX_THREADS_PER_BLOCK, FUNC_SHARED_SIZE_BYTES,
};
use super::driver::Stream;
use super::{CudaContext, CudaQueue};

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
    stream: Arc<Stream>,
    context: Arc<CudaContext>,
}

impl ProgramBuilder for CudaContext {
    fn build(&self, device: &Arc<dyn Device>, source: ProgramSource<'_>, options: &str) -> Result<Built> {
        if !self.device.same_device(device.as_ref()) {
            return Err(MemoryError::KernelQueueMismatch {
                message: format!("device '{}' is not the device of this CUDA context", device.info().name),
            });
        }
        let ptx = match source {
            ProgramSource::Ptx(text) => text,
            ProgramSource::CudaC(_) => {
                return Err(MemoryError::ProgramsUnsupported {
                    message: "CUDA C (NVRTC) is not built into this version: compile it to PTX (nvcc -ptx) and use \
                              createProgramFromPtx"
                        .into(),
                })
            }
            other => {
                return Err(MemoryError::ProgramsUnsupported {
                    message: format!(
                        "CUDA devices load PTX, not {} (that is for SYCL OpenCL devices)",
                        other.format_name()
                    ),
                })
            }
        };
        if !options.trim().is_empty() {
            return Err(MemoryError::ProgramsUnsupported {
                message: "the PTX loader of this version takes no options".into(),
            });
        }
        let Some(context) = self.me.upgrade() else {
            return Err(MemoryError::ProgramsUnsupported { message: "the CUDA context is being dropped".into() });
        };
        let current = self.current()?;
        match current.module_load(ptx) {
            Ok((module, log)) => {
                let list = ptx_entries(ptx);
                let names = list.iter().map(|e| e.name.clone()).collect();
                let entries = list.into_iter().map(|e| (e.name, e.params)).collect();
                let program = CudaProgram { module: Arc::new(module), context, entries, names };
                Ok(Ok((Arc::new(program) as Arc<dyn Program>, log)))
            }
            Err((error, log)) => {
                Ok(Err(BuildFailure { summary: format!("the PTX did not load: {}", error.description()), log }))
            }
        }
    }
}

impl Program for CudaProgram {
    fn kernel_names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn kernel(&self, name: &str) -> Result<Option<Arc<dyn Kernel>>> {
        let current = self.context.current()?;
        let Some(function) = current.module_function(&self.module, name)? else { return Ok(None) };
        let params = self.entries.get(name).cloned().unwrap_or_default();
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

    fn as_any(&self) -> &dyn Any {
        self
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
        Err(MemoryError::ProfilingNotEnabled)
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

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Blocks and threads per block for `range` (a local range, or up to `max_threads`
/// threads in dimension 0 that divide it).
fn launch_shape(range: &NdRange, max_threads: u64) -> Result<([u32; 3], [u32; 3])> {
    let block: [u64; 3] = match range.local {
        Some(local) => local,
        None => {
            let limit = max_threads.clamp(1, 1024).min(range.global[0]);
            let first = (1..=limit).rev().find(|b| range.global[0].is_multiple_of(*b)).unwrap_or(1);
            [first, 1, 1]
        }
    };
    let mut grid = [1u32; 3];
    let mut threads = [1u32; 3];
    for d in 0..3 {
        let blocks = range.global[d] / block[d];
        let limit = if d == 0 { u64::from(u32::MAX >> 1) } else { 65_535 };
        if blocks > limit || block[d] > 1024 {
            return Err(MemoryError::InvalidRange {
                message: format!(
                    "{blocks} blocks of {} threads in dimension {d} are beyond what CUDA launches",
                    block[d]
                ),
            });
        }
        grid[d] = blocks as u32;
        threads[d] = block[d] as u32;
    }
    Ok((grid, threads))
}

impl CudaQueue {
    fn record(&self, current: &super::driver::CurrentContext) -> Result<Arc<dyn Event>> {
        let event = current.event_create(false)?;
        current.event_record(&event, &self.stream)?;
        Ok(Arc::new(CudaEvent { event, stream: Arc::clone(&self.stream), context: Arc::clone(&self.context) }))
    }

    fn wait_for(&self, current: &super::driver::CurrentContext, deps: &[Arc<dyn Event>]) -> Result<()> {
        for dep in deps {
            let Some(dep) = dep.as_any().downcast_ref::<CudaEvent>() else {
                return Err(MemoryError::KernelQueueMismatch {
                    message: "a dependency is an event of another runtime than the queue's (CUDA)".into(),
                });
            };
            current.stream_wait_event(&self.stream, &dep.event)?;
        }
        Ok(())
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
        let Some(kernel) = kernel.as_any().downcast_ref::<CudaKernel>() else {
            return Err(MemoryError::KernelQueueMismatch {
                message: "the kernel was built by another runtime than the queue's (CUDA)".into(),
            });
        };
        if !std::ptr::eq(kernel.context.as_ref(), self.context.as_ref()) {
            return Err(MemoryError::KernelQueueMismatch {
                message: format!(
                    "kernel '{}' was loaded in another CUDA context than the queue's",
                    kernel.info.function_name
                ),
            });
        }
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
            slots[index] = match *arg {
                LaunchArg::Pointer(address) if size == 8 => address,
                LaunchArg::Pointer(_) => return Err(wrong(format!("a pointer for a parameter of type '{ty}'"))),
                LaunchArg::Scalar { size: given, bits } if given == size => bits,
                LaunchArg::Scalar { size: given, .. } => {
                    return Err(wrong(format!("a {given}-byte scalar for a parameter of type '{ty}'")))
                }
                LaunchArg::Local(_) => {
                    return Err(wrong(
                        "local memory is a launch's shared memory on CUDA, which this version does not set".into(),
                    ))
                }
            };
        }
        let (grid, block) = launch_shape(range, kernel.info.work_group_size)?;
        let mut params: Vec<*mut c_void> = slots.iter_mut().map(|slot| (slot as *mut u64).cast()).collect();
        let current = self.context.current()?;
        self.wait_for(&current, deps)?;
        // SAFETY: one pointer per parameter, each to an 8-byte slot holding a value of at
        // most that size (little-endian: its low bytes are the value), read during the
        // call; the memory the pointers address stays allocated until the recorded event
        // completes (this fn's contract, forwarded).
        unsafe { current.launch(kernel.function, grid, block, 0, &self.stream, &mut params) }?;
        self.record(&current)
    }

    unsafe fn memcpy_async(
        &self,
        dst: Address,
        src: Address,
        nbytes: u64,
        deps: &[Arc<dyn Event>],
    ) -> Result<Arc<dyn Event>> {
        let current = self.context.current()?;
        self.wait_for(&current, deps)?;
        if let Some(size) = usize::try_from(nbytes).ok().filter(|&n| n > 0) {
            // SAFETY: this fn's contract, forwarded: both ranges stay valid until the
            // event recorded after the copy completes.
            unsafe { current.memcpy_async(dst, src, size, &self.stream) }?;
        }
        self.record(&current)
    }

    unsafe fn fill_async(
        &self,
        dst: Address,
        pattern: &[u8],
        count: u64,
        deps: &[Arc<dyn Event>],
    ) -> Result<Arc<dyn Event>> {
        let [byte] = pattern else {
            return Err(MemoryError::ProgramsUnsupported {
                message: format!("CUDA queues fill with 1-byte patterns in this version, not {} bytes", pattern.len()),
            });
        };
        let current = self.context.current()?;
        self.wait_for(&current, deps)?;
        if let Some(size) = usize::try_from(count).ok().filter(|&n| n > 0) {
            // SAFETY: this fn's contract, forwarded.
            unsafe { current.memset_d8_async(dst, *byte, size, &self.stream) }?;
        }
        self.record(&current)
    }

    fn barrier(&self, deps: &[Arc<dyn Event>]) -> Result<Arc<dyn Event>> {
        // A stream runs in order: an event recorded now completes after everything before.
        let current = self.context.current()?;
        self.wait_for(&current, deps)?;
        self.record(&current)
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
    fn launch_shapes() {
        let r = NdRange { dims: 1, global: [1000, 1, 1], local: None };
        let (grid, block) = launch_shape(&r, 1024).unwrap();
        assert_eq!(u64::from(grid[0]) * u64::from(block[0]), 1000);
        assert!(block[0] <= 1024);
        let r = NdRange { dims: 2, global: [64, 64, 1], local: Some([16, 16, 1]) };
        assert_eq!(launch_shape(&r, 1024).unwrap(), ([4, 4, 1], [16, 16, 1]));
        let r = NdRange { dims: 2, global: [1, 1 << 20, 1], local: Some([1, 1, 1]) };
        assert!(launch_shape(&r, 1024).is_err());
    }
}
