//! The runtime interface, the bottom of the crate: what the Node-free model needs from a
//! runtime that hands out USM memory, and the plain types both sides speak (USM kinds,
//! addresses, device descriptions). `memory/` programs against these traits;
//! `provider/` implements them (SYCL through the C++ shim, CUDA through the driver API).
//! Neither imports the other: the binding hands the loaded providers to the registry.
//!
//! Addresses are `u64` (they travel to JS as BigInt). Every call that touches memory is
//! synchronous unless its name says otherwise: when it returns `Ok`, the work is done.

use std::any::Any;
use std::sync::Arc;

use crate::error::Result;

mod bytes;
#[cfg(test)]
pub(crate) mod fake;
pub mod held;
pub(crate) mod hints;
pub(crate) mod ipc;
pub(crate) mod kind;
pub(crate) mod peer;
pub(crate) mod program;
pub(crate) mod ranges;
pub(crate) mod registration;

pub(crate) use bytes::{ReadBytes, WriteBytes};
pub(crate) use kind::{check_allocation_request, UsmKind};

/// An address in a process's address space (host or USM memory).
pub type Address = u64;

/// What kind of device it is, as SYCL names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceType {
    Cpu,
    Gpu,
    Accelerator,
    Custom,
    Unknown,
}

impl DeviceType {
    /// The name SYCL filter strings use.
    pub fn name(self) -> &'static str {
        match self {
            DeviceType::Cpu => "cpu",
            DeviceType::Gpu => "gpu",
            DeviceType::Accelerator => "accelerator",
            DeviceType::Custom => "custom",
            DeviceType::Unknown => "unknown",
        }
    }
}

/// What a device says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub name: String,
    pub vendor: String,
    /// Backend as filter strings write it: `opencl`, `level_zero`, `cuda`, `hip`, ...
    pub backend: String,
    pub device_type: DeviceType,
    pub driver_version: String,
    pub global_mem_size: u64,
    pub max_mem_alloc_size: u64,
    /// Bytes of work-group local memory (CUDA: shared memory a block may opt in to); 0
    /// where the runtime does not say.
    pub local_mem_size: u64,
    /// SYCL aspect names (`usm_device_allocations`, `usm_host_allocations`, `fp64`, ...).
    pub aspects: Vec<String>,
}

/// A device of a provider.
pub trait Device: Send + Sync + Any {
    fn info(&self) -> &DeviceInfo;
    /// Same physical device (and same provider).
    fn same_device(&self, other: &dyn Device) -> bool;
    /// The context every default queue on this device shares (SYCL: the platform's
    /// default context; CUDA: the primary context).
    fn default_context(&self) -> Result<Arc<dyn Context>>;
    /// A context of its own, distinct from the default one.
    fn create_context(&self) -> Result<Arc<dyn Context>>;
    /// Whether the device's own memory is plain host memory the CPU can read and write
    /// (a CPU device: the device is the host). Then copies need no runtime call.
    fn device_memory_is_host_memory(&self) -> bool {
        false
    }
    /// Peer access to other devices of the same runtime, and copies between them, where
    /// the runtime offers it (`memory::peer` checks the pair first).
    fn peer(&self) -> Option<&dyn peer::PeerAccess> {
        None
    }
    /// The pinned host buffers the provider keeps for copies between pageable memory and
    /// this device (CUDA's staging buffers), where it keeps any.
    fn staging(&self) -> Option<&held::Held> {
        None
    }
    /// Whether programs of `language` build for this device in this process (dpctl's
    /// `SyclDevice.can_compile`).
    fn can_compile(&self, language: program::SourceLanguage) -> bool {
        let _ = language;
        false
    }
    fn as_any(&self) -> &dyn Any;
}

/// A context: the scope in which USM memory is allocated, named and freed.
pub trait Context: Send + Sync + Any {
    fn devices(&self) -> Vec<Arc<dyn Device>>;
    fn same_context(&self, other: &dyn Context) -> bool;
    /// A new queue (CUDA: a stream) on `device`, which must be one of `devices()`.
    fn create_queue(&self, device: &Arc<dyn Device>) -> Result<Arc<dyn Queue>>;
    /// USM kind of `address` in this context; `Unknown` for any address the context does not
    /// own (stack, heap, another context's memory, 0). Never fails, never aborts.
    fn pointer_kind(&self, address: Address) -> UsmKind;
    /// The device a USM pointer of this context belongs to; an error for a foreign pointer.
    fn pointer_device(&self, address: Address) -> Result<Arc<dyn Device>>;
    /// `(base, size)` of the allocation holding `address`, where the runtime can tell
    /// (CUDA: `cuMemGetAddressRange`). `None` when it cannot.
    fn address_range(&self, address: Address) -> Option<(Address, u64)>;
    /// Bytes of device memory free now, where the runtime can tell (CUDA:
    /// `cuMemGetInfo`); `None` where it cannot.
    fn free_memory(&self) -> Option<u64> {
        None
    }
    /// Sharing of device memory with other processes, where the runtime offers it.
    fn ipc(&self) -> Option<&dyn ipc::Ipc> {
        None
    }
    /// Frees memory this context allocated.
    ///
    /// # Safety
    /// `address` is an allocation of this context (from `Queue::allocate`) that nothing will
    /// read or write again, freed once.
    unsafe fn free(&self, address: Address) -> Result<()>;
    /// Registering host memory it did not allocate, where the runtime can.
    fn host_registration(&self) -> Option<&dyn registration::HostRegistration> {
        None
    }
    /// Building programs (kernels) for this context's devices, where the runtime can.
    fn programs(&self) -> Option<&dyn program::ProgramBuilder> {
        None
    }
    /// A queue with `properties` (in order, profiling); a runtime without them refuses
    /// any but the default.
    fn create_queue_with(
        &self,
        device: &Arc<dyn Device>,
        properties: program::QueueProperties,
    ) -> Result<Arc<dyn Queue>> {
        if properties != program::QueueProperties::default() {
            return Err(crate::error::MemoryError::QueueCreation {
                message: "this runtime's queues take no properties (in_order, enable_profiling)".into(),
            });
        }
        self.create_queue(device)
    }
    fn as_any(&self) -> &dyn Any;
}

/// A queue (CUDA: a stream) on one device of a context: where memory is allocated,
/// copied and filled.
pub trait Queue: Send + Sync + Any {
    fn context(&self) -> Arc<dyn Context>;
    fn device(&self) -> Arc<dyn Device>;
    /// Allocates `nbytes` of `kind` memory (never `Unknown`). `alignment` 0 means the
    /// runtime's default; otherwise a power of two. Refuses what cannot be given safely
    /// (CUDA: managed memory beyond the device's free memory).
    fn allocate(&self, kind: UsmKind, nbytes: u64, alignment: u64) -> Result<Address>;
    /// Copies all of `src` into the start of `dst` (an error if `dst` is shorter); either
    /// may be USM memory of this queue's context or plain host memory. Returns when the
    /// copy is complete.
    fn memcpy(&self, dst: WriteBytes<'_>, src: ReadBytes<'_>) -> Result<()>;
    /// Fills `dst` with `value`. Returns when done.
    fn memset(&self, dst: WriteBytes<'_>, value: u8) -> Result<()>;
    fn wait(&self) -> Result<()>;
    /// `memcpy` whose host side lies in a range registered through this queue's context,
    /// which the caller has checked is still the memory registered: the runtime may DMA it
    /// directly. Plain `memcpy` is never given host memory overlapping a registration.
    fn memcpy_registered(&self, dst: WriteBytes<'_>, src: ReadBytes<'_>) -> Result<()> {
        self.memcpy(dst, src)
    }
    /// Prefetch and advice for shared memory, where the runtime has them.
    fn shared_memory_hints(&self) -> Option<&dyn hints::SharedMemoryHints> {
        None
    }
    /// Kernels and asynchronous operations with events, where the runtime has them.
    fn submissions(&self) -> Option<&dyn program::Submissions> {
        None
    }
    /// The properties the queue was made with.
    fn properties(&self) -> program::QueueProperties {
        program::QueueProperties::default()
    }
    /// The runtime's own objects under the queue, for other addons.
    fn native_handles(&self) -> Option<program::NativeQueue> {
        None
    }
}

/// A source of devices. Enumerated once per process.
pub trait Provider: Send + Sync {
    fn devices(&self) -> Vec<Arc<dyn Device>>;
    /// Whether this provider's devices are already listed when an earlier provider lists
    /// `device` (a SYCL runtime with a CUDA backend shows the NVIDIA devices the CUDA
    /// provider would list again). Then the registry leaves this provider out.
    fn superseded_by(&self, _device: &dyn Device) -> bool {
        false
    }
    /// Whether the runtime under this provider applies `ONEAPI_DEVICE_SELECTOR` to its
    /// own devices (a SYCL runtime does). When not, the registry applies it.
    fn applies_device_selector(&self) -> bool {
        false
    }
    /// Frees host memory the provider keeps for copies and can make again (staging
    /// buffers); returns the bytes freed.
    fn trim_spare(&self) -> u64 {
        0
    }
}

/// A provider that loaded, or why it did not.
pub struct ProviderLoad {
    /// The provider's name, for messages when it did not load.
    pub name: &'static str,
    /// The provider, or why it did not load.
    pub provider: Result<Arc<dyn Provider>>,
    /// Whether the provider's runtime is on this machine at all. Errors that say no device
    /// was found leave out a provider whose runtime is not (no NVIDIA driver on a machine
    /// without NVIDIA hardware is nothing to fix); the diagnostics still list it.
    pub runtime_present: bool,
}
