//! Sharing device memory with other processes (`lib/ipc.js`, over `crate::memory::ipc`):
//! whether a device can, the export of a handle, and the open of one.

use napi::bindgen_prelude::{Float64Array, Unknown};
use napi::Env;
use napi_derive::napi;

use crate::js::errors::OrThrow;
use crate::js::handles::MemoryHandle;
use crate::js::lookup::lookup;
use crate::js::memory::host_bytes;
use crate::js::state::process;
use crate::memory::ipc;
use crate::runtime::WriteBytes;

/// Whether memory on the device can be shared with other processes (IPC handles).
#[napi]
pub fn ipc_available(env: &Env, device_id: f64) -> napi::Result<bool> {
    Ok(ipc::available(lookup(env, |h| h.device(device_id))?.as_ref()))
}

/// The IPC handle of the memory: its bytes, one per element (the JS layer makes the
/// `Uint8Array` in its own realm).
#[napi]
pub fn mem_ipc_export(env: &Env, memory_id: f64) -> napi::Result<Float64Array> {
    let memory = lookup(env, |h| h.memory(memory_id))?;
    let handle = ipc::export(process().ipc(), &memory).or_throw(env)?;
    Ok(Float64Array::new(handle.into_iter().map(f64::from).collect()))
}

/// Opens IPC handle bytes (a host buffer) into `nbytes` of memory used through the queue
/// `queue_id`; returns its memory handle.
#[napi]
pub fn mem_ipc_open(env: &Env, bytes: Unknown, queue_id: f64, nbytes: f64) -> napi::Result<f64> {
    let queue = lookup(env, |h| h.queue(queue_id))?;
    let bytes = host_bytes(env, &bytes, "handle")?;
    let read = |handle: &mut [u8]| {
        bytes.with_bytes(|src| crate::host::host_memcpy(WriteBytes::of_slice(handle), src.as_read()));
    };
    let memory = ipc::open_with(process().ipc(), bytes.byte_length(), read, &queue, nbytes as u64).or_throw(env)?;
    // Reported to V8 like an allocation: a mapping dropped without free() must drive
    // collections, which close it.
    let handle = MemoryHandle::allocated(env, memory);
    lookup(env, |h| h.add_memory(handle))
}
