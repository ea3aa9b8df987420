//! The binding of programs, kernels, submissions, events and the queue's own operations
//! (`lib/program.js` owns the classes). Conversion only: the checks are the model's
//! (`crate::memory::program`).
//!
//! A submission's arguments cross as two typed arrays the JS layer fills: `spec`, three
//! numbers per argument (`kind`: 1 scalar, 2 local memory, 3 memory, 0 never; `value`: the
//! memory handle, or the local bytes; `scalar`: the `ScalarType` index), and `bits`, two
//! `u32` per argument (the scalar's bits, low word first); `model::decode_arguments` reads
//! them.

use std::cell::Cell;
use std::sync::Arc;

use napi::bindgen_prelude::{JsValue, Unknown};
use napi::Env;
use napi_derive::napi;

use crate::error::MemoryError;
use crate::js::errors::{to_js_error, OrThrow};
use crate::js::ffi::JsRef;
use crate::js::json;
use crate::js::lookup::{handles, lookup};
use crate::js::memory::host_bytes;
use crate::js::program_handles::EventEntry;
use crate::js::state::{registry, state};
use crate::memory::program::{self as model, KernelArgument, Pending, Submission};
use crate::memory::registry::DeviceChoice;
use crate::runtime::program::{Built, Event, Kernel, Program, ProgramSource};

/// A copy of a host buffer's bytes (read while no JS runs).
fn copy_of(host: &crate::js::ffi::HostBytes) -> Vec<u8> {
    let mut out = vec![0u8; host.byte_length()];
    host.with_bytes(|src| crate::host::host_memcpy(crate::runtime::WriteBytes::of_slice(&mut out), src.as_read()));
    out
}

fn stale(what: &str) -> MemoryError {
    MemoryError::StaleHandle { what: what.into() }
}

fn queue(env: &Env, id: f64) -> napi::Result<Arc<dyn crate::runtime::Queue>> {
    lookup(env, |h| h.queue(id))
}

fn live_memory(env: &Env, id: f64) -> napi::Result<crate::memory::usm::UsmMemory> {
    lookup(env, |h| h.memory(id))
}

fn full() -> MemoryError {
    MemoryError::TooManyObjects
}

fn program(env: &Env, id: f64) -> napi::Result<Arc<dyn Program>> {
    handles(env)?.kernels.programs.get(id).cloned().ok_or_else(|| stale("program")).or_throw(env)
}

fn kernel(env: &Env, id: f64) -> napi::Result<Arc<dyn Kernel>> {
    handles(env)?.kernels.kernels.get(id).cloned().ok_or_else(|| stale("kernel")).or_throw(env)
}

fn event(env: &Env, id: f64) -> napi::Result<Arc<dyn Event>> {
    handles(env)?.kernels.events.get(id).map(|e| Arc::clone(&e.event)).ok_or_else(|| stale("event")).or_throw(env)
}

fn insert_event(env: &Env, event: Arc<dyn Event>, promise: Option<JsRef>) -> napi::Result<f64> {
    handles(env)?
        .kernels
        .events
        .insert(EventEntry { event, promise: Cell::new(promise) })
        .ok_or_else(full)
        .or_throw(env)
}

fn events(env: &Env, ids: &[f64]) -> napi::Result<Vec<Arc<dyn Event>>> {
    ids.iter().map(|&id| event(env, id)).collect()
}

/// Gives back a handle of a collected object: `kind` 0 program, 1 kernel, 2 event.
#[napi]
pub fn kernels_release(env: &Env, kind: u32, id: f64) -> napi::Result<()> {
    let mut handles = handles(env)?;
    match kind {
        0 => drop(handles.kernels.programs.remove(id)),
        1 => drop(handles.kernels.kernels.remove(id)),
        _ => drop(handles.kernels.events.remove(id)),
    }
    Ok(())
}

/// `new SyclQueue(..., { property })`: as `queueCreate`, with dpctl's property names.
#[napi]
pub fn queue_create_with(
    env: &Env,
    context_id: Option<f64>,
    device_id: Option<f64>,
    filter: Option<String>,
    properties: Vec<String>,
) -> napi::Result<f64> {
    let properties = model::queue_properties(&properties).or_throw(env)?;
    let context = context_id.map(|id| lookup(env, |h| h.context(id))).transpose()?;
    let choice = match (device_id, filter) {
        (Some(id), _) => DeviceChoice::Device(lookup(env, |h| h.device(id))?),
        (None, Some(text)) => DeviceChoice::Filter(text),
        (None, None) => DeviceChoice::Default,
    };
    let made = registry().make_queue_with(context, choice, properties).or_throw(env)?;
    lookup(env, |h| h.add_queue(made))
}

/// `(in order ? 1 : 0) | (profiling ? 2 : 0)` of a queue.
#[napi]
pub fn queue_property_flags(env: &Env, queue_id: f64) -> napi::Result<u32> {
    let properties = queue(env, queue_id)?.properties();
    Ok(u32::from(properties.in_order) | (u32::from(properties.enable_profiling) << 1))
}

/// Builds a program for the queue's device: `format` 1 OpenCL C, 2 SPIR-V, 3 PTX, 4 CUDA
/// C; `source` a string or host bytes. JSON: `{ id, log, names }`, or `{ failed, log }`
/// for a build failure (the JS layer throws `SyclProgramCompilationError`).
#[napi]
pub fn program_build(env: &Env, queue_id: f64, format: u32, source: Unknown, options: String) -> napi::Result<String> {
    let queue = queue(env, queue_id)?;
    let text;
    let bytes;
    let source = match format {
        1 | 3 | 4 => {
            text = source.coerce_to_string()?.into_utf8()?.into_owned()?;
            match format {
                1 => ProgramSource::OpenClC(&text),
                3 => ProgramSource::Ptx(&text),
                _ => ProgramSource::CudaC(&text),
            }
        }
        _ => {
            bytes = copy_of(&host_bytes(env, &source, "bytes")?);
            ProgramSource::SpirV(&bytes)
        }
    };
    built_json(env, model::build(&queue, source, &options).or_throw(env)?)
}

/// Builds SYCL source for the queue's device, with compiler arguments (one each), virtual
/// include files (`header_names[i]`, `header_contents[i]`) and name expressions to
/// register. JSON as `program_build`'s.
#[napi]
pub fn program_build_sycl(
    env: &Env,
    queue_id: f64,
    source: String,
    options: Vec<String>,
    header_names: Vec<String>,
    header_contents: Vec<String>,
    registered: Vec<String>,
) -> napi::Result<String> {
    let queue = queue(env, queue_id)?;
    let headers: Vec<(String, String)> = header_names.into_iter().zip(header_contents).collect();
    let source = ProgramSource::Sycl { text: &source, headers: &headers, registered: &registered, flags: &options };
    built_json(env, model::build(&queue, source, "").or_throw(env)?)
}

/// A build's outcome as the JS layer reads it: `{ id, log, names }`, or `{ failed, log }`.
fn built_json(env: &Env, built: Built) -> napi::Result<String> {
    match built {
        Ok((built, log)) => {
            let names = built.kernel_names();
            let id = handles(env)?.kernels.programs.insert(built).ok_or_else(full).or_throw(env)?;
            Ok(json::object(&[
                ("id", json::number(id)),
                ("log", json::string(&log)),
                ("names", json::array(names.iter().map(|n| json::string(n)))),
            ]))
        }
        Err(failure) => {
            Ok(json::object(&[("failed", json::string(&failure.summary)), ("log", json::string(&failure.log))]))
        }
    }
}

/// The kernel `name` of a program (`ERR_KERNEL_NOT_FOUND` when it has none).
#[napi]
pub fn program_kernel(env: &Env, program_id: f64, name: String) -> napi::Result<f64> {
    let program = program(env, program_id)?;
    let made = model::kernel(program.as_ref(), &name).or_throw(env)?;
    handles(env)?.kernels.kernels.insert(made).ok_or_else(full).or_throw(env)
}

/// Whether the program has a kernel `name`.
#[napi]
pub fn program_has_kernel(env: &Env, program_id: f64, name: String) -> napi::Result<bool> {
    let program = program(env, program_id)?;
    Ok(program.kernel(&name).or_throw(env)?.is_some())
}

/// What the runtime says of a kernel, as JSON.
#[napi]
pub fn kernel_facts(env: &Env, kernel_id: f64) -> napi::Result<String> {
    let kernel = kernel(env, kernel_id)?;
    let info = kernel.info();
    let kind = |k| match k {
        crate::runtime::program::ArgKind::Global => "global",
        crate::runtime::program::ArgKind::Local => "local",
        crate::runtime::program::ArgKind::Value => "value",
        crate::runtime::program::ArgKind::Unknown => "unknown",
    };
    Ok(json::object(&[
        ("functionName", json::string(&info.function_name)),
        ("numArgs", json::number(f64::from(info.num_args))),
        ("workGroupSize", json::number(info.work_group_size as f64)),
        ("preferredWorkGroupSizeMultiple", json::number(info.preferred_work_group_size_multiple as f64)),
        ("privateMemSize", json::number(info.private_mem_size as f64)),
        ("localMemSize", json::number(info.local_mem_size as f64)),
        ("compileWorkGroupSize", json::array(info.compile_work_group_size.iter().map(|&n| json::number(n as f64)))),
        (
            "args",
            json::array(info.args.iter().map(|a| {
                json::object(&[("kind", json::string(kind(a.kind))), ("typeName", json::string(&a.type_name))])
            })),
        ),
    ]))
}

fn arguments(env: &Env, kernel: &str, spec: &[f64], bits: &[u32]) -> napi::Result<Vec<KernelArgument>> {
    let handles = handles(env)?;
    model::decode_arguments(kernel, spec, bits, |id| handles.memory(id)).or_throw(env)
}

/// This environment's unfinished submissions (its state's; its teardown waits for them).
fn pending(env: &Env) -> napi::Result<Arc<Pending>> {
    Ok(Arc::clone(&state(env)?.pending))
}

/// Settles an asynchronous submission: a Promise (kept with the event for the JS layer to
/// take) that resolves once the work is done and its operands are let go.
fn settle_later(env: &Env, submission: Submission) -> napi::Result<f64> {
    let prepared = pending(env).and_then(|pending| {
        let (deferred, promise) = env.create_deferred::<(), _>()?;
        Ok((pending, deferred, JsRef::new(&promise.to_unknown())?))
    });
    let (pending, deferred, reference) = match prepared {
        Ok(parts) => parts,
        Err(error) => {
            // The work is queued already: its operands stay held until it is done.
            let _ = submission.wait();
            return Err(error);
        }
    };
    let event = submission.when_done(crate::js::state::process().completions(), &pending, move |result| {
        deferred.resolve(move |env| result.map_err(|err| to_js_error(&env, err)));
    });
    insert_event(env, event, Some(reference))
}

/// The id of a completed synchronous operation whose event the model did not keep: the JS
/// layer makes a completed `SyclEvent` without a native event.
const COMPLETED_WITHOUT_EVENT: f64 = -1.0;

/// The handle of a finished synchronous operation's event, if the model kept it.
fn sync_event(env: &Env, kept: Option<Arc<dyn Event>>) -> napi::Result<f64> {
    match kept {
        Some(event) => insert_event(env, event, None),
        None => Ok(COMPLETED_WITHOUT_EVENT),
    }
}

fn finish(
    env: &Env,
    queue: &Arc<dyn crate::runtime::Queue>,
    submission: Submission,
    asynchronous: bool,
) -> napi::Result<f64> {
    if asynchronous {
        return settle_later(env, submission);
    }
    sync_event(env, submission.wait_sync(queue).or_throw(env)?)
}

/// `queue.submit` (waits) and `queue.submitAsync`: the event handle (an asynchronous
/// one's Promise: `eventTakePromise`).
#[napi]
#[allow(clippy::too_many_arguments)]
pub fn queue_submit(
    env: &Env,
    queue_id: f64,
    kernel_id: f64,
    spec: &[f64],
    bits: &[u32],
    global: &[f64],
    local: Option<&[f64]>,
    deps: &[f64],
    asynchronous: bool,
) -> napi::Result<f64> {
    let queue = queue(env, queue_id)?;
    let kernel = kernel(env, kernel_id)?;
    let global: Vec<u64> = global.iter().map(|&n| n as u64).collect();
    let local: Option<Vec<u64>> = local.map(|l| l.iter().map(|&n| n as u64).collect());
    let range = model::nd_range(Some(kernel.info()), &global, local.as_deref()).or_throw(env)?;
    let args = arguments(env, &kernel.info().function_name, spec, bits)?;
    let deps = events(env, deps)?;
    if !asynchronous {
        return sync_event(env, model::submit_sync(&queue, &kernel, &args, &range, &deps).or_throw(env)?);
    }
    let submission = model::submit(&queue, &kernel, &args, &range, &deps).or_throw(env)?;
    settle_later(env, submission)
}

/// `queue.memcpy(dst, src, nbytes)` / `memcpyAsync` between memory objects.
#[napi]
pub fn queue_memcpy(
    env: &Env,
    queue_id: f64,
    dst_id: f64,
    src_id: f64,
    nbytes: f64,
    deps: &[f64],
    asynchronous: bool,
) -> napi::Result<f64> {
    let queue = queue(env, queue_id)?;
    let (dst, src) = (live_memory(env, dst_id)?, live_memory(env, src_id)?);
    let deps = events(env, deps)?;
    let submission = model::memcpy_async(&queue, &dst, &src, nbytes as u64, &deps).or_throw(env)?;
    finish(env, &queue, submission, asynchronous)
}

/// `queue.fill(dst, pattern, count)` / `fillAsync` (and `memset`: a 1-byte pattern).
#[napi]
#[allow(clippy::too_many_arguments)]
pub fn queue_fill(
    env: &Env,
    queue_id: f64,
    dst_id: f64,
    pattern: Unknown,
    count: f64,
    deps: &[f64],
    asynchronous: bool,
) -> napi::Result<f64> {
    let queue = queue(env, queue_id)?;
    let dst = live_memory(env, dst_id)?;
    let pattern = copy_of(&host_bytes(env, &pattern, "pattern")?);
    let deps = events(env, deps)?;
    let submission = model::fill_async(&queue, &dst, &pattern, count as u64, &deps).or_throw(env)?;
    finish(env, &queue, submission, asynchronous)
}

/// `queue.submitBarrier(deps?)`: an event after `deps` (after everything so far when empty).
#[napi]
pub fn queue_barrier(env: &Env, queue_id: f64, deps: &[f64]) -> napi::Result<f64> {
    let queue = queue(env, queue_id)?;
    let deps = events(env, deps)?;
    let submission = model::barrier(&queue, &deps).or_throw(env)?;
    let event = Arc::clone(submission.event());
    insert_event(env, event, None)
}

/// `queue.writeValue(mem, value, { offset, dependsOn })`: `lo`/`hi` the value's words
/// (`wide`: 64 bits). The event is returned at once; the memory is held until the write
/// landed (this environment's `Pending` lets go of it at a later write that finds it
/// done, or waits for it at the environment's teardown: no callback, no Promise).
#[napi]
#[allow(clippy::too_many_arguments)]
pub fn queue_write_value(
    env: &Env,
    queue_id: f64,
    dst_id: f64,
    offset: f64,
    lo: u32,
    hi: u32,
    wide: bool,
    deps: &[f64],
) -> napi::Result<f64> {
    let queue = queue(env, queue_id)?;
    let dst = live_memory(env, dst_id)?;
    let deps = events(env, deps)?;
    let value = if wide {
        model::ProgressValue::U64(u64::from(hi) << 32 | u64::from(lo))
    } else {
        model::ProgressValue::U32(lo)
    };
    let submission = model::write_value(&queue, &dst, offset as u64, value, &deps).or_throw(env)?;
    let pending = match pending(env) {
        Ok(pending) => pending,
        Err(error) => {
            // The write is queued already: its memory stays held until it landed.
            let _ = submission.wait();
            return Err(error);
        }
    };
    let event = submission.hold_in(&pending);
    insert_event(env, event, None)
}

/// The Promise of an asynchronous submission's event, once (`undefined` after): the
/// event lets go of it here.
#[napi]
pub fn event_take_promise<'env>(env: &'env Env, event_id: f64) -> napi::Result<Option<Unknown<'env>>> {
    let reference = handles(env)?.kernels.events.get(event_id).and_then(|e| e.promise.take());
    match reference {
        Some(reference) => Ok(Some(reference.get(env)?)),
        None => Ok(None),
    }
}

/// Waits for the event's work.
#[napi]
pub fn event_wait(env: &Env, event_id: f64) -> napi::Result<()> {
    event(env, event_id)?.wait().or_throw(env)
}

/// `'submitted'`, `'running'` or `'complete'`.
#[napi]
pub fn event_status(env: &Env, event_id: f64) -> napi::Result<String> {
    Ok(event(env, event_id)?.status().or_throw(env)?.name().to_string())
}

/// `[submit, start, end]` nanoseconds as decimal strings (the JS layer makes BigInts).
#[napi]
pub fn event_profile(env: &Env, event_id: f64) -> napi::Result<Vec<String>> {
    let profile = event(env, event_id)?.profile().or_throw(env)?;
    Ok(vec![profile.submit.to_string(), profile.start.to_string(), profile.end.to_string()])
}
