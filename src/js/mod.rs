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

/// See `EnvState::builtins`. Everything is taken from the intrinsics at load time, and
/// the objects handed to users are made by literals (own data properties), so globals or
/// prototype setters that a program replaces later change nothing here.
const BUILTINS: &str = r#"(() => {
  const { Uint8Array, Error, TypeError, RangeError, Reflect, Object, SharedArrayBuffer } = globalThis;
  const apply = Reflect.apply;
  const defineProperty = Object.defineProperty;
  const sharedByteLength = Object.getOwnPropertyDescriptor(SharedArrayBuffer.prototype, 'byteLength').get;
  return {
    Uint8Array, Error, TypeError, RangeError,
    // The getter's brand check: true only for a real SharedArrayBuffer, and no trap or
    // user getter runs (a Proxy fails it).
    isSharedArrayBuffer(value) {
      try { apply(sharedByteLength, value, []); return true; } catch { return false; }
    },
    makeError(Class, message, code) {
      const error = new Class(message);
      defineProperty(error, 'code', { value: code, writable: true, enumerable: true, configurable: true });
      return error;
    },
    makeInterface(pointer, readOnly, nbytes, syclobj) {
      return { data: [pointer, readOnly], shape: [nbytes], strides: null, typestr: '|u1', version: 1, syclobj };
    },
  };
})()"#;

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
