//! The one place where a `MemoryError` leaves Rust: a plain error object with the
//! message, the stable `code`, and `errorClass`, the name of the class the JS layer
//! throws it as (made there, in the caller's realm).

use napi::bindgen_prelude::{FnArgs, Function, JsObjectValue, Unknown};
use napi::{Env, JsValue};
use napi_derive::napi;

use crate::error::{ErrorClass, MemoryError};

/// Every `code` a dpctl-memory error can carry, with the name the exported `ErrorCode`
/// object gives it (`__test__/docs.spec.mjs` checks it against `MemoryError::code`, the
/// typings and the README).
pub const ERROR_CODES: &[(&str, &str)] = &[
    ("SuaiMalformed", "ERR_SUAI_MALFORMED"),
    ("SuaiOffset", "ERR_SUAI_OFFSET"),
    ("SuaiVersion", "ERR_SUAI_VERSION"),
    ("SuaiData", "ERR_SUAI_DATA"),
    ("SuaiSyclobj", "ERR_SUAI_SYCLOBJ"),
    ("SuaiShape", "ERR_SUAI_SHAPE"),
    ("SuaiTypestr", "ERR_SUAI_TYPESTR"),
    ("SuaiStrides", "ERR_SUAI_STRIDES"),
    ("InvalidArgType", "ERR_INVALID_ARG_TYPE"),
    ("InvalidSize", "ERR_INVALID_SIZE"),
    ("InvalidAlignment", "ERR_INVALID_ALIGNMENT"),
    ("InvalidFillValue", "ERR_INVALID_FILL_VALUE"),
    ("UsmAllocation", "ERR_USM_ALLOCATION"),
    ("UsmFreed", "ERR_USM_FREED"),
    ("NotUsm", "ERR_NOT_USM"),
    ("SuaiForeignPointer", "ERR_SUAI_FOREIGN_POINTER"),
    ("SuaiOutOfBounds", "ERR_SUAI_OUT_OF_BOUNDS"),
    ("UsmKindMismatch", "ERR_USM_KIND_MISMATCH"),
    ("UnknownUsmType", "ERR_UNKNOWN_USM_TYPE"),
    ("DestinationTooSmall", "ERR_DESTINATION_TOO_SMALL"),
    ("SourceTooLarge", "ERR_SOURCE_TOO_LARGE"),
    ("NotHostAccessible", "ERR_NOT_HOST_ACCESSIBLE"),
    ("ReadOnly", "ERR_READ_ONLY"),
    ("InvalidSyclobj", "ERR_INVALID_SYCLOBJ"),
    ("InvalidFilter", "ERR_INVALID_FILTER"),
    ("DeviceNotFound", "ERR_DEVICE_NOT_FOUND"),
    ("QueueCreation", "ERR_QUEUE_CREATION"),
    ("SyclRuntime", "ERR_SYCL_RUNTIME"),
    ("CudaDriver", "ERR_CUDA_DRIVER"),
    ("ExternalBuffersUnsupported", "ERR_EXTERNAL_BUFFERS_UNSUPPORTED"),
    ("UsmBusy", "ERR_USM_BUSY"),
    ("ConstructCallRequired", "ERR_CONSTRUCT_CALL_REQUIRED"),
    ("HostBufferTooLarge", "ERR_HOST_BUFFER_TOO_LARGE"),
    ("InvalidThis", "ERR_INVALID_THIS"),
    ("NotCloneable", "ERR_NOT_CLONEABLE"),
    ("Internal", "ERR_INTERNAL"),
    ("ShareTokenInvalid", "ERR_SHARE_TOKEN_INVALID"),
    ("ShareTokenOpened", "ERR_SHARE_TOKEN_OPENED"),
    ("ShareTokenExpired", "ERR_SHARE_TOKEN_EXPIRED"),
    ("ShareTokenRevoked", "ERR_SHARE_TOKEN_REVOKED"),
    ("ShareNotOwned", "ERR_SHARE_NOT_OWNED"),
    ("InvalidTimeout", "ERR_INVALID_TIMEOUT"),
];

/// `ERROR_CODES` for the JS layer, as JSON: `{ name: code, ... }`.
#[napi]
pub fn error_codes() -> String {
    let fields: Vec<(&str, String)> =
        ERROR_CODES.iter().map(|(name, code)| (*name, crate::js::json::string(code))).collect();
    crate::js::json::object(&fields)
}

fn class_name(class: ErrorClass) -> &'static str {
    match class {
        ErrorClass::Error => "Error",
        ErrorClass::TypeError => "TypeError",
        ErrorClass::RangeError => "RangeError",
        ErrorClass::UsmAllocation => "USMAllocationError",
        ErrorClass::QueueCreation => "SyclQueueCreationError",
        ErrorClass::DeviceCreation => "SyclDeviceCreationError",
    }
}

fn build(env: &Env, err: &MemoryError) -> napi::Result<napi::Error> {
    let builtins = crate::js::state::state(env)?.builtins.get(env)?.coerce_to_object()?;
    let make: Function<FnArgs<(String, &str, &str)>, Unknown> = builtins.get_named_property("makeError")?;
    let value = make.call((err.to_string(), err.code(), class_name(err.class())).into())?;
    Ok(napi::Error::from(value))
}

/// Turns a model error into the JS error napi-rs will throw.
pub fn to_js_error(env: &Env, err: MemoryError) -> napi::Error {
    build(env, &err)
        .unwrap_or_else(|_| napi::Error::new(napi::Status::GenericFailure, format!("[{}] {err}", err.code())))
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
