//! The raw Node-API calls the JS layer needs beyond what napi-rs wraps: persistent
//! references that are released on drop, external ArrayBuffers tied to an owner,
//! detaching, and reading the bytes behind any host buffer argument. All `unsafe` of the
//! JS layer lives here.

use std::ffi::c_void;
use std::ptr;

use napi::bindgen_prelude::{BigInt, ClassInstance, FromNapiValue, JavaScriptClassExt, MaybeTypeTag, Unknown};
use napi::JsValue;
use napi::ValueType;
use napi::{sys, Env};

fn check(status: sys::napi_status, what: &str) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(napi::Status::from(status), format!("{what} failed")))
    }
}

/// A strong persistent reference to a JS value, released when dropped. It must be
/// dropped on the thread of the environment that made it, while that environment lives:
/// class fields and task data are; `EnvState` forgets its references at teardown.
pub struct JsRef {
    env: sys::napi_env,
    reference: sys::napi_ref,
}

impl JsRef {
    pub fn new(value: &Unknown) -> napi::Result<Self> {
        let raw = value.value();
        let mut reference = ptr::null_mut();
        // SAFETY: `raw.env` and `raw.value` come from a live napi value of the current call.
        check(unsafe { sys::napi_create_reference(raw.env, raw.value, 1, &mut reference) }, "napi_create_reference")?;
        Ok(JsRef { env: raw.env, reference })
    }

    pub fn get<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        let mut value = ptr::null_mut();
        // SAFETY: the reference is live until `drop`, and `env` is the environment of this thread.
        check(unsafe { sys::napi_get_reference_value(env.raw(), self.reference, &mut value) }, "napi_get_reference_value")?;
        // SAFETY: `value` was just produced by Node-API for `env`.
        Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), value) })
    }
}

impl Drop for JsRef {
    fn drop(&mut self) {
        // SAFETY: the reference was created in `self.env` and is deleted once. The status is
        // ignored: at environment teardown there is nothing left to release.
        let _ = unsafe { sys::napi_delete_reference(self.env, self.reference) };
    }
}

/// The longest `ArrayBuffer` or TypedArray Node 20 makes (`buffer.constants.MAX_LENGTH`).
pub const MAX_BUFFER_LENGTH: u64 = 1 << 32;

/// Why an external ArrayBuffer could not be made.
pub enum ExternalBufferError {
    /// The engine forbids external buffers (Electron's V8 memory cage).
    NotAllowed,
    /// Longer than `MAX_BUFFER_LENGTH`.
    TooLarge,
    Napi(napi::Error),
}

/// Makes an `ArrayBuffer` over `len` bytes at `data` without copying. `owner` is kept
/// alive until the engine finalizes the buffer, and dropped then.
pub fn external_arraybuffer<'env, T: 'static>(
    env: &'env Env,
    data: *mut u8,
    len: usize,
    owner: T,
) -> Result<Unknown<'env>, ExternalBufferError> {
    unsafe extern "C" fn finalize<T>(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
        // SAFETY: `hint` is the `Box<T>` leaked below, handed to exactly one finalizer call.
        drop(unsafe { Box::from_raw(hint.cast::<T>()) });
    }
    if len as u64 > MAX_BUFFER_LENGTH {
        return Err(ExternalBufferError::TooLarge);
    }
    let hint = Box::into_raw(Box::new(owner));
    let mut value = ptr::null_mut();
    // SAFETY: `data` points at `len` bytes that `owner` keeps valid until the finalizer
    // runs; the finalizer is called once by the engine with `hint`.
    let status = unsafe {
        sys::napi_create_external_arraybuffer(env.raw(), data.cast(), len, Some(finalize::<T>), hint.cast(), &mut value)
    };
    if status == sys::Status::napi_no_external_buffers_allowed {
        // SAFETY: Node refuses external buffers before it takes `hint`, so it is still ours.
        drop(unsafe { Box::from_raw(hint) });
        return Err(ExternalBufferError::NotAllowed);
    }
    if status != sys::Status::napi_ok {
        // Node may already have run (or will run) the finalizer with `hint` on other
        // failures, so it is left to Node: at worst a small leak, never a double free.
        return Err(ExternalBufferError::Napi(napi::Error::new(
            napi::Status::from(status),
            "napi_create_external_arraybuffer failed",
        )));
    }
    // SAFETY: `value` was just produced by Node-API for `env`.
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), value) })
}

/// Detaches an ArrayBuffer; returns `false` if something else detached it first (e.g.
/// `ArrayBuffer.prototype.transfer`), in which case the memory may still be reachable.
pub fn detach_arraybuffer(env: &Env, buffer: &Unknown) -> napi::Result<bool> {
    let mut detached = false;
    // SAFETY: `buffer` is a live ArrayBuffer value of `env`.
    check(unsafe { sys::napi_is_detached_arraybuffer(env.raw(), buffer.raw(), &mut detached) }, "napi_is_detached_arraybuffer")?;
    if detached {
        return Ok(false);
    }
    // SAFETY: as above; detaching an external buffer only clears the engine's view of it.
    check(unsafe { sys::napi_detach_arraybuffer(env.raw(), buffer.raw()) }, "napi_detach_arraybuffer")?;
    Ok(true)
}

/// Tells V8 about memory it does not see (our allocations), so GC pressure reflects it.
pub fn adjust_external_memory(env: &Env, change: i64) {
    let mut total = 0i64;
    // SAFETY: plain accounting call on the current environment; the result is advisory.
    let _ = unsafe { sys::napi_adjust_external_memory(env.raw(), change, &mut total) };
}

/// The bytes behind a host buffer argument, and the `ArrayBuffer` (or
/// `SharedArrayBuffer`) that holds them.
pub struct HostBytes {
    data: *mut u8,
    len: usize,
    buffer: sys::napi_value,
}

impl HostBytes {
    /// The `ArrayBuffer` or `SharedArrayBuffer` that holds the bytes (read by Node-API,
    /// never through a JS property a user could redefine).
    pub fn buffer<'env>(&self, env: &'env Env) -> Unknown<'env> {
        // SAFETY: `buffer` came from Node-API for this call's `env` and is still in scope.
        unsafe { Unknown::from_raw_unchecked(env.raw(), self.buffer) }
    }

    pub fn address(&self) -> u64 {
        self.data as u64
    }

    /// The byte count (named so because a host buffer may well be empty).
    pub fn byte_length(&self) -> usize {
        self.len
    }

    /// Whether the bytes live in a `SharedArrayBuffer` (which cannot be detached or shrunk).
    pub fn is_shared(&self, env: &Env) -> napi::Result<bool> {
        let mut is_arraybuffer = false;
        // SAFETY: `buffer` is a live value of `env`; the out-pointer is a local.
        let status = unsafe { sys::napi_is_arraybuffer(env.raw(), self.buffer, &mut is_arraybuffer) };
        check(status, "napi_is_arraybuffer")?;
        Ok(!is_arraybuffer)
    }

    /// Whether the bytes are those of `value` itself (its own buffer).
    pub fn is_buffer_of(&self, env: &Env, value: &Unknown) -> napi::Result<bool> {
        let mut same = false;
        // SAFETY: both are live values of `env`; `same` is an out-pointer.
        let status = unsafe { sys::napi_strict_equals(env.raw(), self.buffer, value.raw(), &mut same) };
        check(status, "napi_strict_equals")?;
        Ok(same)
    }

    /// Runs `f` over the bytes. `f` must not call into JS (which could detach or free
    /// the buffer); the model's copies never do.
    pub fn with_slice<R>(&self, f: impl FnOnce(&mut [u8]) -> R) -> R {
        if self.data.is_null() || self.len == 0 {
            return f(&mut []);
        }
        // SAFETY: Node-API reported `len` bytes at `data` for a buffer that the calling
        // JS frame keeps alive, and no JS runs (so nothing detaches it) until `f` returns.
        f(unsafe { std::slice::from_raw_parts_mut(self.data, self.len) })
    }
}

/// Reads `(data, byteLength)` of an `ArrayBuffer` or any `ArrayBufferView` (TypedArray,
/// DataView, Buffer), honouring its `byteOffset`. `None` for anything else.
/// The pointer is valid while the JS value is alive and not detached: use it before
/// returning to JS.
pub fn host_bytes(env: &Env, value: &Unknown) -> napi::Result<Option<HostBytes>> {
    let (env_raw, raw) = (env.raw(), value.raw());
    let mut is = false;
    // SAFETY: `raw` is a live value of `env`; out-pointers are locals (so for every call below).
    check(unsafe { sys::napi_is_arraybuffer(env_raw, raw, &mut is) }, "napi_is_arraybuffer")?;
    if is {
        let (mut data, mut len) = (ptr::null_mut(), 0usize);
        // SAFETY: see above.
        check(unsafe { sys::napi_get_arraybuffer_info(env_raw, raw, &mut data, &mut len) }, "napi_get_arraybuffer_info")?;
        return Ok(Some(HostBytes { data: data.cast(), len, buffer: raw }));
    }
    // SAFETY: see above.
    check(unsafe { sys::napi_is_typedarray(env_raw, raw, &mut is) }, "napi_is_typedarray")?;
    if is {
        let (mut kind, mut length, mut data, mut buffer, mut offset) = (0, 0usize, ptr::null_mut(), ptr::null_mut(), 0usize);
        // SAFETY: see above.
        let status = unsafe { sys::napi_get_typedarray_info(env_raw, raw, &mut kind, &mut length, &mut data, &mut buffer, &mut offset) };
        check(status, "napi_get_typedarray_info")?;
        // A TypedArray kind newer than this addon is refused like any other non-buffer.
        let Some(element) = typed_array_element_size(kind) else { return Ok(None) };
        // `data` already includes the byte offset.
        return Ok(Some(HostBytes { data: data.cast(), len: length.saturating_mul(element), buffer }));
    }
    // SAFETY: see above.
    check(unsafe { sys::napi_is_dataview(env_raw, raw, &mut is) }, "napi_is_dataview")?;
    if is {
        let (mut len, mut data, mut buffer, mut offset) = (0usize, ptr::null_mut(), ptr::null_mut(), 0usize);
        // SAFETY: see above.
        let status = unsafe { sys::napi_get_dataview_info(env_raw, raw, &mut len, &mut data, &mut buffer, &mut offset) };
        check(status, "napi_get_dataview_info")?;
        return Ok(Some(HostBytes { data: data.cast(), len, buffer }));
    }
    Ok(None)
}

/// Node-API's number for Float16Array, newer than napi-sys's list.
const FLOAT16_ARRAY: sys::napi_typedarray_type = 11;

fn typed_array_element_size(kind: sys::napi_typedarray_type) -> Option<usize> {
    use sys::TypedarrayType as T;
    match kind {
        T::int8_array | T::uint8_array | T::uint8_clamped_array => Some(1),
        T::int16_array | T::uint16_array | FLOAT16_ARRAY => Some(2),
        T::int32_array | T::uint32_array | T::float32_array => Some(4),
        T::float64_array | T::bigint64_array | T::biguint64_array => Some(8),
        _ => None,
    }
}

/// The Rust object behind a JS instance of the `#[napi]` class `T`, or `None` when
/// `value` is not one. napi-rs checks the wrapped value's type tag, which is cheaper
/// than `instanceof` and cannot be fooled by a borrowed prototype.
pub fn class_instance<'env, T>(env: &Env, value: &Unknown<'env>) -> napi::Result<Option<ClassInstance<'env, T>>>
where
    T: JavaScriptClassExt + MaybeTypeTag + 'static,
{
    if value.get_type()? != ValueType::Object {
        return Ok(None);
    }
    // SAFETY: `from_napi_value` unwraps only objects napi-rs wrapped and rejects any whose
    // type tag is not `T`'s; failures are plain errors, mapped to `None` here.
    Ok(unsafe { ClassInstance::<T>::from_napi_value(env.raw(), value.raw()) }.ok())
}

/// The bigint `value` holds (the caller checked its type).
pub fn bigint(value: &Unknown) -> napi::Result<BigInt> {
    // SAFETY: `BigInt::from_napi_value` checks the value's type itself and fails cleanly.
    unsafe { value.cast::<BigInt>() }
}

/// A `JsRef` that travels with an asynchronous task. It is created on the JS thread,
/// carried through the worker thread untouched, and dropped in the task's `finally`,
/// which napi runs on the JS thread again.
pub struct TaskRef(JsRef);

// SAFETY: the worker thread only moves a `TaskRef`, never uses or drops it: napi-rs runs
// `resolve`/`finally`, where it is read and dropped, on the environment's own thread.
unsafe impl Send for TaskRef {}

impl TaskRef {
    pub fn new(value: &Unknown) -> napi::Result<Self> {
        Ok(TaskRef(JsRef::new(value)?))
    }

    pub fn get<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        self.0.get(env)
    }
}

/// Host bytes used by an asynchronous task on a worker thread: memory that cannot go
/// away while the task runs (a `SharedArrayBuffer`, which JS can neither detach nor
/// shrink, or USM memory of ours that the task pins).
pub struct TaskBytes {
    data: *mut u8,
    len: usize,
}

// SAFETY: the bytes belong to a SharedArrayBuffer that a `TaskRef` of the same task keeps
// from being collected, or to an allocation the task holds; nothing frees them meanwhile.
unsafe impl Send for TaskBytes {}

impl TaskBytes {
    pub fn new(bytes: &HostBytes) -> Self {
        TaskBytes { data: bytes.data, len: bytes.len }
    }

    pub fn with_slice<R>(&self, f: impl FnOnce(&mut [u8]) -> R) -> R {
        if self.data.is_null() || self.len == 0 {
            return f(&mut []);
        }
        // SAFETY: see `unsafe impl Send`: the memory outlives the task, and no JS code
        // touches it through the worker's slice (JS may read or write it meanwhile, as
        // with any shared memory; the bytes are plain data).
        f(unsafe { std::slice::from_raw_parts_mut(self.data, self.len) })
    }
}

/// Refuses a constructor call made without `new` (napi-rs would wrap the receiver,
/// `globalThis` or the exports object, instead of a new instance).
pub fn ensure_constructed<T>(env: &Env, this: &Unknown, class: &str) -> napi::Result<()>
where
    T: JavaScriptClassExt + 'static,
{
    let constructed = this.get_type()? == ValueType::Object && T::instance_of(env, this)?;
    if constructed {
        return Ok(());
    }
    Err(crate::js::errors::to_js_error(
        env,
        crate::error::MemoryError::ConstructCallRequired(format!("Class constructor {class} cannot be invoked without 'new'")),
    ))
}

/// The own enumerable string-keyed properties of `object` (those `Object::keys` lists),
/// as `(name, value)`. One names array and one read per property: cheaper than looking
/// up every name an options bag might have. Names longer than 64 bytes are cut (they
/// only ever appear in an "unknown option" message).
pub fn own_properties<'env>(env: &'env Env, object: &Unknown<'env>) -> napi::Result<Vec<(String, Unknown<'env>)>> {
    let (env_raw, raw) = (env.raw(), object.raw());
    let mut names = ptr::null_mut();
    // SAFETY: `raw` is a live object value of `env`, `names` the array Node-API returns
    // for it, and every out-pointer a local (so for every call below).
    let status = unsafe {
        sys::napi_get_all_property_names(
            env_raw,
            raw,
            sys::KeyCollectionMode::own_only,
            sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
            sys::KeyConversion::numbers_to_strings,
            &mut names,
        )
    };
    check(status, "napi_get_all_property_names")?;
    let mut length = 0u32;
    // SAFETY: see above.
    check(unsafe { sys::napi_get_array_length(env_raw, names, &mut length) }, "napi_get_array_length")?;
    let mut properties = Vec::with_capacity(length as usize);
    for index in 0..length {
        let mut key = ptr::null_mut();
        // SAFETY: see above.
        check(unsafe { sys::napi_get_element(env_raw, names, index, &mut key) }, "napi_get_element")?;
        let mut buffer = [0u8; 65];
        let mut written = 0usize;
        // SAFETY: see above; Node-API writes at most `buffer.len() - 1` bytes and a NUL.
        let status = unsafe { sys::napi_get_value_string_utf8(env_raw, key, buffer.as_mut_ptr().cast(), buffer.len(), &mut written) };
        check(status, "napi_get_value_string_utf8")?;
        let mut value = ptr::null_mut();
        // SAFETY: see above.
        check(unsafe { sys::napi_get_property(env_raw, raw, key, &mut value) }, "napi_get_property")?;
        let name = String::from_utf8_lossy(&buffer[..written.min(64)]).into_owned();
        // SAFETY: `value` was just produced by Node-API for `env`.
        properties.push((name, unsafe { Unknown::from_raw_unchecked(env_raw, value) }));
    }
    Ok(properties)
}

/// Defines a read-only, non-enumerable, non-configurable property `key` of `object`: a
/// JS-to-JS edge the garbage collector sees, unlike a persistent reference.
pub fn set_hidden(env: &Env, object: &Unknown, key: &Unknown, value: &Unknown) -> napi::Result<()> {
    let descriptor = sys::napi_property_descriptor {
        utf8name: ptr::null(),
        name: key.raw(),
        method: None,
        getter: None,
        setter: None,
        value: value.raw(),
        attributes: sys::PropertyAttributes::default,
        data: ptr::null_mut(),
    };
    // SAFETY: `object`, `key` and `value` are live values of `env`; the descriptor array
    // of one entry outlives the call.
    let status = unsafe { sys::napi_define_properties(env.raw(), object.raw(), 1, &descriptor) };
    check(status, "napi_define_properties")
}

/// `object[key]` when `object` has `key` (a symbol) as an own property, else `None`:
/// nothing on the prototype chain (where a user could put a getter) is consulted.
pub fn get_own_keyed<'env>(env: &'env Env, object: &Unknown<'env>, key: &Unknown) -> napi::Result<Option<Unknown<'env>>> {
    let mut own = false;
    // SAFETY: `object` and `key` are live values of `env`; `own` is an out-pointer.
    let status = unsafe { sys::napi_has_own_property(env.raw(), object.raw(), key.raw(), &mut own) };
    check(status, "napi_has_own_property")?;
    if !own {
        return Ok(None);
    }
    let mut value = ptr::null_mut();
    // SAFETY: `object` and `key` are live values of `env`; `value` is an out-pointer.
    let status = unsafe { sys::napi_get_property(env.raw(), object.raw(), key.raw(), &mut value) };
    check(status, "napi_get_property")?;
    // SAFETY: `value` was just produced by Node-API for `env`.
    Ok(Some(unsafe { Unknown::from_raw_unchecked(env.raw(), value) }))
}
