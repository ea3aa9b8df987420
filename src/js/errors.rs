//! The one place where a `MemoryError` becomes a JS error: the right class (`TypeError`,
//! `RangeError`, `Error`, or one of the exported `USMAllocationError`,
//! `SyclQueueCreationError`, `SyclDeviceCreationError`), the message, and a `code`.

use std::cell::RefCell;

use napi::bindgen_prelude::{Function, JsObjectValue, Object, Unknown};
use napi::{Env, JsValue};

use crate::error::{ErrorClass, MemoryError};
use crate::js::ffi::JsRef;

/// The custom error classes, defined once per JS environment (main thread or worker).
const ERROR_CLASSES_SOURCE: &str = r#"(() => {
  const make = (name) => ({ [name]: class extends Error {
    constructor(message, options) { super(message, options); }
    get name() { return name; }
  } })[name];
  return {
    USMAllocationError: make('USMAllocationError'),
    SyclQueueCreationError: make('SyclQueueCreationError'),
    SyclDeviceCreationError: make('SyclDeviceCreationError'),
  };
})()"#;

thread_local! {
    static ERROR_CLASSES: RefCell<Option<JsRef>> = const { RefCell::new(None) };
}

/// Defines the error classes for this environment and puts them on `exports`.
pub fn install_error_classes(env: &Env, exports: &mut Object) -> napi::Result<()> {
    let classes: Object = env.run_script(ERROR_CLASSES_SOURCE)?;
    for name in ["USMAllocationError", "SyclQueueCreationError", "SyclDeviceCreationError"] {
        let class: Unknown = classes.get_named_property(name)?;
        exports.set_named_property(name, class)?;
    }
    let reference = JsRef::new(&classes.to_unknown())?;
    ERROR_CLASSES.with(|cell| *cell.borrow_mut() = Some(reference));
    Ok(())
}

fn constructor<'env>(env: &'env Env, class: ErrorClass) -> napi::Result<Function<'env, String, Unknown<'env>>> {
    let builtin = match class {
        ErrorClass::Error => Some("Error"),
        ErrorClass::TypeError => Some("TypeError"),
        ErrorClass::RangeError => Some("RangeError"),
        _ => None,
    };
    if let Some(name) = builtin {
        return env.get_global()?.get_named_property(name);
    }
    let name = match class {
        ErrorClass::UsmAllocation => "USMAllocationError",
        ErrorClass::QueueCreation => "SyclQueueCreationError",
        _ => "SyclDeviceCreationError",
    };
    let classes = ERROR_CLASSES.with(|cell| cell.borrow().as_ref().map(|r| r.get(env)))
        .transpose()?
        .ok_or_else(|| napi::Error::from_reason("dpctl-memory: error classes are not installed"))?;
    classes.coerce_to_object()?.get_named_property(name)
}

fn build(env: &Env, err: &MemoryError) -> napi::Result<napi::Error> {
    let ctor = constructor(env, err.class())?;
    let value = ctor.new_instance(err.to_string())?;
    let mut object = value.coerce_to_object()?;
    object.set_named_property("code", err.code())?;
    Ok(napi::Error::from(value))
}

/// Turns a model error into the JS error napi-rs will throw.
pub fn to_js_error(env: &Env, err: MemoryError) -> napi::Error {
    build(env, &err).unwrap_or_else(|_| napi::Error::new(napi::Status::GenericFailure, format!("[{}] {err}", err.code())))
}

pub trait OrThrow<T> {
    /// Converts the model's error into a JS error for `env`.
    fn or_throw(self, env: &Env) -> napi::Result<T>;
}

impl<T> OrThrow<T> for Result<T, MemoryError> {
    fn or_throw(self, env: &Env) -> napi::Result<T> {
        self.map_err(|err| to_js_error(env, err))
    }
}
