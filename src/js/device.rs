//! `SyclDevice`, `SyclContext`, `SyclQueue` and `getDevices`: the subset of dpctl's
//! device model that memory needs.

use std::sync::Arc;

use napi::bindgen_prelude::{ClassInstance, JavaScriptClassExt, This, Unknown};
use napi::{Env, JsValue, ValueType};
use napi_derive::napi;

use crate::error::MemoryError;
use crate::js::errors::OrThrow;
use crate::js::ffi::{class_instance, ensure_constructed, JsRef};
use crate::js::values::{optional, string_arg, type_name};
use crate::memory::registry::registry;
use crate::provider::{Context, Device, Queue};

/// A SYCL device: a CPU or GPU that USM memory can live on.
#[napi]
pub struct SyclDevice {
    pub(crate) device: Arc<dyn Device>,
}

#[napi]
impl SyclDevice {
    /// Selects a device by SYCL filter string (`backend:type:index`, every part optional:
    /// `'cpu'`, `'gpu'`, `'opencl:cpu:0'`, `'cuda:gpu:1'`), or the default device (a GPU
    /// if there is one). Throws `SyclDeviceCreationError` when nothing matches.
    #[napi(constructor, ts_args_type = "filter?: string")]
    pub fn new(env: Env, this: This<Unknown>, filter: Option<Unknown>) -> napi::Result<Self> {
        ensure_constructed::<SyclDevice>(&env, &this, "SyclDevice")?;
        let filter = optional(filter)?.map(|v| string_arg(&env, v, "filter")).transpose()?;
        let device = registry().select(filter.as_deref()).or_throw(&env)?;
        Ok(SyclDevice { device })
    }

    /// The device's name, e.g. `'NVIDIA H200'`.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.device.info().name.clone()
    }

    #[napi(getter)]
    pub fn vendor(&self) -> String {
        self.device.info().vendor.clone()
    }

    /// The backend as filter strings write it: `'opencl'`, `'level_zero'`, `'cuda'`, ...
    #[napi(getter)]
    pub fn backend(&self) -> String {
        self.device.info().backend.clone()
    }

    /// `'cpu'`, `'gpu'`, `'accelerator'`, `'custom'` or `'unknown'`.
    #[napi(getter)]
    pub fn device_type(&self) -> String {
        self.device.info().device_type.name().to_string()
    }

    /// The filter string that selects exactly this device, e.g. `'opencl:cpu:0'`.
    #[napi(getter)]
    pub fn filter_string(&self) -> String {
        registry().filter_string_of(self.device.as_ref())
    }

    #[napi(getter)]
    pub fn driver_version(&self) -> String {
        self.device.info().driver_version.clone()
    }

    /// Global memory in bytes.
    #[napi(getter)]
    pub fn global_mem_size(&self) -> f64 {
        self.device.info().global_mem_size as f64
    }

    /// The largest single allocation in bytes.
    #[napi(getter)]
    pub fn max_mem_alloc_size(&self) -> f64 {
        self.device.info().max_mem_alloc_size as f64
    }

    /// Whether the device has a SYCL aspect, e.g. `'usm_shared_allocations'`, `'fp64'`.
    #[napi(ts_args_type = "name: string")]
    pub fn has_aspect(&self, env: Env, name: Unknown) -> napi::Result<bool> {
        let name = string_arg(&env, name, "aspect name")?;
        Ok(self.device.info().aspects.contains(&name))
    }

    /// The names of every aspect the device has.
    #[napi(getter)]
    pub fn aspects(&self) -> Vec<String> {
        self.device.info().aspects.clone()
    }

    /// Whether `other` is the same device.
    #[napi(ts_args_type = "other: SyclDevice")]
    pub fn equals(&self, env: Env, other: Unknown) -> napi::Result<bool> {
        let other = same_class_arg::<SyclDevice>(&env, &other, "SyclDevice")?;
        Ok(self.device.same_device(other.device.as_ref()))
    }

    #[napi]
    #[allow(clippy::inherent_to_string)]
    pub fn to_string(&self) -> String {
        let info = self.device.info();
        format!("<SyclDevice {} '{}'>", registry().filter_string_of(self.device.as_ref()), info.name)
    }
}

/// Every device that dpctl-memory can use, or those matching a filter string. Empty
/// (never an error) when no runtime is installed.
#[napi(ts_args_type = "filter?: string")]
pub fn get_devices(env: Env, filter: Option<Unknown>) -> napi::Result<Vec<SyclDevice>> {
    let filter = optional(filter)?.map(|v| string_arg(&env, v, "filter")).transpose()?;
    let all = registry().devices();
    let devices = match filter {
        None => all.iter().map(|e| SyclDevice { device: e.device.clone() }).collect(),
        Some(text) => {
            let parsed = crate::memory::filter::parse_filter(&text).or_throw(&env)?;
            if parsed.index.is_some() {
                // An index names one device.
                registry().select(Some(&text)).into_iter().map(|device| SyclDevice { device }).collect()
            } else {
                all.iter()
                    .filter(|e| parsed.matches(&e.device.info().backend, e.device.info().device_type))
                    .map(|e| SyclDevice { device: e.device.clone() })
                    .collect()
            }
        }
    };
    Ok(devices)
}

/// Why no device is available from each runtime that did not load (empty when all did).
#[napi]
pub fn get_runtime_diagnostics() -> Vec<String> {
    registry().unavailable().to_vec()
}

/// A SYCL context: the scope in which USM pointers are valid.
#[napi]
pub struct SyclContext {
    pub(crate) context: Arc<dyn Context>,
}

#[napi]
impl SyclContext {
    /// With no argument, the default context of the default device (the one default
    /// queues use). With a `SyclDevice` or filter string, a new context of its own for
    /// that device, as dpctl's `SyclContext(device)`.
    #[napi(constructor, ts_args_type = "device?: SyclDevice | string")]
    pub fn new(env: Env, this: This<Unknown>, device: Option<Unknown>) -> napi::Result<Self> {
        ensure_constructed::<SyclContext>(&env, &this, "SyclContext")?;
        let context = match optional(device)? {
            None => {
                let device = registry().select(None).or_throw(&env)?;
                device.default_context().or_throw(&env)?
            }
            Some(value) => device_arg(&env, value)?.create_context().or_throw(&env)?,
        };
        Ok(SyclContext { context })
    }

    /// The devices of this context.
    #[napi(getter)]
    pub fn devices(&self) -> Vec<SyclDevice> {
        self.context.devices().into_iter().map(|device| SyclDevice { device }).collect()
    }

    /// Whether `other` is the same context.
    #[napi(ts_args_type = "other: SyclContext")]
    pub fn equals(&self, env: Env, other: Unknown) -> napi::Result<bool> {
        let other = same_class_arg::<SyclContext>(&env, &other, "SyclContext")?;
        Ok(self.context.same_context(other.context.as_ref()))
    }

    #[napi]
    #[allow(clippy::inherent_to_string)]
    pub fn to_string(&self) -> String {
        let names: Vec<String> =
            self.context.devices().iter().map(|d| registry().filter_string_of(d.as_ref())).collect();
        format!("<SyclContext for {}>", names.join(", "))
    }
}

/// A SYCL queue: where copies and fills run, and the handle allocations are made through.
#[napi]
pub struct SyclQueue {
    pub(crate) queue: Arc<dyn Queue>,
}

#[napi]
impl SyclQueue {
    /// `new SyclQueue()`: the default device. `new SyclQueue('gpu')` or
    /// `new SyclQueue(device)`: that device, in its default context.
    /// `new SyclQueue(context, device?)`: in that context (on its first device if none is
    /// given). Throws `SyclQueueCreationError` when no device matches or no runtime is
    /// installed.
    #[napi(constructor, ts_args_type = "target?: string | SyclDevice | SyclContext, device?: SyclDevice")]
    pub fn new(env: Env, this: This<Unknown>, target: Option<Unknown>, device: Option<Unknown>) -> napi::Result<Self> {
        ensure_constructed::<SyclQueue>(&env, &this, "SyclQueue")?;
        let queue = make_queue(&env, optional(target)?, optional(device)?)?;
        Ok(SyclQueue { queue })
    }

    #[napi(getter)]
    pub fn sycl_device(&self) -> SyclDevice {
        SyclDevice { device: self.queue.device() }
    }

    #[napi(getter)]
    pub fn sycl_context(&self) -> SyclContext {
        SyclContext { context: self.queue.context() }
    }

    /// Waits for everything submitted to the queue.
    #[napi]
    pub fn wait(&self, env: Env) -> napi::Result<()> {
        self.queue.wait().or_throw(&env)
    }

    /// Whether `other` is the same queue.
    #[napi(ts_args_type = "other: SyclQueue")]
    pub fn equals(&self, env: Env, other: Unknown) -> napi::Result<bool> {
        let other = same_class_arg::<SyclQueue>(&env, &other, "SyclQueue")?;
        Ok(Arc::ptr_eq(&self.queue, &other.queue))
    }

    #[napi]
    #[allow(clippy::inherent_to_string)]
    pub fn to_string(&self) -> String {
        format!("<SyclQueue on {}>", registry().filter_string_of(self.queue.device().as_ref()))
    }
}

fn make_queue(env: &Env, target: Option<Unknown>, device: Option<Unknown>) -> napi::Result<Arc<dyn Queue>> {
    let context = match &target {
        Some(value) => class_instance::<SyclContext>(env, value)?.map(|c| c.context.clone()),
        None => None,
    };
    if device.is_some() && context.is_none() {
        return Err(MemoryError::InvalidArgType(
            "a device may follow only a SyclContext: new SyclQueue(context, device)".into(),
        ))
        .or_throw(env);
    }
    let made = match (context, target) {
        (Some(context), _) => {
            let device = match device {
                Some(value) => device_lookup(env, value)?,
                None => context.devices().into_iter().next().ok_or_else(|| {
                    MemoryError::QueueCreation("the context has no devices".into())
                }),
            };
            device.and_then(|device| context.create_queue(&device))
        }
        (None, None) => registry().select(None).and_then(|device| device.default_context()?.create_queue(&device)),
        (None, Some(value)) => device_lookup(env, value)?
            .and_then(|device| device.default_context()?.create_queue(&device)),
    };
    made.map_err(MemoryError::into_queue_creation).or_throw(env)
}

/// An instance of `T`, else `ERR_INVALID_ARG_TYPE`.
fn same_class_arg<'env, T>(env: &Env, value: &Unknown<'env>, class: &str) -> napi::Result<ClassInstance<'env, T>>
where
    T: JavaScriptClassExt + napi::bindgen_prelude::MaybeTypeTag + 'static,
{
    match class_instance::<T>(env, value)? {
        Some(instance) => Ok(instance),
        None => Err(MemoryError::InvalidArgType(format!("expected a {class}, got {}", type_name(value)))).or_throw(env),
    }
}

/// A `SyclDevice` or a filter string: the device, or why there is none (`Err` inside,
/// so that callers choose the error class). Other types are a `TypeError` at once.
fn device_lookup(env: &Env, value: Unknown) -> napi::Result<Result<Arc<dyn Device>, MemoryError>> {
    if let Some(device) = class_instance::<SyclDevice>(env, &value)? {
        return Ok(Ok(device.device.clone()));
    }
    if value.get_type()? == ValueType::String {
        let text = string_arg(env, value, "device")?;
        return Ok(registry().select(Some(&text)));
    }
    Err(MemoryError::InvalidArgType("expected a SyclDevice or a filter string".into())).or_throw(env)
}

/// A `SyclDevice` or a filter string.
pub(crate) fn device_arg(env: &Env, value: Unknown) -> napi::Result<Arc<dyn Device>> {
    device_lookup(env, value)?.or_throw(env)
}

/// The JS object of the cached queue of `device` (the default device when `None`).
pub(crate) fn cached_queue_object<'env>(env: &'env Env, device: Option<&Arc<dyn Device>>) -> napi::Result<(Arc<dyn Queue>, Unknown<'env>)> {
    let device = match device {
        Some(device) => device.clone(),
        None => registry().select(None).map_err(MemoryError::into_queue_creation).or_throw(env)?,
    };
    let key = registry().filter_string_of(device.as_ref());
    // One `SyclQueue` object per device for default allocations, so that every allocation
    // made without a queue shows the same `syclQueue` (dpctl's cached queue).
    let cache = &crate::js::state::state(env)?.cached_queues;
    let existing = cache.borrow().get(&key).map(|r| r.get(env)).transpose()?;
    if let Some(object) = existing {
        if let Some(queue) = class_instance::<SyclQueue>(env, &object)? {
            return Ok((queue.queue.clone(), object));
        }
    }
    let queue = registry().cached_queue(&device).map_err(MemoryError::into_queue_creation).or_throw(env)?;
    let instance: ClassInstance<SyclQueue> = SyclQueue { queue: queue.clone() }.into_instance(env)?;
    let object = instance.as_object(env).to_unknown();
    let reference = JsRef::new(&object)?;
    cache.borrow_mut().insert(key, reference);
    Ok((queue, object))
}
