//! Argument conversion: JS values to checked Rust values, each failure a `MemoryError`
//! with its code.

use napi::bindgen_prelude::{JsObjectValue, Unknown};
use napi::{Env, JsValue, ValueType};

use crate::error::MemoryError;
use crate::js::errors::OrThrow;

/// `undefined` and `null` are "not given".
pub fn optional(value: Option<Unknown>) -> napi::Result<Option<Unknown>> {
    match value {
        None => Ok(None),
        Some(v) => match v.get_type()? {
            ValueType::Undefined | ValueType::Null => Ok(None),
            _ => Ok(Some(v)),
        },
    }
}

pub fn type_name(value: &Unknown) -> String {
    match value.get_type() {
        Ok(ValueType::Undefined) => "undefined".into(),
        Ok(ValueType::Null) => "null".into(),
        Ok(ValueType::Boolean) => "boolean".into(),
        Ok(ValueType::Number) => "number".into(),
        Ok(ValueType::String) => "string".into(),
        Ok(ValueType::Symbol) => "symbol".into(),
        Ok(ValueType::BigInt) => "bigint".into(),
        Ok(ValueType::Function) => "function".into(),
        Ok(ValueType::Object) => "object".into(),
        _ => "value".into(),
    }
}

pub fn string_arg(env: &Env, value: Unknown, what: &str) -> napi::Result<String> {
    if value.get_type()? != ValueType::String {
        return Err(MemoryError::InvalidArgType(format!("{what} must be a string, not {}", type_name(&value))))
            .or_throw(env);
    }
    value.coerce_to_string()?.into_utf8()?.into_owned()
}

pub fn bool_arg(env: &Env, value: Unknown, what: &str) -> napi::Result<bool> {
    if value.get_type()? != ValueType::Boolean {
        return Err(MemoryError::InvalidArgType(format!("{what} must be a boolean, not {}", type_name(&value))))
            .or_throw(env);
    }
    value.coerce_to_bool()
}

/// A JS number or bigint as an integer, with what was wrong with it otherwise.
pub enum Integer {
    Value(i128),
    NotInteger(String),
    WrongType(String),
}

pub fn integer(value: &Unknown) -> napi::Result<Integer> {
    match value.get_type()? {
        ValueType::Number => {
            let number = value.coerce_to_number()?.get_double()?;
            if number.is_nan() {
                return Ok(Integer::NotInteger("NaN".into()));
            }
            if number.is_infinite() {
                let sign = if number < 0.0 { "-" } else { "" };
                return Ok(Integer::NotInteger(format!("{sign}Infinity")));
            }
            if number.fract() != 0.0 {
                return Ok(Integer::NotInteger(format!("{number}")));
            }
            if number.abs() > 9_007_199_254_740_991.0 {
                return Ok(Integer::NotInteger(format!("{number} (beyond Number.MAX_SAFE_INTEGER: pass a bigint)")));
            }
            Ok(Integer::Value(number as i128))
        }
        ValueType::BigInt => {
            let big = crate::js::ffi::bigint(value)?;
            let (wide, lossless) = big.get_i128();
            if !lossless {
                return Ok(Integer::NotInteger("a bigint beyond 128 bits".into()));
            }
            Ok(Integer::Value(wide))
        }
        _ => Ok(Integer::WrongType(type_name(value))),
    }
}

/// A byte count: a positive safe integer number or a positive bigint below 2^64.
pub fn nbytes_arg(env: &Env, value: &Unknown) -> napi::Result<u64> {
    let positive = "Number of bytes of request allocation must be positive";
    match integer(value)? {
        Integer::Value(n) if n <= 0 => Err(MemoryError::InvalidSize(format!("{positive}, got {n}."))).or_throw(env),
        Integer::Value(n) => u64::try_from(n)
            .map_err(|_| MemoryError::InvalidSize(format!("{n} bytes is beyond 64 bits")))
            .or_throw(env),
        Integer::NotInteger(text) => {
            Err(MemoryError::InvalidSize(format!("{positive} integer, got {text}."))).or_throw(env)
        }
        Integer::WrongType(kind) => Err(MemoryError::InvalidArgType(format!(
            "nbytes must be a number, a bigint, or an object exposing __sycl_usm_array_interface__, not {kind}"
        )))
        .or_throw(env),
    }
}

/// An alignment: an integer number or bigint, 0 (the default) or a power of two.
pub fn alignment_arg(env: &Env, value: &Unknown) -> napi::Result<u64> {
    let bad = |text: String| Err(MemoryError::InvalidAlignment(text)).or_throw(env);
    match integer(value)? {
        Integer::Value(n) if n < 0 => bad(format!("alignment must be 0 or a power of two, got {n}")),
        Integer::Value(n) => match u64::try_from(n) {
            Ok(a) if a == 0 || a.is_power_of_two() => Ok(a),
            _ => bad(format!("alignment must be 0 or a power of two, got {n}")),
        },
        Integer::NotInteger(text) => bad(format!("alignment must be an integer, got {text}")),
        Integer::WrongType(kind) => Err(MemoryError::InvalidArgType(format!("alignment must be a number, not {kind}")))
            .or_throw(env),
    }
}


/// A value for messages. Primitives as `String(value)` writes them (strings quoted);
/// objects and functions by kind only, because converting them would run user code
/// (a `toString` that throws, or one that re-enters the addon).
pub fn display(value: &Unknown) -> String {
    let primitive = |value: &Unknown| -> Option<String> {
        value.coerce_to_string().and_then(|s| s.into_utf8()).and_then(|s| s.into_owned()).ok()
    };
    match value.get_type() {
        Ok(ValueType::String) => primitive(value).map(|s| format!("'{s}'")),
        Ok(ValueType::Number | ValueType::Boolean | ValueType::Undefined | ValueType::Null) => primitive(value),
        Ok(ValueType::BigInt) => primitive(value).map(|s| format!("{s}n")),
        Ok(ValueType::Symbol) => Some("a symbol".into()),
        Ok(ValueType::Function) => Some("a function".into()),
        Ok(ValueType::Object) if value.is_array().unwrap_or(false) => Some("an array".into()),
        _ => Some("an object".into()),
    }
    .unwrap_or_else(|| type_name(value))
}

/// `obj[name]`, letting a throwing getter's exception propagate.
pub fn property<'env>(value: &Unknown<'env>, name: &str) -> napi::Result<Unknown<'env>> {
    let object = value.coerce_to_object()?;
    object.get_named_property::<Unknown>(name)
}

pub fn has_property(value: &Unknown, name: &str) -> napi::Result<bool> {
    match value.get_type()? {
        ValueType::Object | ValueType::Function => value.coerce_to_object()?.has_named_property(name),
        _ => Ok(false),
    }
}
