//! The process-wide device registry: every device of every provider that loaded, in a
//! fixed order (SYCL's first, then CUDA's), with its filter string, the default device,
//! and one cached queue per device (dpctl's `get_device_cached_queue`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{MemoryError, Result};
use crate::memory::filter;
use crate::provider::{self, Device, DeviceType, Queue};

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
                                let keep = selector
                                    .as_ref()
                                    .is_none_or(|s| s.keeps(&info.backend, info.device_type, index));
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
            None => all
                .iter()
                .find(|d| d.info().device_type == DeviceType::Gpu)
                .or_else(|| all.first())
                .cloned(),
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

    /// The one queue every default allocation on `device` uses.
    pub fn cached_queue(&self, device: &Arc<dyn Device>) -> Result<Arc<dyn Queue>> {
        let index = self.index_of(device.as_ref()).unwrap_or(usize::MAX);
        let mut queues = self.cached_queues.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(queue) = queues.get(&index) {
            return Ok(queue.clone());
        }
        let queue = device.default_context()?.create_queue(device)?;
        queues.insert(index, queue.clone());
        Ok(queue)
    }

    /// The cached queue of the default device.
    pub fn default_queue(&self) -> Result<Arc<dyn Queue>> {
        let device = self.select(None)?;
        self.cached_queue(&device)
    }
}

fn device_key(device: &Arc<dyn Device>) -> (&str, DeviceType) {
    let info = device.info();
    (info.backend.as_str(), info.device_type)
}
