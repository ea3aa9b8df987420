//! The JS surface: `#[napi]` classes and functions, argument conversion, and the one
//! conversion of model errors into JS errors. napi types stay in this layer.
pub mod async_ops;
pub mod binding;
pub mod errors;
pub mod ffi;
pub mod handles;
pub mod hints;
pub mod json;
pub mod pool;
pub mod registration;
pub mod slab;
pub mod state;

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
    binding::define_fast_calls(&env, &mut exports)?;
    let builtins = ffi::JsRef::new(&env.run_script::<_, Unknown>(BUILTINS)?)?;
    state::install(&env, state::EnvState { builtins, handles: Default::default() })
}
