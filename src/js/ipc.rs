//! Sharing device memory with other processes (`lib/ipc.js`, over `crate::memory::ipc`):
//! whether a device can, the export of a handle, and the open of one.

use napi::bindgen_prelude::Unknown;
use napi::Env;
use napi_derive::napi;

use crate::js::errors::OrThrow;
use crate::js::ffi;
use crate::js::handles::MemoryHandle;
use crate::js::lookup::lookup;
use crate::js::memory::host_bytes;
use crate::js::state::process;
use crate::memory::ipc;
use crate::runtime::{ReadBytes, WriteBytes};

/// Whether memory on the device can be shared with other processes (IPC handles).
#[napi]
pub fn ipc_available(env: &Env, device_id: f64) -> napi::Result<bool> {
    Ok(ipc::available(lookup(env, |h| h.device(device_id))?.as_ref()))
}

/// The IPC handle of the memory, written into the start of the host buffer `dst` (the JS
/// layer makes it in its own realm) when it holds it; returns the handle's length either
/// way, so that a buffer too short is asked again with one long enough.
fn mem_ipc_export(env: &Env, memory_id: f64, dst: &Unknown) -> napi::Result<u32> {
    let dst = host_bytes(env, dst, "dst")?;
    // The export runs no JS, so it runs with the handles borrowed.
    let handle = lookup(env, |h| ipc::export(process().ipc(), h.memory_ref(memory_id)?))?;
    if handle.len() <= dst.byte_length() {
        dst.with_bytes(|to| crate::host::host_memcpy(to, ReadBytes::of_slice(&handle)));
    }
    Ok(handle.len() as u32)
}

/// Opens IPC handle bytes (a host buffer) into `nbytes` of memory used through the queue
/// `queue_id`; returns its memory handle.
fn mem_ipc_open(env: &Env, bytes: &Unknown, queue_id: f64, nbytes: f64) -> napi::Result<f64> {
    let queue = lookup(env, |h| h.queue(queue_id))?;
    let bytes = host_bytes(env, bytes, "handle")?;
    let read = |handle: &mut [u8]| {
        bytes.with_bytes(|src| crate::host::host_memcpy(WriteBytes::of_slice(handle), src.as_read()));
    };
    let memory = ipc::open_with(process().ipc(), bytes.byte_length(), read, &queue, nbytes as u64).or_throw(env)?;
    // Reported to V8 like an allocation: a mapping dropped without free() must drive
    // collections, which close it.
    let handle = MemoryHandle::allocated(env, memory);
    lookup(env, |h| h.add_memory(handle))
}

// The export and the open as fast calls (`ffi::define_fast`): an IPC cycle runs them once
// each between two waits, where napi-rs's per-call machinery runs cold.

fn fast_mem_ipc_export(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    let length = mem_ipc_export(env, ffi::f64_arg(env, &args[0])?, &args[1])?;
    ffi::js_f64(env, f64::from(length))
}

fn fast_mem_ipc_open(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    let (queue_id, nbytes) = (ffi::f64_arg(env, &args[1])?, ffi::f64_arg(env, &args[2])?);
    let id = mem_ipc_open(env, &args[0], queue_id, nbytes)?;
    ffi::js_f64(env, id)
}

/// Puts this file's fast calls on `exports` (as `memory::define_fast_calls` does its own).
pub fn define_fast_calls(env: &Env, exports: &mut napi::bindgen_prelude::Object) -> napi::Result<()> {
    let calls: [(&str, ffi::FastFn); 2] = [("memIpcExport", fast_mem_ipc_export), ("memIpcOpen", fast_mem_ipc_open)];
    for (name, function) in calls {
        ffi::define_fast(env, exports, name, function)?;
    }
    Ok(())
}
