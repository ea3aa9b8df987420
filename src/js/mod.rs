//! The binding: functions over handles (ids of the values in this environment's slabs,
//! see `slab`), taking and returning primitives, ids and buffers. The JS classes in `lib/`
//! own every object users see, read every option and dictionary, and make every error in
//! their own realm; these functions only convert their arguments and call the Node-free
//! model (`crate::memory`). No user code can run here: the JS layer hands over only
//! primitives, handles, host buffers and plain copies it made of interface fields.
//!
//! One file per feature, as `lib/` has: `devices`, `memory`, `share`, `ipc`,
//! `registration`, `hints`, `pool`, `observe`; and the mechanism they share: `handles` (what the
//! slabs hold, and the one lookup of each), `lookup` (how a function reaches them), `state` (per environment), `ffi` (every
//! `unsafe` Node-API call), `errors`, `json`, `async_ops` (the Promise-returning copies).
//! napi types stay in this layer.
pub mod async_ops;
pub mod copies_ffi;
pub mod devices;
pub mod errors;
pub mod ffi;
pub mod handles;
pub mod handoff;
pub mod hints;
pub mod ipc;
pub mod json;
pub mod lookup;
pub mod memory;
pub mod observe;
pub mod peer;
pub mod pool;
pub mod program;
pub mod program_handles;
pub mod registration;
pub mod share;
pub mod slab;
pub mod state;
// The UCX transport (issue 19).
pub mod transport;
pub mod uv;

use napi::bindgen_prelude::{Object, Unknown};
use napi::Env;
use napi_derive::napi;

/// See `EnvState::builtins`. Taken from the intrinsics at load time, so globals that a
/// program replaces later change nothing here.
const BUILTINS: &str = r#"(() => {
  const { Uint8Array, Error, Object } = globalThis;
  const defineProperty = Object.defineProperty;
  const own = (value) => ({ value, writable: true, enumerable: false, configurable: true });
  return {
    Uint8Array,
    // The binding's errors are plain carriers: the JS layer throws an error of class
    // `errorClass` made in its own realm from `message` and `code`.
    makeError(message, code, errorClass) {
      const error = new Error(message);
      defineProperty(error, 'code', own(code));
      defineProperty(error, 'errorClass', own(errorClass));
      return error;
    },
  };
})()"#;

/// The addon's entry point, once per environment: the fast calls, then this environment's
/// state.
#[napi(module_exports)]
pub fn init(mut exports: Object, env: Env) -> napi::Result<()> {
    memory::define_fast_calls(&env, &mut exports)?;
    observe::define_fast_calls(&env, &mut exports)?;
    transport::define_fast_calls(&env, &mut exports)?;
    ipc::define_fast_calls(&env, &mut exports)?;
    let builtins = ffi::JsRef::new(&env.run_script::<_, Unknown>(BUILTINS)?)?;
    state::install(&env, state::EnvState { builtins, handles: Default::default(), pending: Default::default() })
}
