//! SYCL provider: devices, contexts and queues of the SYCL runtime, through the C++ shim
//! (`shim/dpctl_memory_shim.h`) loaded at run time by [`shim`].
//!
//! Identity: two objects are the same device (context) when the shim's equality says so;
//! the devices of contexts and of pointers are mapped back to the provider's enumerated
//! `Arc`s where they match, so callers usually get the very same object.
//!
//! The shim's calls are `shim.rs`'s; the `unsafe` here and in `registration.rs` only
//! forwards the runtime traits' contracts (`free`, `register`) to the shim's wrappers.

use std::any::Any;
use std::sync::{Arc, OnceLock, Weak};

use crate::error::{MemoryError, Result};
use crate::runtime::program::SourceLanguage;
use crate::runtime::UsmKind;
use crate::runtime::{
    check_allocation_request, Address, Context, Device, DeviceInfo, DeviceType, Provider, Queue, ReadBytes, WriteBytes,
};

mod hints;
pub mod locate;
mod program;
mod registration;
mod shim;
mod shim_program;

#[cfg(test)]
mod tests;

/// The provider, loaded once per process (a failed load is remembered too).
static PROVIDER: OnceLock<Result<Arc<SyclProvider>>> = OnceLock::new();

/// Loads the shim and the SYCL runtime and enumerates the devices, once per process.
/// `Err(QueueCreation)` says what was searched and how to install the runtime.
pub fn load() -> Result<Arc<dyn Provider>> {
    let provider = PROVIDER.get_or_init(load_provider).clone()?;
    Ok(provider)
}

/// Where the loaded runtime and shim came from: `(runtime root, shim file)`, once
/// [`load`] has succeeded (for diagnostics).
#[cfg(test)]
pub fn loaded_from() -> Option<(&'static std::path::Path, &'static std::path::Path)> {
    match PROVIDER.get() {
        Some(Ok(_)) => shim::shim().ok().map(|s| (s.runtime_root.as_path(), s.shim_path.as_path())),
        _ => None,
    }
}

fn load_provider() -> Result<Arc<SyclProvider>> {
    let shim = shim::shim().map_err(|message| MemoryError::QueueCreation { message })?;
    let handles = shim.devices().map_err(|e| MemoryError::QueueCreation {
        message: format!("the SYCL runtime could not list its devices: {e}"),
    })?;
    let mut devices = Vec::with_capacity(handles.len());
    for handle in handles {
        let device = SyclDevice::new(handle).map_err(|e| MemoryError::QueueCreation {
            message: format!("the SYCL runtime could not describe a device: {e}"),
        })?;
        devices.push(Arc::new(device));
    }
    Ok(Arc::new(SyclProvider { devices }))
}

fn runtime_error(what: &str, e: shim::ShimError) -> MemoryError {
    MemoryError::SyclRuntime { operation: what.into(), message: e.to_string() }
}

/// The provider's device equal to `handle`, or a new device around it.
fn canonical_device(handle: shim::DeviceHandle) -> Result<Arc<SyclDevice>> {
    if let Some(Ok(provider)) = PROVIDER.get() {
        for device in &provider.devices {
            if device.handle.equals(&handle).map_err(|e| runtime_error("comparing SYCL devices", e))? {
                return Ok(Arc::clone(device));
            }
        }
    }
    SyclDevice::new(handle).map(Arc::new)
}

/// All SYCL devices of the process (`sycl::device::get_devices()`).
pub struct SyclProvider {
    devices: Vec<Arc<SyclDevice>>,
}

impl Provider for SyclProvider {
    fn devices(&self) -> Vec<Arc<dyn Device>> {
        self.devices.iter().map(|d| Arc::clone(d) as Arc<dyn Device>).collect()
    }

    /// The SYCL runtime reads `ONEAPI_DEVICE_SELECTOR` itself.
    fn applies_device_selector(&self) -> bool {
        true
    }
}

/// A `sycl::device`.
pub struct SyclDevice {
    handle: shim::DeviceHandle,
    info: DeviceInfo,
}

impl std::fmt::Debug for SyclDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyclDevice").field("info", &self.info).finish()
    }
}

impl SyclDevice {
    fn new(handle: shim::DeviceHandle) -> Result<Self> {
        let facts = handle.info().map_err(|e| runtime_error("reading SYCL device information", e))?;
        let device_type = match facts.device_type {
            shim::DEVICE_TYPE_CPU => DeviceType::Cpu,
            shim::DEVICE_TYPE_GPU => DeviceType::Gpu,
            shim::DEVICE_TYPE_ACCELERATOR => DeviceType::Accelerator,
            shim::DEVICE_TYPE_CUSTOM => DeviceType::Custom,
            _ => DeviceType::Unknown,
        };
        let info = DeviceInfo {
            name: facts.name,
            vendor: facts.vendor,
            backend: facts.backend,
            device_type,
            driver_version: facts.driver_version,
            global_mem_size: facts.global_mem_size,
            max_mem_alloc_size: facts.max_mem_alloc_size,
            local_mem_size: facts.local_mem_size,
            aspects: facts.aspects,
        };
        Ok(SyclDevice { handle, info })
    }

    fn same(&self, other: &SyclDevice) -> bool {
        std::ptr::eq(self, other) || self.handle.equals(&other.handle).unwrap_or(false)
    }
}

impl Device for SyclDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn can_compile(&self, language: SourceLanguage) -> bool {
        match language {
            // Built through the OpenCL runtime (`program.rs`).
            SourceLanguage::OpenClC | SourceLanguage::SpirV => self.info.backend == "opencl",
            SourceLanguage::Sycl => {
                shim::shim().is_ok_and(|s| s.abi.sycl_source) && self.handle.can_compile_sycl().unwrap_or(false)
            }
            SourceLanguage::Ptx | SourceLanguage::CudaC => false,
        }
    }

    fn same_device(&self, other: &dyn Device) -> bool {
        other.as_any().downcast_ref::<SyclDevice>().is_some_and(|other| self.same(other))
    }

    fn default_context(&self) -> Result<Arc<dyn Context>> {
        let handle = self.handle.default_context().map_err(|e| runtime_error("getting the default SYCL context", e))?;
        Ok(SyclContext::new(handle)?)
    }

    fn create_context(&self) -> Result<Arc<dyn Context>> {
        let handle = self.handle.create_context().map_err(|e| runtime_error("creating a SYCL context", e))?;
        Ok(SyclContext::new(handle)?)
    }

    fn device_memory_is_host_memory(&self) -> bool {
        // A SYCL CPU device runs on the host: its USM device allocations are host memory.
        self.info.device_type == DeviceType::Cpu
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A `sycl::context`, with its devices.
pub struct SyclContext {
    /// This context's own `Arc`, for the queues it makes.
    me: Weak<SyclContext>,
    handle: shim::ContextHandle,
    devices: Vec<Arc<SyclDevice>>,
    /// Set once the backend answered that it needs no host registration (a property of
    /// the backend): later registrations skip the runtime call, which costs an exception.
    registration_not_needed: std::sync::atomic::AtomicBool,
}

impl SyclContext {
    fn new(handle: shim::ContextHandle) -> Result<Arc<Self>> {
        let devices = handle
            .devices()
            .map_err(|e| runtime_error("listing the devices of a SYCL context", e))?
            .into_iter()
            .map(canonical_device)
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new_cyclic(|me| SyclContext {
            me: me.clone(),
            handle,
            devices,
            registration_not_needed: std::sync::atomic::AtomicBool::new(false),
        }))
    }
}

impl Context for SyclContext {
    fn devices(&self) -> Vec<Arc<dyn Device>> {
        self.devices.iter().map(|d| Arc::clone(d) as Arc<dyn Device>).collect()
    }

    fn same_context(&self, other: &dyn Context) -> bool {
        other
            .as_any()
            .downcast_ref::<SyclContext>()
            .is_some_and(|other| std::ptr::eq(self, other) || self.handle.equals(&other.handle).unwrap_or(false))
    }

    fn create_queue(&self, device: &Arc<dyn Device>) -> Result<Arc<dyn Queue>> {
        let Some(context) = self.me.upgrade() else {
            return Err(MemoryError::QueueCreation { message: "the SYCL context is being dropped".into() });
        };
        let Some(device) = self.devices.iter().find(|d| d.same_device(device.as_ref())) else {
            return Err(MemoryError::QueueCreation {
                message: format!("the device {:?} is not a device of this SYCL context", device.info().name),
            });
        };
        let handle = self
            .handle
            .create_queue(&device.handle)
            .map_err(|e| MemoryError::QueueCreation { message: format!("creating a SYCL queue: {e}") })?;
        let properties = crate::runtime::program::QueueProperties::default();
        Ok(Arc::new(SyclQueue { handle: Arc::new(handle), context, device: Arc::clone(device), properties }))
    }

    fn create_queue_with(
        &self,
        device: &Arc<dyn Device>,
        properties: crate::runtime::program::QueueProperties,
    ) -> Result<Arc<dyn Queue>> {
        program::create_queue_with(self, device, properties)
    }

    fn programs(&self) -> Option<&dyn crate::runtime::program::ProgramBuilder> {
        Some(self)
    }

    fn pointer_kind(&self, address: Address) -> UsmKind {
        match self.handle.pointer_type(address) {
            Ok(shim::USM_DEVICE) => UsmKind::Device,
            Ok(shim::USM_SHARED) => UsmKind::Shared,
            Ok(shim::USM_HOST) => UsmKind::Host,
            _ => UsmKind::Unknown,
        }
    }

    fn pointer_device(&self, address: Address) -> Result<Arc<dyn Device>> {
        // sycl::get_pointer_device throws for a foreign pointer (turned into an error by
        // the shim); asking the kind first gives that case its own error.
        if self.pointer_kind(address) == UsmKind::Unknown {
            return Err(MemoryError::ForeignPointer {
                message: format!("0x{address:x} is not a USM pointer of this SYCL context"),
            });
        }
        let handle = self
            .handle
            .pointer_device(address)
            .map_err(|e| runtime_error(&format!("finding the device of pointer 0x{address:x}"), e))?;
        Ok(canonical_device(handle)?)
    }

    fn address_range(&self, _ptr: Address) -> Option<(Address, u64)> {
        None // SYCL has no query for an allocation's extent
    }

    fn host_registration(&self) -> Option<&dyn crate::runtime::registration::HostRegistration> {
        Some(self)
    }

    unsafe fn free(&self, address: Address) -> Result<()> {
        // SAFETY: the caller's contract (`Context::free`) is the shim's.
        unsafe { self.handle.free(address) }
            .map_err(|e| runtime_error(&format!("freeing USM pointer 0x{address:x}"), e))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A `sycl::queue` (out-of-order; each operation waits on its own event) on one device of one context.
pub struct SyclQueue {
    handle: Arc<shim::QueueHandle>,
    context: Arc<SyclContext>,
    device: Arc<SyclDevice>,
    properties: crate::runtime::program::QueueProperties,
}

/// Serialises the runtime operations on CPU devices. The OpenCL CPU runtime runs each
/// command as a task of its one task arena and waits for completion inside that arena:
/// with several threads waiting on commands at once, its workers can all end up waiting
/// on each other (seen on a 2-core machine as a hang of every waiter). Copies the CPU can
/// make itself never come here, so what is serialised is small.
static CPU_DEVICE_OPERATIONS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds `CPU_DEVICE_OPERATIONS` (a wait for a submission on a CPU device takes it too).
fn cpu_device_lock() -> std::sync::MutexGuard<'static, ()> {
    crate::sync::lock(&CPU_DEVICE_OPERATIONS)
}

impl SyclQueue {
    fn cpu_device_guard(&self) -> Option<std::sync::MutexGuard<'static, ()>> {
        (self.device.info.device_type == DeviceType::Cpu).then(cpu_device_lock)
    }
}

impl Queue for SyclQueue {
    fn context(&self) -> Arc<dyn Context> {
        Arc::clone(&self.context) as Arc<dyn Context>
    }

    fn device(&self) -> Arc<dyn Device> {
        Arc::clone(&self.device) as Arc<dyn Device>
    }

    fn allocate(&self, kind: UsmKind, nbytes: u64, alignment: u64) -> Result<Address> {
        check_allocation_request(kind, nbytes, alignment)?;
        let code = match kind {
            UsmKind::Device => shim::USM_DEVICE,
            UsmKind::Shared => shim::USM_SHARED,
            UsmKind::Host => shim::USM_HOST,
            UsmKind::Unknown => return Err(MemoryError::UnknownKindAllocation),
        };
        let address = self.handle.malloc(code, nbytes, alignment).map_err(|e| {
            if e.status == shim::STATUS_ALLOC {
                MemoryError::UsmAllocation { message: e.message }
            } else {
                MemoryError::UsmAllocation {
                    message: format!("allocating {nbytes} bytes of USM-{} memory failed: {e}", kind.name()),
                }
            }
        })?;
        // Some runtimes (the OpenCL CPU one) accept an alignment they cannot give and
        // return a pointer aligned to less: refuse it rather than hand it out.
        if alignment != 0 && address % alignment != 0 {
            // SAFETY: allocated just above and never handed out.
            let freed = match unsafe { self.context.handle.free(address) } {
                Ok(()) => String::new(),
                Err(e) => format!(" (and freeing it failed: {e})"),
            };
            return Err(MemoryError::UsmAllocation {
                message: format!(
                    "allocating {nbytes} bytes of USM-{} memory: the SYCL runtime did not honour alignment \
                 {alignment} (it returned 0x{address:x}){freed}",
                    kind.name()
                ),
            });
        }
        Ok(address)
    }

    fn memcpy(&self, dst: WriteBytes<'_>, src: ReadBytes<'_>) -> Result<()> {
        let nbytes = src.copy_len(&dst)?;
        let _one_at_a_time = self.cpu_device_guard();
        self.handle.memcpy(dst, src, nbytes).map_err(|e| runtime_error("SYCL memcpy failed", e))
    }

    fn memset(&self, dst: WriteBytes<'_>, value: u8) -> Result<()> {
        let _one_at_a_time = self.cpu_device_guard();
        self.handle.memset(dst, value).map_err(|e| runtime_error("SYCL memset failed", e))
    }

    fn wait(&self) -> Result<()> {
        let _one_at_a_time = self.cpu_device_guard();
        self.handle.wait().map_err(|e| runtime_error("waiting for the SYCL queue", e))
    }

    fn shared_memory_hints(&self) -> Option<&dyn crate::runtime::hints::SharedMemoryHints> {
        Some(self)
    }

    fn submissions(&self) -> Option<&dyn crate::runtime::program::Submissions> {
        Some(self)
    }

    fn properties(&self) -> crate::runtime::program::QueueProperties {
        self.properties
    }

    fn native_handles(&self) -> Option<crate::runtime::program::NativeQueue> {
        let (queue, context, device) = self.handle.native().ok()?;
        Some(crate::runtime::program::NativeQueue::Sycl { queue, context, device })
    }
}
