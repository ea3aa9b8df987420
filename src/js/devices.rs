//! Devices, contexts and queues (`lib/device.js`): listing and selecting devices, their
//! facts, contexts, queues, and why a runtime gave no device.

use std::sync::Arc;

use napi::bindgen_prelude::Float64Array;
use napi::Env;
use napi_derive::napi;

use crate::error::MemoryError;
use crate::js::errors::OrThrow;
use crate::js::json;
use crate::js::lookup::lookup;
use crate::js::state::registry;
use crate::memory::registry::DeviceChoice;
use crate::runtime::program::SourceLanguage;
use crate::runtime::Device;

/// Device handles as a `Float64Array` (whose elements no prototype setter can touch).
fn device_array(env: &Env, devices: Vec<Arc<dyn Device>>) -> napi::Result<Float64Array> {
    let ids = lookup(env, |h| devices.into_iter().map(|device| h.add_device(device)).collect())?;
    Ok(Float64Array::new(ids))
}

/// Handles of the devices `getDevices(filter)` lists.
#[napi]
pub fn device_list(env: &Env, filter: Option<String>) -> napi::Result<Float64Array> {
    let devices = registry().matching(filter.as_deref()).or_throw(env)?;
    device_array(env, devices)
}

/// The device a filter string selects (the default device without one).
#[napi]
pub fn device_select(env: &Env, filter: Option<String>) -> napi::Result<f64> {
    let device = registry().select(filter.as_deref()).map_err(MemoryError::into_device_creation).or_throw(env)?;
    lookup(env, |h| h.add_device(device))
}

/// What never changes about a device, as JSON: `{ name, vendor, backend, deviceType,
/// driverVersion, filterString, globalMemSize, maxMemAllocSize, localMemSize, aspects }`.
#[napi]
pub fn device_facts(env: &Env, device_id: f64) -> napi::Result<String> {
    let device = lookup(env, |h| h.device(device_id))?;
    let info = device.info();
    Ok(json::object(&[
        ("name", json::string(&info.name)),
        ("vendor", json::string(&info.vendor)),
        ("backend", json::string(&info.backend)),
        ("deviceType", json::string(info.device_type.name())),
        ("driverVersion", json::string(&info.driver_version)),
        ("filterString", json::string(&registry().filter_string_of(device.as_ref()))),
        ("globalMemSize", json::number(info.global_mem_size as f64)),
        ("maxMemAllocSize", json::number(info.max_mem_alloc_size as f64)),
        ("localMemSize", json::number(info.local_mem_size as f64)),
        ("aspects", json::array(info.aspects.iter().map(|a| json::string(a)))),
    ]))
}

/// Whether two device handles name the same device (`SyclDevice` equality).
#[napi]
pub fn device_equals(env: &Env, a: f64, b: f64) -> napi::Result<bool> {
    let (a, b) = lookup(env, |h| Ok((h.device(a)?, h.device(b)?)))?;
    Ok(a.same_device(b.as_ref()))
}

/// Whether programs of `language` (`'opencl'`, `'spirv'`, `'sycl'`, `'ptx'`, `'cuda'`, or
/// dpctl's short forms) build for the device here (`ERR_INVALID_ARG_VALUE` for another).
#[napi]
pub fn device_can_compile(env: &Env, device_id: f64, language: String) -> napi::Result<bool> {
    let language = SourceLanguage::parse(&language).or_throw(env)?;
    Ok(lookup(env, |h| h.device(device_id))?.can_compile(language))
}

/// The context every default queue of the device shares.
#[napi]
pub fn device_default_context(env: &Env, device_id: f64) -> napi::Result<f64> {
    let context = lookup(env, |h| h.device(device_id))?.default_context().or_throw(env)?;
    lookup(env, |h| h.add_context(context))
}

/// A new context of its own for the device (`new SyclContext(device)`).
#[napi]
pub fn device_create_context(env: &Env, device_id: f64) -> napi::Result<f64> {
    let context = lookup(env, |h| h.device(device_id))?.create_context().or_throw(env)?;
    lookup(env, |h| h.add_context(context))
}

/// Bytes of memory free now on the device, where its runtime can tell (CUDA:
/// `cuMemGetInfo`), else `null`: what the IPC tests and the bench compare with a baseline.
#[napi]
pub fn device_free_memory(env: &Env, device_id: f64) -> napi::Result<Option<f64>> {
    let context = lookup(env, |h| h.device(device_id))?.default_context().or_throw(env)?;
    Ok(context.free_memory().map(|bytes| bytes as f64))
}

/// The default context of the default device (`new SyclContext()`).
#[napi]
pub fn context_default(env: &Env) -> napi::Result<f64> {
    let device = registry().select(None).or_throw(env)?;
    let context = device.default_context().or_throw(env)?;
    lookup(env, |h| h.add_context(context))
}

/// Handles of the devices of a context.
#[napi]
pub fn context_devices(env: &Env, context_id: f64) -> napi::Result<Float64Array> {
    let devices = lookup(env, |h| h.context(context_id))?.devices();
    device_array(env, devices)
}

/// Whether two context handles name the same context.
#[napi]
pub fn context_equals(env: &Env, a: f64, b: f64) -> napi::Result<bool> {
    let (a, b) = lookup(env, |h| Ok((h.context(a)?, h.context(b)?)))?;
    Ok(a.same_context(b.as_ref()))
}

/// `new SyclQueue(...)`: in the context `context_id` if given, on the device `device_id`
/// or the device `filter` names, else on the default device (or the context's first).
#[napi]
pub fn queue_create(
    env: &Env,
    context_id: Option<f64>,
    device_id: Option<f64>,
    filter: Option<String>,
) -> napi::Result<f64> {
    let (context, choice) = lookup(env, |h| {
        let context = context_id.map(|id| h.context(id)).transpose()?;
        let choice = match (device_id, filter) {
            (Some(id), _) => DeviceChoice::Device(h.device(id)?),
            (None, Some(text)) => DeviceChoice::Filter(text),
            (None, None) => DeviceChoice::Default,
        };
        Ok((context, choice))
    })?;
    let queue = registry().make_queue(context, choice).or_throw(env)?;
    lookup(env, |h| h.add_queue(queue))
}

/// The cached queue of a device (the default device without one): the queue every
/// allocation made without a queue uses.
#[napi]
pub fn queue_cached(env: &Env, device_id: Option<f64>) -> napi::Result<f64> {
    let device = match device_id {
        Some(id) => lookup(env, |h| h.device(id))?,
        None => registry().select(None).map_err(MemoryError::into_queue_creation).or_throw(env)?,
    };
    let queue = registry().cached_queue(&device).map_err(MemoryError::into_queue_creation).or_throw(env)?;
    lookup(env, |h| h.add_queue(queue))
}

/// The device of a queue.
#[napi]
pub fn queue_device(env: &Env, queue_id: f64) -> napi::Result<f64> {
    lookup(env, |h| {
        let device = h.queue(queue_id)?.device();
        h.add_device(device)
    })
}

/// The context of a queue.
#[napi]
pub fn queue_context(env: &Env, queue_id: f64) -> napi::Result<f64> {
    lookup(env, |h| {
        let context = h.queue(queue_id)?.context();
        h.add_context(context)
    })
}

/// Whether two queue handles name the same queue.
#[napi]
pub fn queue_equals(env: &Env, a: f64, b: f64) -> napi::Result<bool> {
    lookup(env, |h| Ok(Arc::ptr_eq(&h.queue(a)?, &h.queue(b)?)))
}

/// Waits for the queue's work, reporting its asynchronous errors.
#[napi]
pub fn queue_wait(env: &Env, queue_id: f64) -> napi::Result<()> {
    lookup(env, |h| h.queue(queue_id))?.wait().or_throw(env)
}

/// Why no device is available from each runtime that did not load (empty when all
/// did), as a JSON array of strings.
#[napi]
pub fn runtime_diagnostics() -> String {
    json::array(registry().unavailable().iter().map(|line| json::string(line)))
}
