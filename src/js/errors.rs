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

/// Numbers that stand for a message's fields while its template is made: no request is
/// ever of these sizes (both beyond 2^53), so each appears in a message only as a field.
const FIELD_MARKS: [u64; 2] = [9_007_199_254_740_881, 9_007_199_254_740_879];

/// `err`'s message with each of its numeric fields (given as their marks, in the order
/// of `names`) written `{name}`: the template the JS layer fills for the same error.
fn template(err: &MemoryError, names: &[&str]) -> String {
    let mut message = err.to_string();
    for (mark, name) in FIELD_MARKS.iter().zip(names) {
        message = message.replace(&mark.to_string(), &format!("{{{name}}}"));
    }
    message
}

/// The rules and messages the JS layer applies before it calls the binding, from their
/// one source here, as JSON: `{ maxList, advice, messages: { freed, positiveSize,
/// alignment, bufferTooLarge } }` (`alignment` and `bufferTooLarge` are templates with
/// `{alignment}`, `{nbytes}` and `{max_len}`; `positiveSize` has no final period, as the
/// JS layer goes on after it).
#[napi]
pub fn binding_constants() -> String {
    let [first, second] = FIELD_MARKS;
    let positive = MemoryError::ZeroSize.to_string();
    let messages = json::object(&[
        ("freed", json::string(&MemoryError::Freed.to_string())),
        ("profilingNotEnabled", json::string(&MemoryError::ProfilingNotEnabled.to_string())),
        ("positiveSize", json::string(positive.trim_end_matches('.'))),
        ("alignment", json::string(&template(&MemoryError::InvalidAlignment { alignment: first }, &["alignment"]))),
        (
            "bufferTooLarge",
            json::string(&template(
                &MemoryError::HostBufferTooLarge { nbytes: first, max_len: second },
                &["nbytes", "max_len"],
            )),
        ),
    ]);
    json::object(&[
        ("maxList", json::number(f64::from(crate::memory::interface::MAX_LIST))),
        ("advice", json::array(crate::runtime::hints::Advice::NAMES.iter().map(|name| json::string(name)))),
        ("messages", messages),
    ])
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_filled_are_the_errors_messages() {
        let fill = |template: String, fields: &[(&str, u64)]| {
            fields.iter().fold(template, |text, (name, value)| text.replace(&format!("{{{name}}}"), &value.to_string()))
        };
        let alignment = template(&MemoryError::InvalidAlignment { alignment: FIELD_MARKS[0] }, &["alignment"]);
        assert!(alignment.contains("{alignment}"), "{alignment}");
        assert_eq!(fill(alignment, &[("alignment", 3)]), MemoryError::InvalidAlignment { alignment: 3 }.to_string());
        let too_large = template(
            &MemoryError::HostBufferTooLarge { nbytes: FIELD_MARKS[0], max_len: FIELD_MARKS[1] },
            &["nbytes", "max_len"],
        );
        assert_eq!(
            fill(too_large, &[("nbytes", 10), ("max_len", 4)]),
            MemoryError::HostBufferTooLarge { nbytes: 10, max_len: 4 }.to_string()
        );
    }
}
