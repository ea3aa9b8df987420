//! The process-wide device registry: every device of every provider that loaded, in a
//! fixed order (SYCL's first, then CUDA's), with its filter string, the default device,
//! and one cached queue per device (dpctl's `get_device_cached_queue`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::{MemoryError, Result};
use crate::memory::filter;
use crate::runtime::{Context, Device, DeviceType, Provider, ProviderLoad, Queue};

/// A listed device and the filter string that selects it again.
pub struct RegisteredDevice {
    pub device: Arc<dyn Device>,
    /// `backend:type:N`, unique in the registry (see `filter::filter_string`).
    pub filter_string: String,
}

/// The devices of the providers that loaded, why the others did not, and the cached queues.
pub struct Registry {
    devices: Vec<RegisteredDevice>,
    /// Why each provider that did not load did not load (diagnostics list them all).
    unavailable: Vec<String>,
    /// The lines of `unavailable` that errors show (those of runtimes on this machine).
    unavailable_in_errors: Vec<String>,
    /// `ONEAPI_DEVICE_SELECTOR` as the registry was made with it.
    selector: Option<String>,
    /// The providers that loaded (their spare memory is trimmed through them).
    providers: Vec<Arc<dyn Provider>>,
    cached_queues: Mutex<HashMap<usize, Arc<dyn Queue>>>,
}

impl Registry {
    /// The devices of `providers`, in their order. A provider superseded by a device an
    /// earlier one listed is left out; `selector` (`ONEAPI_DEVICE_SELECTOR`) filters the
    /// devices of providers whose runtime does not apply it itself.
    pub fn new(providers: Vec<ProviderLoad>, selector: Option<&str>) -> Registry {
        let mut devices: Vec<Arc<dyn Device>> = Vec::new();
        let mut unavailable = Vec::new();
        let mut unavailable_in_errors = Vec::new();
        let mut loaded = Vec::new();
        for ProviderLoad { name, provider, runtime_present } in providers {
            let provider = match provider {
                Ok(provider) => provider,
                Err(err) => {
                    let line = format!("{name}: {err}");
                    if runtime_present {
                        unavailable_in_errors.push(line.clone());
                    }
                    unavailable.push(line);
                    continue;
                }
            };
            if devices.iter().any(|d| provider.superseded_by(d.as_ref())) {
                continue;
            }
            let listed = provider.devices();
            loaded.push(provider.clone());
            if provider.applies_device_selector() {
                devices.extend(listed);
                continue;
            }
            match selector.map(filter::parse_selector).transpose() {
                Ok(selector) => devices.extend(listed.into_iter().enumerate().filter_map(|(index, device)| {
                    let info = device.info();
                    selector.as_ref().is_none_or(|s| s.keeps(&info.backend, info.device_type, index)).then_some(device)
                })),
                Err(err) => {
                    let line = format!("{name}: ONEAPI_DEVICE_SELECTOR: {err}");
                    unavailable_in_errors.push(line.clone());
                    unavailable.push(line);
                }
            }
        }
        let registered = (0..devices.len())
            .map(|i| RegisteredDevice {
                device: devices[i].clone(),
                filter_string: filter::filter_string(&devices, i, device_key).unwrap_or_default(),
            })
            .collect();
        Registry {
            devices: registered,
            unavailable,
            unavailable_in_errors,
            selector: selector.filter(|s| !s.is_empty()).map(str::to_owned),
            providers: loaded,
            cached_queues: Mutex::new(HashMap::new()),
        }
    }

    /// Frees the host memory every provider keeps for copies and can make again.
    pub fn trim_spare(&self) -> u64 {
        self.providers.iter().fold(0u64, |sum, provider| sum.saturating_add(provider.trim_spare()))
    }

    /// Every listed device, in registry order.
    #[cfg(test)]
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

    /// The filter string of `device`: its registered one, else `backend:type` for a device
    /// the registry does not list.
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
        // The SYCL runtime applies the selector before anything is listed: a selector that
        // names no device here looks like a missing runtime unless the message says so.
        if let (true, Some(selector)) = (self.devices.is_empty(), &self.selector) {
            message.push_str(&format!(
                ". ONEAPI_DEVICE_SELECTOR='{selector}' is set and may filter out every device: unset it to \
                 see them all"
            ));
        }
        if self.devices.is_empty() && !self.unavailable_in_errors.is_empty() {
            message.push_str(". ");
            message.push_str(&self.unavailable_in_errors.join("; "));
        } else if !self.devices.is_empty() {
            let names: Vec<&str> = self.devices.iter().map(|e| e.filter_string.as_str()).collect();
            message.push_str(&format!(" (devices here: {})", names.join(", ")));
        }
        MemoryError::DeviceNotFound { message }
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
        self.make_queue_with(context, device, crate::runtime::program::QueueProperties::default())
    }

    /// `make_queue` with queue properties (in order, profiling).
    pub fn make_queue_with(
        &self,
        context: Option<Arc<dyn Context>>,
        device: DeviceChoice,
        properties: crate::runtime::program::QueueProperties,
    ) -> Result<Arc<dyn Queue>> {
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
                        .ok_or_else(|| MemoryError::QueueCreation { message: "the context has no devices".into() })
                });
                device.and_then(|device| context.create_queue_with(&device, properties))
            }
            None => named
                .unwrap_or_else(|| self.select(None))
                .and_then(|device| device.default_context()?.create_queue_with(&device, properties)),
        };
        made.map_err(MemoryError::into_queue_creation)
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
    use crate::runtime::fake::{FakeContext, FakeDevice, FakeProvider};
    use crate::runtime::{Context, DeviceInfo};

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
            unavailable_in_errors: vec![],
            selector: None,
            providers: vec![],
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

    fn load(name: &'static str, provider: FakeProvider) -> ProviderLoad {
        ProviderLoad { name, provider: Ok(Arc::new(provider)), runtime_present: true }
    }

    fn backends(registry: &Registry) -> Vec<String> {
        registry.devices().iter().map(|d| d.filter_string.clone()).collect()
    }

    #[test]
    fn providers_are_plug_ins_with_their_own_rules() {
        let sycl = || FakeProvider {
            devices: vec![FakeDevice::on("opencl", DeviceType::Cpu), FakeDevice::on("cuda", DeviceType::Gpu)],
            superseded_by_backend: None,
            applies_device_selector: true,
        };
        let cuda = || FakeProvider {
            devices: vec![FakeDevice::on("cuda", DeviceType::Gpu), FakeDevice::on("cuda", DeviceType::Gpu)],
            superseded_by_backend: Some("cuda"),
            applies_device_selector: false,
        };
        // A runtime that already lists the CUDA devices leaves the CUDA provider out.
        let both = Registry::new(vec![load("SYCL", sycl()), load("CUDA", cuda())], None);
        assert_eq!(backends(&both), ["opencl:cpu:0", "cuda:gpu:0"]);
        // Without it, the CUDA provider's devices follow, filtered by the selector the
        // registry applies for it (and not for the provider whose runtime applies it).
        let opencl_only = FakeProvider { devices: vec![FakeDevice::on("opencl", DeviceType::Cpu)], ..sycl() };
        let selected = Registry::new(vec![load("SYCL", opencl_only), load("CUDA", cuda())], Some("cuda:1"));
        assert_eq!(backends(&selected), ["opencl:cpu:0", "cuda:gpu:0"]);
        assert_eq!(selected.devices().len(), 2);
        // A provider that did not load, and a selector that cannot be parsed, say why.
        let failed = ProviderLoad {
            name: "CUDA",
            provider: Err(MemoryError::QueueCreation { message: "no driver".into() }),
            runtime_present: true,
        };
        let broken = Registry::new(vec![failed, load("X", cuda())], Some("::"));
        assert!(broken.devices().is_empty());
        assert_eq!(broken.unavailable().len(), 2);
        assert!(broken.unavailable()[0].starts_with("CUDA: "), "{:?}", broken.unavailable());
        assert!(broken.unavailable()[1].starts_with("X: ONEAPI_DEVICE_SELECTOR: "), "{:?}", broken.unavailable());
    }

    #[test]
    fn errors_leave_out_a_provider_whose_runtime_is_not_here_and_name_the_selector() {
        let absent = ProviderLoad {
            name: "CUDA",
            provider: Err(MemoryError::QueueCreation { message: "no NVIDIA driver here".into() }),
            runtime_present: false,
        };
        let failed = ProviderLoad {
            name: "SYCL",
            provider: Err(MemoryError::QueueCreation { message: "not installed".into() }),
            runtime_present: true,
        };
        let registry = Registry::new(vec![failed, absent], Some("level_zero:gpu"));
        assert_eq!(registry.unavailable().len(), 2, "the diagnostics list both");
        let Err(MemoryError::DeviceNotFound { message }) = registry.select(None) else { panic!("no device") };
        assert!(message.contains("SYCL: not installed"), "{message}");
        assert!(!message.contains("NVIDIA"), "{message}");
        assert!(message.contains("ONEAPI_DEVICE_SELECTOR='level_zero:gpu'"), "{message}");
    }
}
