//! Registered host memory in the binding: `hostRegister` (the JS `registerHost`), its end,
//! and the check every copy of a host buffer makes before a registration may serve it.
//!
//! A registration keeps its buffer object alive (a strong reference) while it lasts: the
//! memory it pinned then cannot be collected and freed under the runtime's registration,
//! and JS cannot tell a registered buffer's collection from its registration's. Collection
//! of the `HostRegistration` object ends it (the JS layer's `FinalizationRegistry`), as do
//! `unregister()` and `[Symbol.dispose]`. What a strong reference cannot stop is a detach
//! (`transfer()`, `postMessage` with a transfer list) or a resize; those the check finds.

use std::collections::BTreeMap;
use std::sync::Arc;

use napi::bindgen_prelude::{Float64Array, Unknown};
use napi::Env;
use napi_derive::napi;

use crate::error::MemoryError;
use crate::js::errors::OrThrow;
use crate::js::ffi::{self, HostBytes, JsRef};
use crate::memory::registration::Registration;
use crate::runtime::{Queue, ReadBytes};

/// One live registration of this environment.
struct RegistrationHandle {
    registration: Arc<Registration>,
    /// The `ArrayBuffer` or `SharedArrayBuffer` whose bytes were registered.
    buffer: JsRef,
    /// `(data, byteLength)` of the whole `ArrayBuffer` when registered; `None` for a
    /// `SharedArrayBuffer`, which can neither be detached nor move.
    extent: Option<(u64, usize)>,
}

/// This environment's registrations by id.
#[derive(Default)]
pub struct Registrations {
    live: BTreeMap<u64, RegistrationHandle>,
    next: u64,
}

impl Registrations {
    /// At environment teardown the environment releases every reference itself.
    pub(crate) fn forget_references(&mut self) {
        for (_, handle) in std::mem::take(&mut self.live) {
            std::mem::forget(handle.buffer);
        }
    }
}

fn with_registrations<R>(env: &Env, f: impl FnOnce(&mut Registrations) -> R) -> napi::Result<R> {
    let mut handles =
        crate::js::state::state(env)?.handles.try_borrow_mut().map_err(|_| MemoryError::Busy).or_throw(env)?;
    Ok(f(&mut handles.registrations))
}

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
    let overlapping: Vec<u64> = with_registrations(env, |registrations| {
        registrations
            .live
            .iter()
            .filter(|(_, h)| {
                let r = &h.registration;
                address < r.address().saturating_add(r.len()) && r.address() < address.saturating_add(len.max(1))
            })
            .map(|(&id, _)| id)
            .collect()
    })?;
    let mut found = None;
    for id in overlapping {
        // Taken out while JS-facing calls run, put back when still good.
        let Some(handle) = with_registrations(env, |r| r.live.remove(&id))? else { continue };
        if !still_holds(env, &handle)? {
            drop(handle);
            continue;
        }
        if bytes.in_buffer(env, &handle.buffer.get(env)?)? && handle.registration.covers(address, len) {
            found = Some(handle.registration.clone());
        }
        with_registrations(env, |r| r.live.insert(id, handle))?;
    }
    Ok(found)
}

/// Registers the bytes of a host buffer (the JS layer passes an `ArrayBuffer`, a view,
/// or a `Uint8Array` over a `SharedArrayBuffer`) with the runtime of the queue.
/// Returns `[id, registered (0 or 1), byteLength]`.
#[napi]
pub fn host_register(env: &Env, queue_id: f64, host: Unknown) -> napi::Result<Float64Array> {
    let queue: Arc<dyn Queue> = crate::js::state::state(env)?
        .handles
        .try_borrow()
        .ok()
        .and_then(|h| h.queues.get(queue_id).cloned())
        .ok_or_else(|| MemoryError::StaleHandle { what: "queue".into() })
        .or_throw(env)?;
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
    let id = with_registrations(env, |r| {
        r.next += 1;
        r.live.insert(r.next, RegistrationHandle { registration, buffer, extent });
        r.next
    })?;
    Ok(Float64Array::new(vec![id as f64, registered, len]))
}

/// Ends a registration (`unregister()`, `[Symbol.dispose]`, or its object's collection).
/// A copy that uses it still holds it: the runtime lets go when that copy is done. An id
/// already ended is a no-op.
#[napi]
pub fn host_unregister(env: &Env, id: f64) -> napi::Result<()> {
    let handle = with_registrations(env, |r| r.live.remove(&(id as u64)))?;
    drop(handle);
    Ok(())
}
