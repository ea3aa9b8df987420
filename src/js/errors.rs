//! The one place where a `MemoryError` becomes a JS error: the right class (`TypeError`,
//! `RangeError`, `Error`, or one of the exported `USMAllocationError`,
//! `SyclQueueCreationError`, `SyclDeviceCreationError`), the message, and a `code`.

use napi::bindgen_prelude::{FnArgs, Function, JsObjectValue, Object, Unknown};
use napi::{Env, JsValue};
use napi_derive::napi;

use crate::error::{ErrorClass, MemoryError};
use crate::js::ffi::JsRef;

/// Every `code` a dpctl-memory error can carry (the same strings `MemoryError::code`
/// returns; `__test__/docs.spec.mjs` checks that the two lists agree).
#[napi(string_enum)]
pub enum ErrorCode {
    #[napi(value = "ERR_SUAI_MALFORMED")]
    SuaiMalformed,
    #[napi(value = "ERR_SUAI_OFFSET")]
    SuaiOffset,
    #[napi(value = "ERR_SUAI_VERSION")]
    SuaiVersion,
    #[napi(value = "ERR_SUAI_DATA")]
    SuaiData,
    #[napi(value = "ERR_SUAI_SYCLOBJ")]
    SuaiSyclobj,
    #[napi(value = "ERR_SUAI_SHAPE")]
    SuaiShape,
    #[napi(value = "ERR_SUAI_TYPESTR")]
    SuaiTypestr,
    #[napi(value = "ERR_SUAI_STRIDES")]
    SuaiStrides,
    #[napi(value = "ERR_INVALID_ARG_TYPE")]
    InvalidArgType,
    #[napi(value = "ERR_INVALID_SIZE")]
    InvalidSize,
    #[napi(value = "ERR_INVALID_ALIGNMENT")]
    InvalidAlignment,
    #[napi(value = "ERR_INVALID_FILL_VALUE")]
    InvalidFillValue,
    #[napi(value = "ERR_USM_ALLOCATION")]
    UsmAllocation,
    #[napi(value = "ERR_USM_FREED")]
    UsmFreed,
    #[napi(value = "ERR_NOT_USM")]
    NotUsm,
    #[napi(value = "ERR_SUAI_FOREIGN_POINTER")]
    SuaiForeignPointer,
    #[napi(value = "ERR_SUAI_OUT_OF_BOUNDS")]
    SuaiOutOfBounds,
    #[napi(value = "ERR_USM_KIND_MISMATCH")]
    UsmKindMismatch,
    #[napi(value = "ERR_UNKNOWN_USM_TYPE")]
    UnknownUsmType,
    #[napi(value = "ERR_DESTINATION_TOO_SMALL")]
    DestinationTooSmall,
    #[napi(value = "ERR_SOURCE_TOO_LARGE")]
    SourceTooLarge,
    #[napi(value = "ERR_NOT_HOST_ACCESSIBLE")]
    NotHostAccessible,
    #[napi(value = "ERR_READ_ONLY")]
    ReadOnly,
    #[napi(value = "ERR_INVALID_SYCLOBJ")]
    InvalidSyclobj,
    #[napi(value = "ERR_INVALID_FILTER")]
    InvalidFilter,
    #[napi(value = "ERR_DEVICE_NOT_FOUND")]
    DeviceNotFound,
    #[napi(value = "ERR_QUEUE_CREATION")]
    QueueCreation,
    #[napi(value = "ERR_SYCL_RUNTIME")]
    SyclRuntime,
    #[napi(value = "ERR_CUDA_DRIVER")]
    CudaDriver,
    #[napi(value = "ERR_EXTERNAL_BUFFERS_UNSUPPORTED")]
    ExternalBuffersUnsupported,
    #[napi(value = "ERR_USM_BUSY")]
    UsmBusy,
    #[napi(value = "ERR_CONSTRUCT_CALL_REQUIRED")]
    ConstructCallRequired,
    #[napi(value = "ERR_HOST_BUFFER_TOO_LARGE")]
    HostBufferTooLarge,
}

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

/// Defines the error classes for this environment, puts them on `exports`, and returns
/// a reference to them for `EnvState`.
pub fn define_error_classes(env: &Env, exports: &mut Object) -> napi::Result<JsRef> {
    let classes: Object = env.run_script(ERROR_CLASSES_SOURCE)?;
    for name in ["USMAllocationError", "SyclQueueCreationError", "SyclDeviceCreationError"] {
        let class: Unknown = classes.get_named_property(name)?;
        exports.set_named_property(name, class)?;
    }
    JsRef::new(&classes.to_unknown())
}

fn constructor<'env>(env: &'env Env, class: ErrorClass) -> napi::Result<Unknown<'env>> {
    let (source, name) = match class {
        ErrorClass::Error => (&crate::js::state::state(env)?.builtins, "Error"),
        ErrorClass::TypeError => (&crate::js::state::state(env)?.builtins, "TypeError"),
        ErrorClass::RangeError => (&crate::js::state::state(env)?.builtins, "RangeError"),
        ErrorClass::UsmAllocation => (&crate::js::state::state(env)?.error_classes, "USMAllocationError"),
        ErrorClass::QueueCreation => (&crate::js::state::state(env)?.error_classes, "SyclQueueCreationError"),
        _ => (&crate::js::state::state(env)?.error_classes, "SyclDeviceCreationError"),
    };
    source.get(env)?.coerce_to_object()?.get_named_property(name)
}

fn build(env: &Env, err: &MemoryError) -> napi::Result<napi::Error> {
    let ctor = constructor(env, err.class())?;
    let builtins = crate::js::state::state(env)?.builtins.get(env)?.coerce_to_object()?;
    let make: Function<FnArgs<(Unknown, String, &str)>, Unknown> = builtins.get_named_property("makeError")?;
    let value = make.call((ctor, err.to_string(), err.code()).into())?;
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
