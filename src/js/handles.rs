//! The values behind the binding's handles (see `js::slab`): what one environment holds
//! for the JS objects that hold ids.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use napi::Env;

use crate::js::ffi::{self, JsRef};
use crate::js::slab::Slab;
use crate::memory::usm::Owner;
use crate::memory::usm::UsmMemory;
use crate::runtime::{Context, Device, Queue};

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

/// The values behind this environment's handles.
#[derive(Default)]
pub struct Handles {
    pub(crate) devices: Slab<Arc<dyn Device>>,
    pub(crate) contexts: Slab<Arc<dyn Context>>,
    pub(crate) queues: Slab<Arc<dyn Queue>>,
    pub(crate) memories: Slab<MemoryHandle>,
    pub(crate) registrations: crate::js::registration::Registrations,
}

impl Handles {
    /// At environment teardown the environment releases every reference itself; deleting
    /// them then could touch it after that, so the buffers' references are forgotten.
    pub(crate) fn forget_references(&mut self) {
        self.registrations.forget_references();
        self.memories.for_each(|handle| {
            if let Some((_, reference)) = handle.buffer.take() {
                std::mem::forget(reference);
            }
        });
    }
}
