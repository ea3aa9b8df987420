//! Programs, kernels, submissions and events of the SYCL provider: OpenCL C and SPIR-V
//! built by the OpenCL runtime under a device of the OpenCL backend (the shim reaches it
//! through SYCL's interop), kernels run by SYCL itself on the queue.

use std::sync::Arc;

use crate::error::{MemoryError, Result};
use crate::runtime::program::{
    events_of, kernel_of, ArgInfo, ArgKind, BuildFailure, Built, Completion, Event, EventStatus, Kernel, KernelInfo,
    LaunchArg, NdRange, Profile, Program, ProgramBuilder, ProgramSource, QueueProperties, Submissions,
};
use crate::runtime::{Address, Context, Device, DeviceType, Queue};

use super::shim::{QueueHandle, ShimError};
use super::shim_program::{self as ffi, EventHandle, KernelHandle, ProgramHandle, RawKernelArg};
use super::{runtime_error, SyclContext, SyclDevice, SyclQueue};

/// The shim's flags for `properties`.
pub(super) fn property_flags(properties: QueueProperties) -> std::ffi::c_int {
    let mut flags = 0;
    if properties.in_order {
        flags |= ffi::QUEUE_IN_ORDER;
    }
    if properties.enable_profiling {
        flags |= ffi::QUEUE_ENABLE_PROFILING;
    }
    flags
}

/// A program built for one device of one context.
pub struct SyclProgram {
    handle: ProgramHandle,
    context: Arc<SyclContext>,
    device: Arc<SyclDevice>,
    names: Vec<String>,
}

/// A kernel of a [`SyclProgram`], with what the runtime says of it.
pub struct SyclKernel {
    handle: KernelHandle,
    info: KernelInfo,
    context: Arc<SyclContext>,
    device: Arc<SyclDevice>,
}

/// A submission's `sycl::event`, with the queue whose asynchronous errors its wait reports.
pub struct SyclEvent {
    handle: EventHandle,
    queue: Arc<QueueHandle>,
    cpu: bool,
    profiling: bool,
}

impl ProgramBuilder for SyclContext {
    fn build(&self, device: &Arc<dyn Device>, source: ProgramSource<'_>, options: &str) -> Result<Built> {
        let Some(context) = self.me.upgrade() else {
            return Err(MemoryError::ProgramsUnsupported { message: "the SYCL context is being dropped".into() });
        };
        let Some(device) = self.devices.iter().find(|d| d.same_device(device.as_ref())) else {
            return Err(MemoryError::KernelQueueMismatch {
                message: format!("the device {:?} is not a device of this SYCL context", device.info().name),
            });
        };
        if let ProgramSource::Sycl { text, headers, registered, flags } = source {
            let sycl_source = ffi::SyclSource { text, headers, registered, options: flags };
            return build_sycl(&self.handle, context, device, &sycl_source);
        }
        if device.info.backend != "opencl" {
            return Err(MemoryError::ProgramsUnsupported {
                message: format!(
                    "programs are built for SYCL devices of the OpenCL backend; '{}' is of the {} backend",
                    device.info.name, device.info.backend
                ),
            });
        }
        let (format, data): (_, &[u8]) = match source {
            ProgramSource::OpenClC(text) => (ffi::PROGRAM_OPENCL_C, text.as_bytes()),
            ProgramSource::SpirV(bytes) => (ffi::PROGRAM_SPIRV, bytes),
            other => {
                return Err(MemoryError::ProgramsUnsupported {
                    message: format!(
                        "SYCL devices build OpenCL C and SPIR-V, not {} (that is for CUDA devices)",
                        other.format_name()
                    ),
                })
            }
        };
        match self.handle.build_program(&device.handle, format, data, options) {
            Ok((handle, log)) => {
                let names = handle.kernel_names().map_err(|e| runtime_error("listing the program's kernels", e))?;
                let program = SyclProgram { handle, context, device: Arc::clone(device), names };
                Ok(Ok((Arc::new(program) as Arc<dyn Program>, log)))
            }
            Err(failed) if failed.error.status == ffi::STATUS_BUILD => Ok(Err(BuildFailure {
                summary: format!("the {} program did not build: {}", source.format_name(), failed.error.message),
                log: failed.log,
            })),
            Err(failed) => Err(runtime_error(&format!("building a {} program", source.format_name()), failed.error)),
        }
    }
}

/// Builds SYCL source: only on the DPC++ 2026 runtime (whose shim has the kernel_compiler
/// path).
fn build_sycl(
    handle: &super::shim::ContextHandle,
    context: Arc<SyclContext>,
    device: &Arc<SyclDevice>,
    sycl_source: &ffi::SyclSource<'_>,
) -> Result<Built> {
    let abi = super::shim::shim().map_err(|message| MemoryError::ProgramsUnsupported { message })?.abi;
    if !abi.sycl_source {
        return Err(MemoryError::ProgramsUnsupported {
            message: format!(
                "SYCL-source kernels need the DPC++ 2026 runtime (libsycl.so.9: `npx dpctl-memory-install-runtime --sycl 2026`, \
                 then DPCTL_MEMORY_SYCL_ROOT at its folder, or an installed oneAPI 2026); this process runs {} ({}), \
                 whose PyPI runtime lacks the device library SYCL source links (libsycl-crt.bc)",
                abi.releases, abi.libsycl
            ),
        });
    }
    match handle.build_sycl_program(&device.handle, sycl_source) {
        Ok((handle, log)) => {
            let names = handle.kernel_names().map_err(|e| runtime_error("listing the program's kernels", e))?;
            let program = SyclProgram { handle, context, device: Arc::clone(device), names };
            Ok(Ok((Arc::new(program) as Arc<dyn Program>, log)))
        }
        Err(failed) if failed.error.status == ffi::STATUS_BUILD => Ok(Err(BuildFailure {
            summary: format!("the SYCL program did not build: {}", first_line(&failed.error.message)),
            log: failed.log,
        })),
        Err(failed) if failed.error.status == ffi::STATUS_UNSUPPORTED => Err(MemoryError::ProgramsUnsupported {
            message: format!("'{}': {}", device.info.name, failed.error.message),
        }),
        Err(failed) => Err(runtime_error("building a SYCL program", failed.error)),
    }
}

/// The first line of a compiler's message (the rest is in the build log).
fn first_line(text: &str) -> &str {
    text.lines().find(|line| !line.trim().is_empty()).unwrap_or(text)
}

impl Program for SyclProgram {
    fn kernel_names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn kernel(&self, name: &str) -> Result<Option<Arc<dyn Kernel>>> {
        let Some(handle) = self.handle.kernel(name).map_err(|e| runtime_error("creating a kernel", e))? else {
            return Ok(None);
        };
        let raw = handle.info().map_err(|e| runtime_error("reading the kernel's information", e))?;
        let mut args = Vec::with_capacity(raw.num_args as usize);
        for index in 0..raw.num_args {
            let (kind, type_name) =
                handle.arg_info(index).map_err(|e| runtime_error("reading the kernel's argument information", e))?;
            let kind = match kind {
                ffi::ARG_GLOBAL => ArgKind::Global,
                ffi::ARG_LOCAL => ArgKind::Local,
                ffi::ARG_VALUE => ArgKind::Value,
                _ => ArgKind::Unknown,
            };
            args.push(ArgInfo { kind, type_name });
        }
        let info = KernelInfo {
            function_name: name.to_string(),
            num_args: raw.num_args,
            args,
            work_group_size: raw.work_group_size,
            preferred_work_group_size_multiple: raw.preferred_work_group_size_multiple,
            private_mem_size: raw.private_mem_size,
            local_mem_size: raw.local_mem_size,
            compile_work_group_size: raw.compile_work_group_size,
            trailing_local: false,
        };
        let kernel = SyclKernel { handle, info, context: Arc::clone(&self.context), device: Arc::clone(&self.device) };
        Ok(Some(Arc::new(kernel)))
    }
}

impl Kernel for SyclKernel {
    fn info(&self) -> &KernelInfo {
        &self.info
    }
}

impl SyclEvent {
    fn status_error(&self, what: &str, e: ShimError) -> MemoryError {
        runtime_error(what, e)
    }
}

impl Event for SyclEvent {
    fn wait(&self) -> Result<()> {
        let _one_at_a_time = self.cpu.then(super::cpu_device_lock);
        self.queue.wait_event(&self.handle).map_err(|e| runtime_error("the submission failed", e))
    }

    fn status(&self) -> Result<EventStatus> {
        Ok(match self.handle.status().map_err(|e| self.status_error("reading an event's status", e))? {
            0 => EventStatus::Submitted,
            1 => EventStatus::Running,
            _ => EventStatus::Complete,
        })
    }

    fn profile(&self) -> Result<Profile> {
        if !self.profiling {
            return Err(MemoryError::ProfilingNotEnabled);
        }
        let (submit, start, end) =
            self.handle.profiling().map_err(|e| self.status_error("reading an event's profiling information", e))?;
        Ok(Profile { submit, start, end })
    }

    fn on_complete(&self, done: Completion) -> Result<()> {
        let callback = Box::new(move |status: std::ffi::c_int| {
            done(if status == 0 {
                Ok(())
            } else {
                Err(MemoryError::SyclRuntime {
                    operation: "the submission failed".into(),
                    message: format!("the OpenCL runtime reported execution status {status}"),
                })
            })
        });
        self.handle.on_complete(callback).map_err(|e| runtime_error("waiting for an event", e))
    }
}

impl SyclQueue {
    fn event(&self, handle: EventHandle) -> Arc<dyn Event> {
        Arc::new(SyclEvent {
            handle,
            queue: Arc::clone(&self.handle),
            cpu: self.device.info.device_type == DeviceType::Cpu,
            profiling: self.properties.enable_profiling,
        })
    }

    /// The kernel, checked to be of this queue's context and device, and the shim's form of
    /// its arguments.
    fn launch_of<'k>(&self, kernel: &'k dyn Kernel, args: &[LaunchArg]) -> Result<(&'k SyclKernel, Vec<RawKernelArg>)> {
        let kernel = kernel_of::<SyclKernel>(kernel, "SYCL")?;
        if !self.context.same_context(kernel.context.as_ref()) || !self.device.same(&kernel.device) {
            return Err(MemoryError::KernelQueueMismatch {
                message: format!(
                    "kernel '{}' was built for another context or device than the queue's; build the program with \
                     this queue",
                    kernel.info.function_name
                ),
            });
        }
        let raw = args
            .iter()
            .map(|arg| match *arg {
                LaunchArg::Pointer(address) => RawKernelArg { kind: ffi::KARG_POINTER, size: 8, value: address },
                LaunchArg::Scalar { size, bits } => RawKernelArg { kind: ffi::KARG_SCALAR, size, value: bits },
                LaunchArg::Local(nbytes) => RawKernelArg { kind: ffi::KARG_LOCAL, size: 0, value: nbytes },
            })
            .collect();
        Ok((kernel, raw))
    }

    /// The shim's events of `deps`, which must be this provider's.
    fn dep_handles<'a>(&self, deps: &'a [Arc<dyn Event>]) -> Result<Vec<&'a EventHandle>> {
        Ok(events_of::<SyclEvent>(deps, "SYCL")?.into_iter().map(|e| &e.handle).collect())
    }
}

impl Submissions for SyclQueue {
    unsafe fn submit(
        &self,
        kernel: &dyn Kernel,
        args: &[LaunchArg],
        range: &NdRange,
        deps: &[Arc<dyn Event>],
    ) -> Result<Arc<dyn Event>> {
        let (kernel, raw) = self.launch_of(kernel, args)?;
        let deps = self.dep_handles(deps)?;
        // SAFETY: the pointer arguments stay allocated until the event completes (this fn's
        // contract, forwarded).
        let handle =
            unsafe { self.handle.submit(&kernel.handle, &raw, range.dims, &range.global, range.local.as_ref(), &deps) }
                .map_err(|e| runtime_error(&format!("submitting kernel '{}'", kernel.info.function_name), e))?;
        Ok(self.event(handle))
    }

    unsafe fn submit_and_wait(&self, kernel: &dyn Kernel, args: &[LaunchArg], range: &NdRange) -> Result<()> {
        let (kernel, raw) = self.launch_of(kernel, args)?;
        // As an event's wait, serialised on a CPU device (see `cpu_device_lock`).
        let _one_at_a_time = self.cpu_device_guard();
        // SAFETY: the pointer arguments stay allocated until this returns, after the wait
        // (this fn's contract, forwarded).
        unsafe { self.handle.submit_wait(&kernel.handle, &raw, range.dims, &range.global, range.local.as_ref()) }
            .map_err(|e| runtime_error(&format!("running kernel '{}'", kernel.info.function_name), e))
    }

    unsafe fn memcpy_async(
        &self,
        dst: Address,
        src: Address,
        nbytes: u64,
        deps: &[Arc<dyn Event>],
    ) -> Result<Arc<dyn Event>> {
        let deps = self.dep_handles(deps)?;
        // SAFETY: this fn's contract, forwarded.
        let handle = unsafe { self.handle.memcpy_async(dst, src, nbytes, &deps) }
            .map_err(|e| runtime_error("SYCL memcpy failed", e))?;
        Ok(self.event(handle))
    }

    unsafe fn fill_async(
        &self,
        dst: Address,
        pattern: &[u8],
        count: u64,
        deps: &[Arc<dyn Event>],
    ) -> Result<Arc<dyn Event>> {
        let deps = self.dep_handles(deps)?;
        // SAFETY: this fn's contract, forwarded.
        let handle = unsafe { self.handle.fill_async(dst, pattern, count, &deps) }
            .map_err(|e| runtime_error("SYCL fill failed", e))?;
        Ok(self.event(handle))
    }

    fn barrier(&self, deps: &[Arc<dyn Event>]) -> Result<Arc<dyn Event>> {
        let deps = self.dep_handles(deps)?;
        let handle = self.handle.barrier(&deps).map_err(|e| runtime_error("submitting a barrier", e))?;
        Ok(self.event(handle))
    }

    unsafe fn write_value(&self, dst: Address, value: &[u8], deps: &[Arc<dyn Event>]) -> Result<Arc<dyn Event>> {
        // A one-element fill: the runtime copies the pattern at submission, so no host
        // constant has to outlive the operation. An in-order queue runs it after
        // everything before; an out-of-order one only after a barrier it depends on.
        let mut after = deps.to_vec();
        if !self.properties.in_order {
            after.push(self.barrier(&[])?);
        }
        // SAFETY: this fn's contract, forwarded.
        unsafe { self.fill_async(dst, value, 1, &after) }
    }
}

/// A queue with properties on `device` of `context`.
pub(super) fn create_queue_with(
    context: &SyclContext,
    device: &Arc<dyn Device>,
    properties: QueueProperties,
) -> Result<Arc<dyn Queue>> {
    let Some(me) = context.me.upgrade() else {
        return Err(MemoryError::QueueCreation { message: "the SYCL context is being dropped".into() });
    };
    let Some(device) = context.devices.iter().find(|d| d.same_device(device.as_ref())) else {
        return Err(MemoryError::QueueCreation {
            message: format!("the device {:?} is not a device of this SYCL context", device.info().name),
        });
    };
    let handle = context
        .handle
        .create_queue_with(&device.handle, property_flags(properties))
        .map_err(|e| MemoryError::QueueCreation { message: format!("creating a SYCL queue: {e}") })?;
    Ok(Arc::new(SyclQueue { handle: Arc::new(handle), context: me, device: Arc::clone(device), properties }))
}
