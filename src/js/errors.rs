//! The one place where a `MemoryError` leaves Rust: a plain error object with the
//! message, the stable `code`, and `errorClass`, the name of the class the JS layer
//! throws it as (made there, in the caller's realm).

use napi::bindgen_prelude::{FnArgs, Function, JsObjectValue, Unknown};
use napi::{Env, JsValue};
use napi_derive::napi;

use crate::error::{ErrorCode, MemoryError};
use crate::js::json;

/// The table of error codes (`crate::error::ErrorCode`) for the JS layer, as JSON:
/// `[{ "name": "UsmFreed", "code": "ERR_USM_FREED", "classes": ["Error"] }, ...]`.
/// `lib/errors.js` builds the exported `ErrorCode` from it, and `__test__/docs.spec.mjs`
/// checks the typings and the README against it.
#[napi]
pub fn error_codes() -> String {
    json::array(ErrorCode::ALL.iter().map(|code| {
        json::object(&[
            ("name", json::string(code.name())),
            ("code", json::string(code.as_str())),
            ("classes", json::array(code.classes().iter().map(|class| json::string(class.js_name())))),
        ])
    }))
}

fn build(env: &Env, err: &MemoryError) -> napi::Result<napi::Error> {
    let builtins = crate::js::state::state(env)?.builtins.get(env)?.coerce_to_object()?;
    let make: Function<FnArgs<(String, &str, &str)>, Unknown> = builtins.get_named_property("makeError")?;
    let value = make.call((err.to_string(), err.code(), err.class().js_name()).into())?;
    Ok(napi::Error::from(value))
}

/// Turns a model error into the JS error napi-rs will throw.
pub fn to_js_error(env: &Env, err: MemoryError) -> napi::Error {
    build(env, &err)
        .unwrap_or_else(|_| napi::Error::new(napi::Status::GenericFailure, format!("[{}] {err}", err.code())))
}

/// Lets binding code end a model call with `.or_throw(env)?`.
pub trait OrThrow<T> {
    /// Converts the model's error into a JS error for `env`.
    fn or_throw(self, env: &Env) -> napi::Result<T>;
}

impl<T> OrThrow<T> for Result<T, MemoryError> {
    fn or_throw(self, env: &Env) -> napi::Result<T> {
        self.map_err(|err| to_js_error(env, err))
    }
}
