//! The asynchronous copies: `copyToHostAsync`, `copyFromHostAsync`,
//! `copyFromDeviceAsync` and `memsetAsync` run on libuv's thread pool and return
//! Promises. Each task holds the memory it touches (its `Arc<Allocation>`), and the JS
//! layer's async methods hold the JS values until the Promise settles. `free()` during a
//! task therefore releases only the object's own reference; the memory goes when the
//! task settles.
//!
//! The host side: a worker thread touches JS memory only where JS cannot take it away
//! meanwhile: a `SharedArrayBuffer`, or USM memory of ours (pinned when the pointer is
//! taken, before any JS runs). A plain `ArrayBuffer` could be detached, transferred or
//! resized while the worker runs, so its bytes go through memory of the task's own: the
//! source is copied in at the call, the destination filled when the task settles (after
//! checking it is still long enough).

use std::sync::Arc;

use napi::bindgen_prelude::{ToNapiValue, Unknown};
use napi::Env;
use napi::ScopedTask;

use crate::error::MemoryError;
use crate::host::Scratch;
use crate::js::errors::to_js_error;
use crate::js::ffi::{HostBytes, TaskBytes, TaskRef};
use crate::js::state::process;
use crate::memory::allocation::owning_allocation;
use crate::memory::registration::Registration;
use crate::memory::usm::UsmMemory;
use crate::runtime::{ReadBytes, WriteBytes};

/// Where the host bytes of a copy are while the worker runs.
pub(crate) enum HostSide {
    /// JS memory the worker may use directly (held by `bytes`: the SharedArrayBuffer, or
    /// USM memory of ours under it), and `registration`, the registration it may use
    /// (held until the task is done, so an `unregister()` meanwhile lets go of the memory
    /// only after the copy).
    Direct { bytes: TaskBytes, registration: Option<Arc<Registration>> },
    /// The task's own copy of a plain `ArrayBuffer`'s bytes (`None` until the worker
    /// makes it, for a destination).
    Bounce(Option<Scratch>),
}

impl HostSide {
    /// Decided when the pointer is taken, with no JS run in between.
    fn direct(env: &Env, bytes: &HostBytes) -> napi::Result<Option<HostSide>> {
        let pinned = owning_allocation(process().pool(), bytes.address(), bytes.byte_length() as u64)
            .and_then(|allocation| TaskBytes::of_allocation(bytes, allocation));
        let task_bytes = match pinned {
            Some(pinned) => Some(pinned),
            None => TaskBytes::of_shared(env, bytes)?,
        };
        let Some(task_bytes) = task_bytes else { return Ok(None) };
        let registration = crate::js::registration::vouched(env, bytes)?;
        Ok(Some(HostSide::Direct { bytes: task_bytes, registration }))
    }

    /// The destination of `copyToHostAsync`.
    pub(crate) fn destination(env: &Env, bytes: &HostBytes) -> napi::Result<HostSide> {
        Ok(HostSide::direct(env, bytes)?.unwrap_or(HostSide::Bounce(None)))
    }

    /// The source of `copyFromHostAsync`: a plain `ArrayBuffer` is copied now.
    pub(crate) fn source(env: &Env, bytes: &HostBytes) -> napi::Result<HostSide> {
        if let Some(direct) = HostSide::direct(env, bytes)? {
            return Ok(direct);
        }
        let copy = bytes
            .with_bytes(|src| Scratch::copy_of(&process().host_copies().scratch, src.as_read()))
            .ok_or_else(|| to_js_error(env, MemoryError::HostAllocation { nbytes: bytes.byte_length() as u64 }))?;
        Ok(HostSide::Bounce(Some(copy)))
    }
}

/// What one asynchronous task does, with the memory it holds until it settles.
pub(crate) enum Operation {
    ToHost { memory: UsmMemory, host: HostSide },
    FromHost { memory: UsmMemory, host: HostSide },
    FromDevice { memory: UsmMemory, source: UsmMemory },
    Memset { memory: UsmMemory, value: u8 },
}

/// The task behind each async method: `compute` runs on libuv's thread pool, `resolve`
/// and `finally` on the JS thread.
pub struct UsmTask {
    operation: Operation,
    /// `copyToHostAsync`'s destination, written when the task settles (bounce copies).
    result: Option<TaskRef>,
}

impl UsmTask {
    /// `result` is the JS destination of a bounce copy (`None` for the other operations).
    pub(crate) fn new(operation: Operation, result: Option<TaskRef>) -> Self {
        UsmTask { operation, result }
    }
}

/// The task's own buffer for a destination, made and filled on the worker.
fn bounce_into(memory: &UsmMemory, staging: &mut Option<Scratch>) -> Result<(), MemoryError> {
    let scratch = staging.insert(Scratch::for_copy(&process().host_copies().scratch, memory.nbytes())?);
    memory.copy_to_host(process().host_copies(), WriteBytes::of_slice(scratch))
}

impl<'task> ScopedTask<'task> for UsmTask {
    type Output = Result<(), MemoryError>;
    type JsValue = Unknown<'task>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(match &mut self.operation {
            Operation::ToHost { memory, host: HostSide::Direct { bytes, registration, .. } } => {
                bytes.with_bytes(|dst| memory.copy_to_host_via(process().host_copies(), dst, registration.as_deref()))
            }
            Operation::ToHost { memory, host: HostSide::Bounce(staging) } => bounce_into(memory, staging),
            Operation::FromHost { memory, host: HostSide::Direct { bytes, registration, .. } } => {
                bytes.with_bytes(|src| {
                    memory.copy_from_host_via(process().host_copies(), src.as_read(), registration.as_deref())
                })
            }
            Operation::FromHost { memory, host: HostSide::Bounce(Some(copy)) } => {
                memory.copy_from_host(process().host_copies(), ReadBytes::of_slice(copy))
            }
            Operation::FromHost { host: HostSide::Bounce(None), .. } => Ok(()),
            Operation::FromDevice { memory, source } => memory.copy_from_device(process().host_copies(), source),
            Operation::Memset { memory, value } => memory.memset(*value),
        })
    }

    fn resolve(&mut self, env: &'task Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        output.map_err(|err| to_js_error(env, err))?;
        if let (Operation::ToHost { host: HostSide::Bounce(Some(staging)), .. }, Some(result)) =
            (&self.operation, &self.result)
        {
            // The destination may have been detached, transferred or shrunk meanwhile:
            // look at it afresh before writing.
            let target = result.get(env)?;
            let fits = crate::js::ffi::host_bytes(env, &target)?.filter(|bytes| bytes.byte_length() >= staging.len());
            let Some(bytes) = fits else {
                return Err(to_js_error(env, MemoryError::DestinationShrunk { nbytes: staging.len() as u64 }));
            };
            bytes.with_bytes(|dst| crate::host::host_memcpy_parallel(dst, ReadBytes::of_slice(staging)));
        }
        ().into_unknown(env)
    }

    fn finally(self, _env: Env) -> napi::Result<()> {
        drop(self.result);
        Ok(())
    }
}
