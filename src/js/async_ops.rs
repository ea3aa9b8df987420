//! The asynchronous copies: `copyToHostAsync`, `copyFromHostAsync`,
//! `copyFromDeviceAsync` and `memsetAsync` run on libuv's thread pool and return
//! Promises. Each task holds what it touches: the memory (its `Arc<Allocation>`), the
//! JS buffer (a reference, so GC cannot take it), and, when the host side is itself
//! USM memory of ours, that allocation too. `free()` during a task therefore releases
//! only the object's own reference; the memory goes when the task settles.

use std::sync::Arc;

use napi::bindgen_prelude::{ToNapiValue, Unknown};
use napi::ScopedTask;
use napi::Env;

use crate::error::MemoryError;
use crate::js::errors::to_js_error;
use crate::js::ffi::{TaskBytes, TaskRef};
use crate::memory::allocation::{live_allocation, Allocation};
use crate::memory::usm::UsmMemory;

pub enum Operation {
    ToHost { memory: UsmMemory, host: TaskBytes },
    FromHost { memory: UsmMemory, host: TaskBytes },
    FromDevice { memory: UsmMemory, source: UsmMemory },
    Memset { memory: UsmMemory, value: u8 },
}

pub struct UsmTask {
    operation: Operation,
    /// JS values kept alive until the task settles (host buffers, the source object).
    keep: Vec<TaskRef>,
    /// The value the Promise resolves to (`copyToHostAsync`'s destination).
    result: Option<TaskRef>,
    /// USM memory of ours that the host side points into.
    _host_allocation: Option<Arc<Allocation>>,
}

impl UsmTask {
    pub fn new(operation: Operation, keep: Vec<TaskRef>, result: Option<TaskRef>) -> Self {
        let host_address = match &operation {
            Operation::ToHost { host, .. } | Operation::FromHost { host, .. } => Some(host.address()),
            _ => None,
        };
        let host_allocation = host_address.and_then(live_allocation);
        UsmTask { operation, keep, result, _host_allocation: host_allocation }
    }
}

impl<'task> ScopedTask<'task> for UsmTask {
    type Output = Result<(), MemoryError>;
    type JsValue = Unknown<'task>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(match &self.operation {
            Operation::ToHost { memory, host } => host.with_slice(|dst| memory.copy_to_host(dst)),
            Operation::FromHost { memory, host } => host.with_slice(|src| memory.copy_from_host(src)),
            Operation::FromDevice { memory, source } => memory.copy_from_device(source),
            Operation::Memset { memory, value } => memory.memset(*value),
        })
    }

    fn resolve(&mut self, env: &'task Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        output.map_err(|err| to_js_error(env, err))?;
        match &self.result {
            Some(result) => result.get(env),
            None => ().into_unknown(env),
        }
    }

    fn finally(self, _env: Env) -> napi::Result<()> {
        drop(self.keep);
        drop(self.result);
        Ok(())
    }
}
