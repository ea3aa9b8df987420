//! Registered host memory in the binding: `hostRegister` (the JS `registerHost`), its end,
//! and the check every copy of a host buffer makes before a registration may serve it.
//!
//! A registration keeps its buffer object alive (a strong reference) while it lasts: the
//! memory it pinned then cannot be collected and freed under the runtime's registration,
//! and JS cannot tell a registered buffer's collection from its registration's. Collection
//! of the `HostRegistration` object ends it (the JS layer's `FinalizationRegistry`), as do
//! `unregister()` and `[Symbol.dispose]`. What a strong reference cannot stop is a detach
//! (`transfer()`, `postMessage` with a transfer list) or a resize; those the check finds.

use std::sync::Arc;

use napi::bindgen_prelude::{Float64Array, Unknown};
use napi::Env;
use napi_derive::napi;

use crate::error::MemoryError;
use crate::js::errors::OrThrow;
use crate::js::ffi::{self, HostBytes};
use crate::js::handles::RegistrationHandle;
use crate::js::lookup::{handles, lookup};
use crate::memory::registration::Registration;
use crate::runtime::ReadBytes;

/// Whether the registered buffer still holds the bytes it held when registered: alive
/// (it is, held strongly), not detached, same data pointer and length.
fn still_holds(env: &Env, handle: &RegistrationHandle) -> napi::Result<bool> {
    let Some(extent) = handle.extent else { return Ok(true) };
    let buffer = handle.buffer.get(env)?;
    Ok(ffi::arraybuffer_extent(env, &buffer)? == Some(extent))
}

/// The registration a copy of `bytes` may use: one whose buffer is the object `bytes`
/// lives in, still holding its registered bytes, with `bytes` inside it. A registration
/// this copy overlaps whose buffer no longer holds its bytes (detached, transferred,
/// resized) is ended now.
pub(crate) fn vouched(env: &Env, bytes: &HostBytes) -> napi::Result<Option<Arc<Registration>>> {
    let (address, len) = (bytes.address(), bytes.byte_length() as u64);
    // The Node-API calls below run no JS, so the handles stay borrowed throughout.
    let mut handles = handles(env)?;
    let overlapping = handles.registrations.ids_where(|handle| {
        let r = &handle.registration;
        address < r.address().saturating_add(r.len()) && r.address() < address.saturating_add(len.max(1))
    });
    let mut found = None;
    let mut stale = Vec::new();
    for id in overlapping {
        let Some(handle) = handles.registrations.get(id) else { continue };
        if !still_holds(env, handle)? {
            stale.push(id);
            continue;
        }
        if bytes.in_buffer(env, &handle.buffer.get(env)?)? && handle.registration.covers(address, len) {
            found = Some(handle.registration.clone());
        }
    }
    let ended: Vec<RegistrationHandle> = stale.into_iter().filter_map(|id| handles.registrations.remove(id)).collect();
    drop(handles);
    drop(ended);
    Ok(found)
}

/// Registers the bytes of a host buffer (the JS layer passes an `ArrayBuffer`, a view,
/// or a `Uint8Array` over a `SharedArrayBuffer`) with the runtime of the queue.
/// Returns `[id, registered (0 or 1), byteLength]`.
#[napi]
pub fn host_register(env: &Env, queue_id: f64, host: Unknown) -> napi::Result<Float64Array> {
    let queue = lookup(env, |h| h.queue(queue_id))?;
    let bytes = ffi::host_bytes(env, &host)?
        .ok_or_else(|| MemoryError::NotHostBuffer { what: "buffer".into() })
        .or_throw(env)?;
    // Stale registrations over these bytes end first, so that they do not block this one.
    drop(vouched(env, &bytes)?);
    let buffer = bytes.buffer_ref(env)?;
    let extent = if bytes.is_shared(env)? { None } else { ffi::arraybuffer_extent(env, &buffer.get(env)?)? };
    // SAFETY: the buffer's bytes are mapped now (the calling frame holds the buffer); the
    // model's rules keep copies from using them once they may not be the buffer's.
    let registration = bytes
        .with_bytes(|range| unsafe { Registration::new(&queue, ReadBytes::from_raw(range.address(), range.len())) })
        .or_throw(env)?;
    let registered = f64::from(u8::from(registration.registered()));
    let len = registration.len() as f64;
    let id = lookup(env, |h| h.add_registration(RegistrationHandle { registration, buffer, extent }))?;
    Ok(Float64Array::new(vec![id, registered, len]))
}

/// Ends a registration (`unregister()`, `[Symbol.dispose]`, or its object's collection).
/// A copy that uses it still holds it: the runtime lets go when that copy is done. An id
/// already ended is a no-op.
#[napi]
pub fn host_unregister(env: &Env, id: f64) -> napi::Result<()> {
    let handle = handles(env)?.registrations.remove(id);
    drop(handle);
    Ok(())
}
