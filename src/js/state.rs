//! What the addon keeps per JS environment (the main thread and each worker): the error
//! classes, and the `SyclQueue` object of each device's cached queue. It lives in the
//! environment's instance data, so it goes with the environment; thread-locals would
//! outlive a worker's environment and release references into a freed one.

use std::cell::RefCell;
use std::collections::HashMap;

use napi::Env;

use crate::js::ffi::JsRef;

pub struct EnvState {
    /// `{ USMAllocationError, SyclQueueCreationError, SyclDeviceCreationError }`.
    pub error_classes: JsRef,
    /// The symbol under which a memory object (and its `buffer`) holds the object that
    /// keeps its memory alive (`referenceObj`): an edge the garbage collector can see,
    /// so an exporter that holds its own view can still be collected.
    pub reference_key: JsRef,
    /// The symbol under which a host or shared memory object holds its zero-copy
    /// `ArrayBuffer` (again an edge the collector can see).
    pub buffer_key: JsRef,
    /// The built-ins host buffers are made and viewed with (`Uint8Array`), taken at load
    /// time so that code which replaces globals later cannot run in the middle of a copy.
    pub builtins: JsRef,
    /// One `SyclQueue` object per device filter string, for default allocations.
    pub cached_queues: RefCell<HashMap<String, JsRef>>,
}

/// Stores the state for this environment (once, at module init).
pub fn install(env: &Env, state: EnvState) -> napi::Result<()> {
    // At teardown the environment releases every reference itself; deleting them from
    // the finalizer could touch it after that, so the references are forgotten instead.
    env.set_instance_data(state, (), |context| std::mem::forget(context.value))
}

/// This environment's state.
pub fn state(env: &Env) -> napi::Result<&'static EnvState> {
    env.get_instance_data::<EnvState>()?
        .map(|state| &*state)
        .ok_or_else(|| napi::Error::new(napi::Status::GenericFailure, "dpctl-memory: the module state is missing"))
}
