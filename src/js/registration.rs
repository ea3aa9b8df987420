//! Registered host memory in the binding: `hostRegister` (the JS `registerHost`), its end,
//! and the check every copy of a host buffer makes before a registration may serve it.
//!
//! The `HostRegistration` object holds its buffer (the strong edge is in JS); the binding
//! holds it weakly. So a registration cached by its own buffer (a `WeakMap` keyed by the
//! buffer, a property of it) is a cycle the collector can see through, and goes with its
//! buffer. While the `HostRegistration` is reachable, so is its buffer, and JS cannot
//! tell a registered buffer's collection from its registration's: both are unreachable.
//! Collection of the `HostRegistration` ends the registration (the JS layer's
//! `FinalizationRegistry`), as do `unregister()` and `[Symbol.dispose]`. Until that
//! callback runs the buffer may already be gone; its registration is then stale, as it is
//! after a detach (`transfer()`, `postMessage` with a transfer list) or a resize, and the
//! check below finds it. A copy pins the buffer for its duration: a synchronous copy's
//! caller holds it, an async copy's task does.
//!
//! This environment's registrations are found by range (`Registrations`), so a copy costs
//! a lookup, not a scan of every registration.

use std::sync::Arc;

use napi::bindgen_prelude::{Float64Array, Unknown};
use napi::Env;
use napi_derive::napi;

use crate::error::MemoryError;
use crate::js::errors::OrThrow;
use crate::js::ffi::{self, HostBytes};
use crate::js::handles::RegistrationHandle;
use crate::js::lookup::{handles, lookup};
use crate::js::state::process;
use crate::memory::allocation::owning_allocation;
use crate::memory::registration::{Holder, Registration};
use crate::runtime::ReadBytes;

/// This thread's number for the model's registrations (a JS environment per thread):
/// a registration of a plain `ArrayBuffer` is found stale by a registration of the same
/// bytes from another thread only.
fn this_thread() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    thread_local!(static THIS: u64 = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    THIS.with(|this| *this)
}

/// Whether the registered buffer still holds the bytes it held when registered: alive,
/// not detached, same data pointer and length, and its registration not ended by
/// another thread (which found it stale).
fn still_holds(env: &Env, handle: &RegistrationHandle) -> napi::Result<bool> {
    if handle.registration.ended() {
        return Ok(false);
    }
    let Some(buffer) = handle.buffer.get_if_alive(env)? else { return Ok(false) };
    let Some(extent) = handle.extent else { return Ok(true) };
    Ok(ffi::arraybuffer_extent(env, &buffer)? == Some(extent))
}

/// The registration a copy of `bytes` may use: one whose buffer is the object `bytes`
/// lives in, still holding its registered bytes, with `bytes` inside it. A registration
/// this copy overlaps whose buffer no longer holds its bytes (collected, detached,
/// transferred, resized) is ended now.
pub(crate) fn vouched(env: &Env, bytes: &HostBytes) -> napi::Result<Option<Arc<Registration>>> {
    let (address, len) = (bytes.address(), bytes.byte_length() as u64);
    // The Node-API calls below run no JS, so the handles stay borrowed throughout.
    let mut handles = handles(env)?;
    if handles.registrations.is_empty() {
        return Ok(None);
    }
    let mut found = None;
    let mut stale = Vec::new();
    for id in handles.registrations.overlapping(address, len) {
        let Some(handle) = handles.registrations.get(id) else { continue };
        if !still_holds(env, handle)? {
            stale.push(id);
            continue;
        }
        let Some(buffer) = handle.buffer.get_if_alive(env)? else { continue };
        if bytes.in_buffer(env, &buffer)? && handle.registration.covers(address, len) {
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
    // Stale registrations of ours over these bytes end first, so that they do not block
    // this one (the model ends those of other threads).
    drop(vouched(env, &bytes)?);
    let buffer = bytes.buffer_weak_ref(env)?;
    let shared = bytes.is_shared(env)?;
    let extent = if shared { None } else { ffi::arraybuffer_extent(env, &host_buffer(env, &buffer)?)? };
    let holder =
        Holder::of(owning_allocation(process().pool(), bytes.address(), bytes.byte_length() as u64).as_ref(), shared);
    // SAFETY: the buffer's bytes are mapped now (the calling frame holds the buffer), held
    // as `holder` says; the model's rules keep copies from using them once they may not
    // be the buffer's.
    let registration = bytes
        .with_bytes(|range| unsafe {
            Registration::new(
                process().registrations(),
                &queue,
                ReadBytes::from_raw(range.address(), range.len()),
                holder,
                this_thread(),
            )
        })
        .or_throw(env)?;
    let registered = f64::from(u8::from(registration.registered()));
    let len = registration.len() as f64;
    let (id, ended) = lookup(env, |h| h.add_registration(RegistrationHandle { registration, buffer, extent }))?;
    drop(ended);
    Ok(Float64Array::new(vec![id, registered, len]))
}

/// The buffer of a weak reference taken in this call (the caller's frame holds it).
fn host_buffer<'env>(env: &'env Env, buffer: &ffi::JsRef) -> napi::Result<Unknown<'env>> {
    buffer.get_if_alive(env)?.ok_or_else(|| MemoryError::NotHostBuffer { what: "buffer".into() }).or_throw(env)
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
