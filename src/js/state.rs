//! What the binding keeps per JS environment (the main thread and each worker): the
//! built-ins it makes values with, and the values behind its handles. It lives in the
//! environment's instance data, so it goes with the environment; thread-locals would
//! outlive a worker's environment and release references into a freed one.

use std::cell::RefCell;

use napi::Env;

use crate::js::ffi::JsRef;
use crate::js::handles::Handles;
use crate::memory::registry::{registry_with, Registry};

/// The binding's per-environment state (see the module documentation).
pub struct EnvState {
    /// `{ Uint8Array, makeError }`, taken at load time so that code which replaces
    /// globals later cannot run in the middle of a call.
    pub builtins: JsRef,
    /// The values behind the handles the JS layer holds.
    pub handles: RefCell<Handles>,
}

/// Stores the state for this environment (once, at module init).
pub fn install(env: &Env, state: EnvState) -> napi::Result<()> {
    // At teardown the environment releases every reference itself; deleting them from
    // the finalizer could touch it after that, so the references are forgotten instead.
    // The handles' values are plain Rust: what this environment still held (a worker
    // that exits, memory never freed) goes back now.
    env.set_instance_data(state, (), |context| {
        let EnvState { builtins, handles } = context.value;
        std::mem::forget(builtins);
        let mut handles = handles.into_inner();
        handles.forget_references();
        drop(handles);
    })
}

/// This environment's state.
pub fn state(env: &Env) -> napi::Result<&'static EnvState> {
    env.get_instance_data::<EnvState>()?
        .map(|state| &*state)
        .ok_or_else(|| napi::Error::new(napi::Status::GenericFailure, "dpctl-memory: the module state is missing"))
}

/// The process's device registry over every provider (the binding is where the
/// providers are named; the model only sees the runtime interface).
pub fn registry() -> &'static Registry {
    registry_with(crate::provider::load_all)
}
