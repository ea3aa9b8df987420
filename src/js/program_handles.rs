//! The handles of programs, kernels and events of one environment (`js::program` is
//! their binding; `js::handles` keeps them with the other handles). Apart from both, so
//! that neither file imports the other.

use std::cell::Cell;
use std::sync::Arc;

use crate::js::ffi::JsRef;
use crate::js::slab::Slab;
use crate::runtime::program::{Event, Kernel, Program};

/// An event handle: the event, and the Promise of an asynchronous submission until the
/// JS layer takes it.
pub(crate) struct EventEntry {
    pub(crate) event: Arc<dyn Event>,
    pub(crate) promise: Cell<Option<JsRef>>,
}

/// This environment's programs, kernels and events.
#[derive(Default)]
pub struct KernelHandles {
    pub(crate) programs: Slab<Arc<dyn Program>>,
    pub(crate) kernels: Slab<Arc<dyn Kernel>>,
    pub(crate) events: Slab<EventEntry>,
}

impl KernelHandles {
    /// At `exit()`: lets go of every program, kernel and event without releasing them. The
    /// SYCL runtime's own destructors may have run by then (they were registered after this
    /// addon's exit hook), and a SYCL-source program released after them crashes; the
    /// process is ending, so the system takes them back.
    pub(crate) fn leak_at_exit(&mut self) {
        std::mem::forget(std::mem::take(self));
    }

    /// At teardown the environment releases its references itself (see `Handles`).
    pub(crate) fn forget_references(&mut self) {
        self.events.for_each(|entry| {
            if let Some(reference) = entry.promise.get_mut().take() {
                std::mem::forget(reference);
            }
        });
    }
}
