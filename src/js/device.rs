//! `SyclDevice`, `SyclContext`, `SyclQueue` and `getDevices`: the subset of dpctl's
//! device model that memory needs.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use napi::bindgen_prelude::{ClassInstance, JavaScriptClassExt, This, Unknown};
use napi::{Env, JsValue, ValueType};
use napi_derive::napi;

use crate::error::MemoryError;
use crate::js::errors::OrThrow;
use crate::js::ffi::{class_instance, ensure_constructed, JsRef};
use crate::js::values::{optional, string_arg};
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
    #[napi]
    pub fn has_aspect(&self, name: String) -> bool {
        self.device.info().aspects.contains(&name)
    }

    /// The names of every aspect the device has.
    #[napi(getter)]
    pub fn aspects(&self) -> Vec<String> {
        self.device.info().aspects.clone()
    }

    /// Whether `other` is the same device.
    #[napi]
    pub fn equals(&self, other: &SyclDevice) -> bool {
        self.device.same_device(other.device.as_ref())
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
    #[napi]
    pub fn equals(&self, other: &SyclContext) -> bool {
        self.context.same_context(other.context.as_ref())
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
    #[napi]
    pub fn equals(&self, other: &SyclQueue) -> bool {
        Arc::ptr_eq(&self.queue, &other.queue)
    }

    #[napi]
    #[allow(clippy::inherent_to_string)]
    pub fn to_string(&self) -> String {
        format!("<SyclQueue on {}>", registry().filter_string_of(self.queue.device().as_ref()))
    }
}

fn queue_creation_error(err: MemoryError) -> MemoryError {
    match err {
        MemoryError::DeviceNotFound(message) => MemoryError::QueueCreation(message),
        other => other,
    }
}

fn make_queue(env: &Env, target: Option<Unknown>, device: Option<Unknown>) -> napi::Result<Arc<dyn Queue>> {
    let explicit_device = device.map(|value| device_arg(env, value)).transpose()?;
    let made = match target {
        None => registry().select(None).and_then(|device| device.default_context()?.create_queue(&device)),
        Some(value) => {
            if let Some(context) = class_instance::<SyclContext>(env, &value)? {
                let device = match explicit_device {
                    Some(device) => Ok(device),
                    None => context.context.devices().into_iter().next().ok_or_else(|| {
                        MemoryError::QueueCreation("the context has no devices".into())
                    }),
                };
                device.and_then(|device| context.context.create_queue(&device))
            } else if value.get_type()? == ValueType::String {
                let text = string_arg(env, value, "filter")?;
                registry()
                    .select(Some(&text))
                    .and_then(|device| device.default_context()?.create_queue(&device))
            } else {
                let device = device_arg(env, value)?;
                device.default_context().and_then(|context| context.create_queue(&device))
            }
        }
    };
    made.map_err(queue_creation_error).or_throw(env)
}

/// A `SyclDevice` or a filter string.
pub(crate) fn device_arg(env: &Env, value: Unknown) -> napi::Result<Arc<dyn Device>> {
    if let Some(device) = class_instance::<SyclDevice>(env, &value)? {
        return Ok(device.device.clone());
    }
    if value.get_type()? == ValueType::String {
        let text = string_arg(env, value, "device")?;
        return registry().select(Some(&text)).or_throw(env);
    }
    Err(MemoryError::InvalidArgType("expected a SyclDevice or a filter string".into())).or_throw(env)
}

thread_local! {
    /// One `SyclQueue` object per device for default allocations, so that every
    /// allocation made without a queue shows the same `syclQueue` (dpctl's cached queue).
    static CACHED_QUEUE_OBJECTS: RefCell<HashMap<String, JsRef>> = RefCell::new(HashMap::new());
}

/// The JS object of the cached queue of `device` (the default device when `None`).
pub(crate) fn cached_queue_object<'env>(env: &'env Env, device: Option<&Arc<dyn Device>>) -> napi::Result<(Arc<dyn Queue>, Unknown<'env>)> {
    let device = match device {
        Some(device) => device.clone(),
        None => registry().select(None).map_err(queue_creation_error).or_throw(env)?,
    };
    let key = registry().filter_string_of(device.as_ref());
    let existing = CACHED_QUEUE_OBJECTS.with(|cell| cell.borrow().get(&key).map(|r| r.get(env))).transpose()?;
    if let Some(object) = existing {
        let queue = class_instance::<SyclQueue>(env, &object)?
            .map(|q| q.queue.clone())
            .ok_or_else(|| napi::Error::from_reason("cached queue object lost its class"))?;
        return Ok((queue, object));
    }
    let queue = registry().cached_queue(&device).map_err(queue_creation_error).or_throw(env)?;
    let instance: ClassInstance<SyclQueue> = SyclQueue { queue: queue.clone() }.into_instance(env)?;
    let object = instance.as_object(env).to_unknown();
    let reference = JsRef::new(&object)?;
    CACHED_QUEUE_OBJECTS.with(|cell| cell.borrow_mut().insert(key, reference));
    Ok((queue, object))
}
