//! `prefetch()` and `memAdvise()` of shared memory: run on libuv's thread pool (a
//! migration of a large block takes milliseconds) and resolve with whether the runtime
//! acted on the hint. The task holds the memory's allocation until it settles.

use napi::bindgen_prelude::{AsyncTask, ToNapiValue, Unknown};
use napi::{Env, ScopedTask};
use napi_derive::napi;

use crate::error::MemoryError;
use crate::js::errors::{to_js_error, OrThrow};
use crate::js::lookup::lookup;
use crate::memory::usm::UsmMemory;
use crate::runtime::hints::{Advice, HintOutcome, Location};

/// What `prefetch()` or `memAdvise()` asks of the runtime.
pub enum Hint {
    Prefetch(Location),
    Advise(Advice),
}

/// A prefetch or advice run on the libuv thread pool; the task holds the memory.
pub struct HintTask {
    memory: UsmMemory,
    hint: Hint,
}

impl<'task> ScopedTask<'task> for HintTask {
    type Output = Result<HintOutcome, MemoryError>;
    type JsValue = Unknown<'task>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(match self.hint {
            Hint::Prefetch(to) => self.memory.prefetch(to),
            Hint::Advise(advice) => self.memory.advise(advice),
        })
    }

    fn resolve(&mut self, env: &'task Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        let outcome = output.map_err(|err| to_js_error(env, err))?;
        (outcome == HintOutcome::Applied).into_unknown(env)
    }
}

fn location(to_host: bool) -> Location {
    if to_host {
        Location::Host
    } else {
        Location::Device
    }
}

/// Migrates shared memory to the device (`to_host` false) or the host; resolves `true`
/// when the runtime acted on it.
#[napi(ts_return_type = "Promise<boolean>")]
pub fn mem_prefetch(env: &Env, memory_id: f64, to_host: bool) -> napi::Result<AsyncTask<HintTask>> {
    let memory = lookup(env, |h| h.memory(memory_id))?;
    Ok(AsyncTask::new(HintTask { memory, hint: Hint::Prefetch(location(to_host)) }))
}

/// `advice` is one of `Advice::NAMES` (the JS layer checked it).
#[napi(ts_return_type = "Promise<boolean>")]
pub fn mem_advise(env: &Env, memory_id: f64, advice: String, to_host: bool) -> napi::Result<AsyncTask<HintTask>> {
    let memory = lookup(env, |h| h.memory(memory_id))?;
    let advice = Advice::from_name(&advice, location(to_host))
        .ok_or_else(|| MemoryError::UnknownAdvice { advice: advice.clone() })
        .or_throw(env)?;
    Ok(AsyncTask::new(HintTask { memory, hint: Hint::Advise(advice) }))
}
