//! The JS surface: `#[napi]` classes and functions, argument conversion, and the one
//! conversion of model errors into JS errors. napi types stay in this layer.
pub mod async_ops;
pub mod device;
pub mod errors;
pub mod ffi;
pub mod interface;
pub mod memory;
pub mod pool;
pub mod state;
pub mod values;

use napi::bindgen_prelude::{Object, Unknown};
use napi::Env;
use napi_derive::napi;

/// See `EnvState::builtins`.
const BUILTINS: &str = "({ Uint8Array })";

#[napi(module_exports)]
pub fn init(mut exports: Object, env: Env) -> napi::Result<()> {
    let error_classes = errors::define_error_classes(&env, &mut exports)?;
    let symbol = |description: &str| -> napi::Result<ffi::JsRef> {
        let symbol: Unknown = env.run_script(format!("Symbol('dpctl-memory {description}')"))?;
        ffi::JsRef::new(&symbol)
    };
    let state = state::EnvState {
        error_classes,
        reference_key: symbol("referenceObj")?,
        buffer_key: symbol("buffer")?,
        builtins: ffi::JsRef::new(&env.run_script::<_, Unknown>(BUILTINS)?)?,
        cached_queues: Default::default(),
    };
    state::install(&env, state)
}
