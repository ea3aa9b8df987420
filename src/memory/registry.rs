//! The process-wide device registry: every device of every provider that loaded, in a
//! fixed order (SYCL's first, then CUDA's), with its filter string, the default device,
//! and one cached queue per device (dpctl's `get_device_cached_queue`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{MemoryError, Result};
use crate::memory::filter;
use crate::provider::{self, Context, Device, DeviceType, Queue};

pub struct RegisteredDevice {
    pub device: Arc<dyn Device>,
    pub filter_string: String,
}

pub struct Registry {
    devices: Vec<RegisteredDevice>,
    /// Why each provider that did not load did not load, for messages.
    unavailable: Vec<String>,
    cached_queues: Mutex<HashMap<usize, Arc<dyn Queue>>>,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// The registry, loading the providers on first use.
pub fn registry() -> &'static Registry {
    REGISTRY.get_or_init(Registry::load)
}

impl Registry {
    fn load() -> Registry {
        let mut devices: Vec<Arc<dyn Device>> = Vec::new();
        let mut unavailable = Vec::new();
        match provider::sycl::load() {
            Ok(sycl) => devices.extend(sycl.devices()),
            Err(err) => unavailable.push(format!("SYCL: {err}")),
        }
        // A SYCL runtime with a CUDA backend already shows the NVIDIA devices.
        let sycl_has_cuda = devices.iter().any(|d| d.info().backend == "cuda");
        if !sycl_has_cuda {
            match provider::cuda::load() {
                Ok(cuda) => {
                    let cuda_devices = cuda.devices();
                    let selector = std::env::var("ONEAPI_DEVICE_SELECTOR").ok();
                    match selector.as_deref().map(filter::parse_selector).transpose() {
                        Ok(selector) => {
                            for (index, device) in cuda_devices.into_iter().enumerate() {
                                let info = device.info();
                                let keep =
                                    selector.as_ref().is_none_or(|s| s.keeps(&info.backend, info.device_type, index));
                                if keep {
                                    devices.push(device);
                                }
                            }
                        }
                        Err(err) => unavailable.push(format!("CUDA: ONEAPI_DEVICE_SELECTOR: {err}")),
                    }
                }
                Err(err) => unavailable.push(format!("CUDA: {err}")),
            }
        }
        let registered = (0..devices.len())
            .map(|i| RegisteredDevice {
                device: devices[i].clone(),
                filter_string: filter::filter_string(&devices, i, device_key).unwrap_or_default(),
            })
            .collect();
        Registry { devices: registered, unavailable, cached_queues: Mutex::new(HashMap::new()) }
    }

    pub fn devices(&self) -> &[RegisteredDevice] {
        &self.devices
    }

    /// Why no device is available from some provider, one line each.
    pub fn unavailable(&self) -> &[String] {
        &self.unavailable
    }

    fn index_of(&self, device: &dyn Device) -> Option<usize> {
        self.devices.iter().position(|entry| entry.device.same_device(device))
    }

    pub fn filter_string_of(&self, device: &dyn Device) -> String {
        match self.index_of(device) {
            Some(i) => self.devices[i].filter_string.clone(),
            None => format!("{}:{}", device.info().backend, device.info().device_type.name()),
        }
    }

    /// The device a filter string selects; `None` selects the default device, which is
    /// the first GPU, else the first device.
    pub fn select(&self, filter_text: Option<&str>) -> Result<Arc<dyn Device>> {
        let all: Vec<Arc<dyn Device>> = self.devices.iter().map(|e| e.device.clone()).collect();
        let chosen = match filter_text {
            None => all.iter().find(|d| d.info().device_type == DeviceType::Gpu).or_else(|| all.first()).cloned(),
            Some(text) => {
                let parsed = filter::parse_filter(text)?;
                filter::select(&parsed, &all, device_key).cloned()
            }
        };
        chosen.ok_or_else(|| self.not_found(filter_text))
    }

    fn not_found(&self, filter_text: Option<&str>) -> MemoryError {
        let what = match filter_text {
            Some(text) => format!("SYCL Device '{text}' could not be created: no device matches it"),
            None => "No SYCL device is available".to_string(),
        };
        let mut message = what;
        if self.devices.is_empty() && !self.unavailable.is_empty() {
            message.push_str(". ");
            message.push_str(&self.unavailable.join("; "));
        } else if !self.devices.is_empty() {
            let names: Vec<&str> = self.devices.iter().map(|e| e.filter_string.as_str()).collect();
            message.push_str(&format!(" (devices here: {})", names.join(", ")));
        }
        MemoryError::DeviceNotFound(message)
    }

    /// The one queue every default allocation on `device` uses. A device the registry
    /// does not list (a context's device that is not enumerated) is not cached: each call
    /// makes a new queue on its default context.
    pub fn cached_queue(&self, device: &Arc<dyn Device>) -> Result<Arc<dyn Queue>> {
        // A device outside the registry has no slot of its own: it gets a fresh queue
        // each time rather than sharing one with every other unregistered device.
        let Some(index) = self.index_of(device.as_ref()) else {
            return device.default_context()?.create_queue(device);
        };
        let mut queues = crate::sync::lock(&self.cached_queues);
        if let Some(queue) = queues.get(&index) {
            return Ok(queue.clone());
        }
        let queue = device.default_context()?.create_queue(device)?;
        queues.insert(index, queue.clone());
        Ok(queue)
    }

    /// The devices `getDevices(filter)` lists: every device without a filter; the one
    /// device a filter with an index names; else every device of the backend and type
    /// the filter names. A filter that parses but matches nothing gives an empty list.
    pub fn matching(&self, filter_text: Option<&str>) -> Result<Vec<Arc<dyn Device>>> {
        let Some(text) = filter_text else {
            return Ok(self.devices.iter().map(|e| e.device.clone()).collect());
        };
        let parsed = filter::parse_filter(text)?;
        if parsed.index.is_some() {
            return Ok(self.select(Some(text)).into_iter().collect());
        }
        Ok(self
            .devices
            .iter()
            .filter(|e| parsed.matches(&e.device.info().backend, e.device.info().device_type))
            .map(|e| e.device.clone())
            .collect())
    }

    /// A queue as `new SyclQueue(target?, device?)` makes it: in `context` when given (on
    /// `device`, else on the context's first device), else on `device` (the default
    /// device when none is named) in its default context. Every failure to find a
    /// device is a queue-creation error, as dpctl raises it.
    pub fn make_queue(&self, context: Option<Arc<dyn Context>>, device: DeviceChoice) -> Result<Arc<dyn Queue>> {
        let named = match device {
            DeviceChoice::Default => None,
            DeviceChoice::Device(device) => Some(Ok(device)),
            DeviceChoice::Filter(text) => Some(self.select(Some(&text))),
        };
        let made = match context {
            Some(context) => {
                let device = named.unwrap_or_else(|| {
                    context
                        .devices()
                        .into_iter()
                        .next()
                        .ok_or_else(|| MemoryError::QueueCreation("the context has no devices".into()))
                });
                device.and_then(|device| context.create_queue(&device))
            }
            None => named
                .unwrap_or_else(|| self.select(None))
                .and_then(|device| device.default_context()?.create_queue(&device)),
        };
        made.map_err(MemoryError::into_queue_creation)
    }

    /// The cached queue of the default device.
    pub fn default_queue(&self) -> Result<Arc<dyn Queue>> {
        let device = self.select(None)?;
        self.cached_queue(&device)
    }
}

/// The device a queue is made for.
pub enum DeviceChoice {
    /// The default device, or the context's first device.
    Default,
    Device(Arc<dyn Device>),
    /// A filter string, resolved by [`Registry::select`].
    Filter(String),
}

fn device_key(device: &Arc<dyn Device>) -> (&str, DeviceType) {
    let info = device.info();
    (info.backend.as_str(), info.device_type)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::any::Any;

    use super::*;
    use crate::memory::pool::fake::{FakeContext, FakeDevice};
    use crate::provider::{Context, DeviceInfo};

    /// A device whose default context hands out a new fake queue per `create_queue`.
    struct QueueingDevice {
        inner: Arc<FakeDevice>,
        context: Arc<FakeContext>,
    }

    fn queueing_device(id: u64) -> Arc<dyn Device> {
        let inner = FakeDevice::new(1 << 30, 1 << 30);
        Arc::new(QueueingDevice { context: FakeContext::new(id, inner.clone()), inner })
    }

    impl Device for QueueingDevice {
        fn info(&self) -> &DeviceInfo {
            self.inner.info()
        }
        fn same_device(&self, other: &dyn Device) -> bool {
            std::ptr::addr_eq(self, other)
        }
        fn default_context(&self) -> Result<Arc<dyn Context>> {
            Ok(self.context.clone())
        }
        fn create_context(&self) -> Result<Arc<dyn Context>> {
            Ok(self.context.clone())
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn registered_devices_share_a_cached_queue_and_unregistered_ones_never_do() {
        let registered = queueing_device(1);
        let registry = Registry {
            devices: vec![RegisteredDevice { device: registered.clone(), filter_string: "fake:cpu:0".into() }],
            unavailable: vec![],
            cached_queues: Mutex::new(HashMap::new()),
        };
        let first = registry.cached_queue(&registered).unwrap();
        assert!(Arc::ptr_eq(&first, &registry.cached_queue(&registered).unwrap()));

        let (a, b) = (queueing_device(2), queueing_device(3));
        let qa = registry.cached_queue(&a).unwrap();
        let qb = registry.cached_queue(&b).unwrap();
        assert!(!Arc::ptr_eq(&qa, &qb), "two unregistered devices must not share a queue");
        assert!(!Arc::ptr_eq(&qa, &first) && !Arc::ptr_eq(&qb, &first));
        assert!(!Arc::ptr_eq(&qa, &registry.cached_queue(&a).unwrap()), "unregistered devices are not cached");
        assert!(Arc::ptr_eq(&first, &registry.cached_queue(&registered).unwrap()));
    }
}
