//! What the binding keeps per JS environment (the main thread and each worker): the
//! built-ins it makes values with, and the values behind its handles. It lives in the
//! environment's instance data, so it goes with the environment; thread-locals would
//! outlive a worker's environment and release references into a freed one.

use std::cell::RefCell;
use std::sync::OnceLock;

use napi::Env;

use crate::js::ffi::{self, JsRef};
use crate::js::handles::Handles;
use crate::memory::process::ProcessRuntime;
use crate::memory::registry::Registry;

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
    ffi::set_instance_data(env, state, |EnvState { builtins, handles }| {
        std::mem::forget(builtins);
        let mut handles = handles.into_inner();
        handles.forget_references();
        drop(handles);
    })
}

/// This environment's state.
pub fn state(env: &Env) -> napi::Result<&'static EnvState> {
    ffi::instance_data::<EnvState>(env)
        .ok_or_else(|| napi::Error::new(napi::Status::GenericFailure, "dpctl-memory: the module state is missing"))
}

/// The process's runtime state, made at the first call of any environment over every
/// provider (the binding is where the providers are named; the model only sees the
/// runtime interface), and shared by all of them: memory made in one thread is used and
/// freed in others. This is the one place it is kept. It finds the other copies of this
/// package through the binding's rendezvous (`js::copies_ffi`).
pub fn process() -> &'static ProcessRuntime {
    static PROCESS: OnceLock<&'static ProcessRuntime> = OnceLock::new();
    PROCESS.get_or_init(|| {
        let process = ProcessRuntime::from_environment(crate::provider::load_all()).leak();
        process.set_others(crate::js::copies_ffi::finder(process.pool()));
        process
    })
}

/// The process's device registry.
pub fn registry() -> &'static Registry {
    process().registry()
}
