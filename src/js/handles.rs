//! The values behind the binding's handles (see `js::slab`): what one environment holds
//! for the JS objects that hold ids, and the one lookup of each kind of handle, with one
//! error for each way it can fail (a stale device, context or queue id is an internal
//! error: the JS layer holds those objects; a memory id that finds nothing was freed).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use napi::Env;

use crate::error::{MemoryError, Result};
use crate::js::ffi::{self, JsRef};
use crate::js::slab::Slab;
use crate::memory::registration::Registration;
use crate::memory::usm::Owner;
use crate::memory::usm::UsmMemory;
use crate::runtime::ranges::RangeBook;
use crate::runtime::{Address, Context, Device, Queue};

/// What keeps the memory under a zero-copy `ArrayBuffer` alive while the engine can
/// still reach it: the allocation, when it is ours (foreign memory is kept alive by the
/// exporter, which the JS layer ties to the buffer). Shared between the memory handle
/// and the buffer's finalizer; `memFree` empties it once it has detached the buffer.
pub(crate) type BufferLease = Rc<RefCell<Option<Owner>>>;

/// The most one allocation reports to V8. V8 collects whenever external memory grows by
/// more than its soft limit (64 MiB) since the last collection, so reporting a large block
/// in full would force a collection on every allocation of an allocate-and-free loop;
/// capped, a loop never does, and dropped blocks still add up to a collection soon.
const REPORT_CAP: u64 = 32 << 20;

/// A memory handle: the memory until `memFree`, and what this handle reported to V8.
pub struct MemoryHandle {
    pub(crate) memory: UsmMemory,
    /// Bytes of an allocation this handle made (up to `REPORT_CAP`), reported to V8 as
    /// external memory so that memory dropped without `free()` drives garbage collection.
    /// Every kind is reported, with or without a `buffer`: V8 tracks an external
    /// `ArrayBuffer`'s bytes only as backing-store statistics, which do not schedule
    /// collections.
    reported: i64,
    /// The zero-copy `ArrayBuffer` (a weak reference), once made, with its lease: the
    /// binding detaches exactly this buffer at `memFree` (never one the caller names).
    pub(crate) buffer: Cell<Option<(BufferLease, JsRef)>>,
}

impl MemoryHandle {
    /// A handle that reports nothing to V8: a view, or memory some other object owns.
    pub(crate) fn new(memory: UsmMemory) -> Self {
        MemoryHandle { memory, reported: 0, buffer: Cell::new(None) }
    }

    /// A handle for memory this call allocated, reported to V8 (up to `REPORT_CAP`).
    pub(crate) fn allocated(env: &Env, memory: UsmMemory) -> Self {
        let reported = i64::try_from(memory.nbytes().min(REPORT_CAP)).unwrap_or(i64::MAX);
        ffi::adjust_external_memory(env, reported);
        MemoryHandle { memory, reported, buffer: Cell::new(None) }
    }

    /// Takes back what this handle reported to V8 (the handle is being given back).
    pub(crate) fn unreport(self, env: &Env) {
        if self.reported != 0 {
            ffi::adjust_external_memory(env, -self.reported);
        }
    }
}

/// One live registration of host memory (`js::registration`).
pub(crate) struct RegistrationHandle {
    pub(crate) registration: Arc<Registration>,
    /// The `ArrayBuffer` or `SharedArrayBuffer` whose bytes were registered, held weakly
    /// (its `HostRegistration` holds it, so a cycle through JS is collectable).
    pub(crate) buffer: JsRef,
    /// `(data, byteLength)` of the whole `ArrayBuffer` when registered; `None` for a
    /// `SharedArrayBuffer`, which can neither be detached nor move.
    pub(crate) extent: Option<(u64, usize)>,
}

/// This environment's registrations: a slab by id, and their ids by range, so a copy
/// finds the registrations it overlaps in O(log n).
#[derive(Default)]
pub(crate) struct Registrations {
    slab: Slab<RegistrationHandle>,
    by_range: RangeBook<f64>,
}

impl Registrations {
    /// The handle of a live id.
    pub(crate) fn get(&self, id: f64) -> Option<&RegistrationHandle> {
        self.slab.get(id)
    }

    /// The ids of the registrations that overlap `address..address + len`.
    pub(crate) fn overlapping(&self, address: Address, len: u64) -> Vec<f64> {
        self.by_range.overlapping(address, len).map(|range| *range.value).collect()
    }

    /// Stores `handle`, whose registration the model accepted (it overlaps no live
    /// one): a handle of ours over its range is one whose registration ended (found
    /// stale by another thread), taken out and returned to be dropped.
    fn insert(&mut self, handle: RegistrationHandle) -> Result<(f64, Vec<RegistrationHandle>)> {
        let (address, len) = (handle.registration.address(), handle.registration.len());
        let mut ended = Vec::new();
        while let Some((start, id)) = self.by_range.first_overlapping(address, len).map(|r| (r.start, *r.value)) {
            self.by_range.remove(start);
            ended.extend(self.slab.remove(id));
        }
        let id = self.slab.insert(handle).ok_or(MemoryError::TooManyObjects)?;
        let _ = self.by_range.insert(address, len, id);
        Ok((id, ended))
    }

    /// Takes a handle out; its id is dead from now on.
    pub(crate) fn remove(&mut self, id: f64) -> Option<RegistrationHandle> {
        let handle = self.slab.remove(id)?;
        self.by_range.remove_if(handle.registration.address(), |&holder| holder == id);
        Some(handle)
    }

    /// Whether there is none (the copy path's first test).
    pub(crate) fn is_empty(&self) -> bool {
        self.by_range.is_empty()
    }
}

/// The values behind this environment's handles.
#[derive(Default)]
pub struct Handles {
    devices: Slab<Arc<dyn Device>>,
    contexts: Slab<Arc<dyn Context>>,
    queues: Slab<Arc<dyn Queue>>,
    pub(crate) memories: Slab<MemoryHandle>,
    pub(crate) registrations: Registrations,
    /// Programs, kernels and events (`js::program`).
    pub(crate) kernels: crate::js::program_handles::KernelHandles,
}

fn stale(what: &str) -> MemoryError {
    MemoryError::StaleHandle { what: what.into() }
}

/// Which slab a `releaseHandle` call names (the JS layer's `DEVICE_HANDLE` ...
/// `MEMORY_HANDLE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandleKind {
    Device = 0,
    Context = 1,
    Queue = 2,
    Memory = 3,
}

impl HandleKind {
    /// The kind a JS number names; anything else is memory (as the JS layer never sends).
    pub fn from_number(value: u32) -> HandleKind {
        match value {
            0 => HandleKind::Device,
            1 => HandleKind::Context,
            2 => HandleKind::Queue,
            _ => HandleKind::Memory,
        }
    }
}

impl Handles {
    /// The device of a live id.
    pub(crate) fn device(&self, id: f64) -> Result<Arc<dyn Device>> {
        self.devices.get(id).cloned().ok_or_else(|| stale("device"))
    }

    /// The context of a live id.
    pub(crate) fn context(&self, id: f64) -> Result<Arc<dyn Context>> {
        self.contexts.get(id).cloned().ok_or_else(|| stale("context"))
    }

    /// The queue of a live id.
    pub(crate) fn queue(&self, id: f64) -> Result<Arc<dyn Queue>> {
        self.queues.get(id).cloned().ok_or_else(|| stale("queue"))
    }

    /// The memory of a live handle (a cheap clone: two `Arc`s); `ERR_USM_FREED` after
    /// `memFree`. The one way to get a handle's memory.
    pub(crate) fn memory(&self, id: f64) -> Result<UsmMemory> {
        self.memory_ref(id).cloned()
    }

    /// The memory of a memory handle, borrowed: for a call that uses it while it holds the
    /// handles and runs no JS meanwhile (no clone of its queue and owner to take back).
    pub(crate) fn memory_ref(&self, id: f64) -> Result<&UsmMemory> {
        self.memories.get(id).map(|handle| &handle.memory).ok_or(MemoryError::Freed)
    }

    /// A new device handle.
    pub(crate) fn add_device(&mut self, device: Arc<dyn Device>) -> Result<f64> {
        self.devices.insert(device).ok_or(MemoryError::TooManyObjects)
    }

    /// A new context handle.
    pub(crate) fn add_context(&mut self, context: Arc<dyn Context>) -> Result<f64> {
        self.contexts.insert(context).ok_or(MemoryError::TooManyObjects)
    }

    /// A new queue handle.
    pub(crate) fn add_queue(&mut self, queue: Arc<dyn Queue>) -> Result<f64> {
        self.queues.insert(queue).ok_or(MemoryError::TooManyObjects)
    }

    /// A new memory handle.
    pub(crate) fn add_memory(&mut self, handle: MemoryHandle) -> Result<f64> {
        self.memories.insert(handle).ok_or(MemoryError::TooManyObjects)
    }

    /// A new registration handle, and the handles of ours it replaces (see
    /// [`Registrations`]), to be dropped once the handles are no longer borrowed.
    pub(crate) fn add_registration(&mut self, handle: RegistrationHandle) -> Result<(f64, Vec<RegistrationHandle>)> {
        self.registrations.insert(handle)
    }

    /// Takes a device, context or queue handle out (its JS object is gone). A memory
    /// handle comes back to the caller, which takes back what it reported to V8 once no
    /// borrow of the handles is held.
    pub(crate) fn release(&mut self, kind: HandleKind, id: f64) -> Option<MemoryHandle> {
        match kind {
            HandleKind::Device => drop(self.devices.remove(id)),
            HandleKind::Context => drop(self.contexts.remove(id)),
            HandleKind::Queue => drop(self.queues.remove(id)),
            HandleKind::Memory => return self.memories.remove(id),
        }
        None
    }

    /// At environment teardown the environment releases every reference itself; deleting
    /// them then could touch it after that, so the buffers' references are forgotten.
    pub(crate) fn forget_references(&mut self) {
        self.registrations.by_range = RangeBook::new();
        self.registrations.slab.drain(|handle| std::mem::forget(handle.buffer));
        self.kernels.forget_references();
        self.memories.for_each(|handle| {
            if let Some((_, reference)) = handle.buffer.take() {
                std::mem::forget(reference);
            }
        });
    }
}
