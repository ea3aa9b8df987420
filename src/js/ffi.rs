//! The raw Node-API calls the binding needs beyond what napi-rs wraps: persistent
//! references that are released on drop, external ArrayBuffers and SharedArrayBuffers tied to an owner, detaching, and reading the
//! bytes behind any host buffer argument. All `unsafe` of the binding lives here.

use std::any::TypeId;
use std::ffi::c_void;
use std::ptr;
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::{BigInt, Unknown};
use napi::JsValue;
use napi::{sys, Env};

use crate::memory::allocation::Allocation;
use crate::runtime::WriteBytes;

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
    /// A strong reference: it keeps `value` alive until dropped.
    pub fn new(value: &Unknown) -> napi::Result<Self> {
        let raw = value.value();
        let mut reference = ptr::null_mut();
        // SAFETY: `raw.env` and `raw.value` come from a live napi value of the current call.
        check(unsafe { sys::napi_create_reference(raw.env, raw.value, 1, &mut reference) }, "napi_create_reference")?;
        Ok(JsRef { env: raw.env, reference })
    }

    /// A weak reference: it does not keep `value` alive (see `get_if_alive`).
    pub fn weak(value: &Unknown) -> napi::Result<Self> {
        let raw = value.value();
        let mut reference = ptr::null_mut();
        // SAFETY: as in `new`, with an initial count of 0 (weak).
        check(unsafe { sys::napi_create_reference(raw.env, raw.value, 0, &mut reference) }, "napi_create_reference")?;
        Ok(JsRef { env: raw.env, reference })
    }

    /// The value, unless a weak reference's value was collected.
    pub fn get_if_alive<'env>(&self, env: &'env Env) -> napi::Result<Option<Unknown<'env>>> {
        let mut value = ptr::null_mut();
        check(
            // SAFETY: the reference is live until `drop`, and `env` is the environment of this thread.
            unsafe { sys::napi_get_reference_value(env.raw(), self.reference, &mut value) },
            "napi_get_reference_value",
        )?;
        // SAFETY: a non-null `value` was just produced by Node-API for `env`.
        Ok((!value.is_null()).then(|| unsafe { Unknown::from_raw_unchecked(env.raw(), value) }))
    }

    /// The value of a strong reference (a weak one's may be gone: see `get_if_alive`).
    pub fn get<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        let mut value = ptr::null_mut();
        check(
            // SAFETY: the reference is live until `drop`, and `env` is the environment of this thread.
            unsafe { sys::napi_get_reference_value(env.raw(), self.reference, &mut value) },
            "napi_get_reference_value",
        )?;
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

/// An environment's instance data as `set_instance_data` stores it: the slot's own type
/// first (`repr(C)`: at offset 0 whatever `T` is), so that `instance_data` checks it
/// without napi-rs's process-wide table of payloads, a lock and a lookup per call. The
/// slot's type, not `T`: napi-rs's own instance data also starts with a `TypeId`, of its
/// value's type, so that one could never pass for this. Nothing of the binding may use
/// napi-rs's `Env::set_instance_data` besides (clippy.toml forbids it).
#[repr(C)]
struct InstanceSlot<T> {
    type_id: TypeId,
    teardown: fn(T),
    value: T,
}

/// Stores `value` as this addon's instance data of `env`, once per environment; at the
/// environment's teardown `teardown` gets it back.
pub fn set_instance_data<T: 'static>(env: &Env, value: T, teardown: fn(T)) -> napi::Result<()> {
    unsafe extern "C" fn finalize<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
        // SAFETY: `data` is the `Box<InstanceSlot<T>>` leaked below, which Node hands to this
        // one finalizer call at the environment's teardown.
        let slot = unsafe { Box::from_raw(data.cast::<InstanceSlot<T>>()) };
        let InstanceSlot { teardown, value, .. } = *slot;
        teardown(value);
    }
    let slot = Box::into_raw(Box::new(InstanceSlot { type_id: TypeId::of::<InstanceSlot<T>>(), teardown, value }));
    // SAFETY: `slot` stays valid until the finalizer, which Node calls once.
    let status = unsafe { sys::napi_set_instance_data(env.raw(), slot.cast(), Some(finalize::<T>), ptr::null_mut()) };
    if status != sys::Status::napi_ok {
        // SAFETY: Node did not take `slot`, so it is still ours to drop.
        drop(unsafe { Box::from_raw(slot) });
        return Err(napi::Error::new(napi::Status::from(status), "napi_set_instance_data failed"));
    }
    Ok(())
}

/// Runs `hook` at the process's `exit()` (the end of `main`, `process.exit()`), before the
/// destructors of the libraries loaded before this call; `false` when it could not be
/// registered.
pub fn at_process_exit(hook: extern "C" fn()) -> bool {
    // SAFETY: `atexit` only stores the function pointer; the hook is a plain function of
    // this library, which Node never unloads (glibc runs it at an unload anyway).
    unsafe { libc::atexit(hook) == 0 }
}

/// The calling thread as the C library knows it: usable at `exit()` too, after the
/// standard library's thread-locals of the exiting thread are gone.
pub fn os_thread() -> u64 {
    // SAFETY: `pthread_self` has no preconditions and cannot fail.
    unsafe { libc::pthread_self() as u64 }
}

/// This addon's instance data of `env`, when `set_instance_data` stored a `T` there.
pub fn instance_data<T: 'static>(env: &Env) -> Option<&'static T> {
    let mut data = ptr::null_mut();
    // SAFETY: plain read of the current environment's instance data pointer.
    let status = unsafe { sys::napi_get_instance_data(env.raw(), &mut data) };
    if status != sys::Status::napi_ok || data.is_null() {
        return None;
    }
    // SAFETY: this addon's instance data is only ever set by `set_instance_data`, so `data`
    // is an `InstanceSlot<_>`, whose first field (repr(C)) is its `TypeId`.
    let type_id = unsafe { *data.cast::<TypeId>().cast_const() };
    if type_id != TypeId::of::<InstanceSlot<T>>() {
        return None;
    }
    // SAFETY: the type matches, and the slot lives until the environment's teardown, after
    // which no call of this environment runs.
    Some(unsafe { &(*data.cast::<InstanceSlot<T>>().cast_const()).value })
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

/// Makes an `ArrayBuffer` over `len` bytes at `data` without copying. `owner` (one
/// reference of an `Rc`, handed to the engine as the finalizer's hint, so a view costs no
/// allocation of its own beyond the `Rc`) is kept alive until the engine finalizes the
/// buffer, and dropped then.
pub fn external_arraybuffer<'env, T: 'static>(
    env: &'env Env,
    data: *mut u8,
    len: usize,
    owner: Rc<T>,
) -> Result<Unknown<'env>, ExternalBufferError> {
    unsafe extern "C" fn finalize<T>(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
        // SAFETY: `hint` is the reference `Rc::into_raw` gave up below, handed to exactly
        // one finalizer call.
        drop(unsafe { Rc::from_raw(hint.cast::<T>().cast_const()) });
    }
    if len as u64 > MAX_BUFFER_LENGTH {
        return Err(ExternalBufferError::TooLarge);
    }
    let hint = Rc::into_raw(owner).cast_mut();
    let mut value = ptr::null_mut();
    // SAFETY: `data` points at `len` bytes that `owner` keeps valid until the finalizer
    // runs; the finalizer is called once by the engine with `hint`.
    let status = unsafe {
        sys::napi_create_external_arraybuffer(env.raw(), data.cast(), len, Some(finalize::<T>), hint.cast(), &mut value)
    };
    if status == sys::Status::napi_no_external_buffers_allowed {
        // SAFETY: Node refuses external buffers before it takes `hint`, so it is still ours.
        drop(unsafe { Rc::from_raw(hint.cast_const()) });
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

/// Node-API's `node_api_create_external_sharedarraybuffer`, where this Node exports it.
type CreateExternalSab = unsafe extern "C" fn(
    sys::napi_env,
    *mut c_void,
    usize,
    Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
    *mut c_void,
    *mut sys::napi_value,
) -> sys::napi_status;

/// The process's `node_api_create_external_sharedarraybuffer`, looked up once: found by
/// name rather than linked, so that the addon still loads on a Node without it.
fn create_external_sab() -> Option<CreateExternalSab> {
    static FOUND: std::sync::OnceLock<Option<CreateExternalSab>> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        let this = libloading::os::unix::Library::this();
        // SAFETY: Node's exported function of this name has the signature of
        // `CreateExternalSab` (node_api.h).
        unsafe { this.get::<CreateExternalSab>(b"node_api_create_external_sharedarraybuffer") }.ok().map(|f| *f)
    })
}

/// Makes a `SharedArrayBuffer` over `len` bytes at `data` without copying, or `None` where
/// this Node cannot. `owner` keeps the bytes valid and is dropped once, on whichever
/// thread the engine releases the buffer's last reference (every thread's copy of a
/// `SharedArrayBuffer` shares one backing store, whose release runs the finalizer).
pub fn external_sharedarraybuffer<'env, T: Send + 'static>(
    env: &'env Env,
    data: *mut u8,
    len: usize,
    owner: Box<T>,
) -> Result<Option<Unknown<'env>>, ExternalBufferError> {
    unsafe extern "C" fn finalize<T>(_data: *mut c_void, hint: *mut c_void) {
        // SAFETY: `hint` is the box `Box::into_raw` gave up below, handed to exactly one
        // finalizer call; `T: Send`, so dropping it on another thread is sound.
        drop(unsafe { Box::from_raw(hint.cast::<T>()) });
    }
    let Some(create) = create_external_sab() else { return Ok(None) };
    if len as u64 > MAX_BUFFER_LENGTH {
        return Err(ExternalBufferError::TooLarge);
    }
    let hint = Box::into_raw(owner);
    let mut value = ptr::null_mut();
    // SAFETY: `data` points at `len` bytes that `owner` keeps valid until the finalizer
    // runs; the finalizer is called once by the engine with `hint`.
    let status = unsafe { create(env.raw(), data.cast(), len, Some(finalize::<T>), hint.cast(), &mut value) };
    if status == sys::Status::napi_no_external_buffers_allowed {
        // SAFETY: Node refuses external buffers before it takes `hint`, so it is still ours.
        drop(unsafe { Box::from_raw(hint) });
        return Err(ExternalBufferError::NotAllowed);
    }
    if status != sys::Status::napi_ok {
        // As for ArrayBuffers: on other failures the finalizer may run, so `hint` is left.
        return Err(ExternalBufferError::Napi(napi::Error::new(
            napi::Status::from(status),
            "node_api_create_external_sharedarraybuffer failed",
        )));
    }
    // SAFETY: `value` was just produced by Node-API for `env`.
    Ok(Some(unsafe { Unknown::from_raw_unchecked(env.raw(), value) }))
}

/// Detaches an ArrayBuffer; returns `false` if something else detached it first (e.g.
/// `ArrayBuffer.prototype.transfer`), in which case the memory may still be reachable.
pub fn detach_arraybuffer(env: &Env, buffer: &Unknown) -> napi::Result<bool> {
    let mut detached = false;
    check(
        // SAFETY: `buffer` is a live ArrayBuffer value of `env`.
        unsafe { sys::napi_is_detached_arraybuffer(env.raw(), buffer.raw(), &mut detached) },
        "napi_is_detached_arraybuffer",
    )?;
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
    /// Where the bytes start (an `Address` for the model's lookups).
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

    /// A weak reference to the `ArrayBuffer` or `SharedArrayBuffer` holding the bytes.
    pub fn buffer_weak_ref(&self, env: &Env) -> napi::Result<JsRef> {
        // SAFETY: `buffer` is a live value of `env` in the current call.
        JsRef::weak(&unsafe { Unknown::from_raw_unchecked(env.raw(), self.buffer) })
    }

    /// Whether the bytes live in `buffer`, that very object (`===`).
    pub fn in_buffer(&self, env: &Env, buffer: &Unknown) -> napi::Result<bool> {
        let mut same = false;
        check(
            // SAFETY: two live values of `env`; the out-pointer is a local.
            unsafe { sys::napi_strict_equals(env.raw(), self.buffer, buffer.raw(), &mut same) },
            "napi_strict_equals",
        )?;
        Ok(same)
    }

    /// Runs `f` over the bytes (a range, never a slice: a `SharedArrayBuffer` may be
    /// written by another thread meanwhile). `f` cannot call into JS, which could detach
    /// or free the buffer: it is `Send`, and nothing that reaches JS is (napi's `Env` and
    /// values are neither `Send` nor `Sync`, so a closure holding one is not `Send`).
    pub fn with_bytes<R>(&self, f: impl FnOnce(WriteBytes<'_>) -> R + Send) -> R {
        // SAFETY: Node-API reported `len` bytes at `data` for a buffer that the calling
        // JS frame keeps alive, and no JS runs (so nothing detaches it) until `f` returns.
        f(unsafe { WriteBytes::from_raw(self.data as u64, self.len as u64) })
    }
}

/// `(data, byteLength)` of an `ArrayBuffer` now (`(0, 0)` once detached); `None` for any
/// other value (a `SharedArrayBuffer`).
pub fn arraybuffer_extent(env: &Env, value: &Unknown) -> napi::Result<Option<(u64, usize)>> {
    let mut is = false;
    // SAFETY: `value` is a live value of `env`; out-pointers are locals.
    check(unsafe { sys::napi_is_arraybuffer(env.raw(), value.raw(), &mut is) }, "napi_is_arraybuffer")?;
    if !is {
        return Ok(None);
    }
    let (mut data, mut len) = (ptr::null_mut(), 0usize);
    check(
        // SAFETY: as above.
        unsafe { sys::napi_get_arraybuffer_info(env.raw(), value.raw(), &mut data, &mut len) },
        "napi_get_arraybuffer_info",
    )?;
    Ok(Some((data as u64, len)))
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
        check(
            // SAFETY: see above.
            unsafe { sys::napi_get_arraybuffer_info(env_raw, raw, &mut data, &mut len) },
            "napi_get_arraybuffer_info",
        )?;
        return Ok(Some(HostBytes { data: data.cast(), len, buffer: raw }));
    }
    // SAFETY: see above.
    check(unsafe { sys::napi_is_typedarray(env_raw, raw, &mut is) }, "napi_is_typedarray")?;
    if is {
        let (mut kind, mut length, mut data, mut buffer, mut offset) =
            (0, 0usize, ptr::null_mut(), ptr::null_mut(), 0usize);
        // SAFETY: see above.
        let status = unsafe {
            sys::napi_get_typedarray_info(env_raw, raw, &mut kind, &mut length, &mut data, &mut buffer, &mut offset)
        };
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
        let status =
            unsafe { sys::napi_get_dataview_info(env_raw, raw, &mut len, &mut data, &mut buffer, &mut offset) };
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
    /// A strong reference to `value`, taken on the JS thread before the task is queued.
    pub fn new(value: &Unknown) -> napi::Result<Self> {
        Ok(TaskRef(JsRef::new(value)?))
    }

    /// The value, on the JS thread (in `resolve`).
    pub fn get<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        self.0.get(env)
    }
}

/// What keeps a task's host bytes where they are.
enum Keeper {
    /// A strong reference to the `SharedArrayBuffer` holding them, which JS can neither
    /// detach nor shrink.
    SharedBuffer(#[allow(dead_code, reason = "held for its Drop, which lets the buffer go")] TaskRef),
    /// USM memory of ours under them.
    Allocation(#[allow(dead_code, reason = "held for its Drop, which gives the block back")] Arc<Allocation>),
}

/// Host bytes used by an asynchronous task on a worker thread, with what keeps them
/// alive and in place while the task runs: made only where that is taken (the
/// `SharedArrayBuffer`'s reference, or the allocation under the bytes), and dropped with
/// the task on the JS thread (napi-rs drops a task in `finally`).
pub struct TaskBytes {
    data: *mut u8,
    len: usize,
    _keeper: Keeper,
}

// SAFETY: the bytes stay mapped and in place while this value lives: `_keeper`, which it
// owns, holds the SharedArrayBuffer (never detached) or the allocation under them. The
// worker thread only reads the range and never drops the `TaskRef` (the task is dropped
// on the JS thread).
unsafe impl Send for TaskBytes {}

impl TaskBytes {
    /// The bytes of a `SharedArrayBuffer`, holding a strong reference to it; `None` for
    /// a plain `ArrayBuffer` (JS may detach it, so a task may not use its bytes).
    pub fn of_shared(env: &Env, bytes: &HostBytes) -> napi::Result<Option<TaskBytes>> {
        if !bytes.is_shared(env)? {
            return Ok(None);
        }
        // SAFETY: `buffer` is a live value of `env` in the current call.
        let buffer = TaskRef::new(&unsafe { Unknown::from_raw_unchecked(env.raw(), bytes.buffer) })?;
        Ok(Some(TaskBytes { data: bytes.data, len: bytes.len, _keeper: Keeper::SharedBuffer(buffer) }))
    }

    /// The bytes, inside the requested bytes of `allocation`, holding it; `None` when
    /// they are not all inside it.
    pub fn of_allocation(bytes: &HostBytes, allocation: Arc<Allocation>) -> Option<TaskBytes> {
        let inside = bytes.address() >= allocation.address()
            && bytes.address().saturating_add(bytes.len as u64)
                <= allocation.address().saturating_add(allocation.nbytes());
        inside.then(|| TaskBytes { data: bytes.data, len: bytes.len, _keeper: Keeper::Allocation(allocation) })
    }

    /// Runs `f` over the bytes (a range: JS may read or write them meanwhile, as with any
    /// shared memory).
    pub fn with_bytes<R>(&self, f: impl FnOnce(WriteBytes<'_>) -> R + Send) -> R {
        // SAFETY: see `unsafe impl Send`: `_keeper` keeps the memory for as long as this
        // value, which outlives the call.
        f(unsafe { WriteBytes::from_raw(self.data as u64, self.len as u64) })
    }
}

/// A binding function that Node-API calls directly (see `define_fast`): the environment
/// and the call's first four arguments (`undefined` where fewer were passed).
pub type FastFn = for<'env> fn(&'env Env, &[Unknown<'env>; 4]) -> napi::Result<sys::napi_value>;

/// Calls the `FastFn` a function was defined with; its error is thrown, a panic becomes
/// an error (never an abort across the C boundary).
unsafe extern "C" fn fast_trampoline(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let mut argc = 4usize;
    let mut argv = [ptr::null_mut(); 4];
    let mut data = ptr::null_mut();
    // SAFETY: `info` is this call's callback info; Node-API fills up to `argc` slots
    // (the rest with `undefined`) and the data pointer given at definition.
    let status = unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), &mut data) };
    if status != sys::Status::napi_ok || data.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: `data` is the `FastFn` `define_fast` stored (a function pointer, the size of
    // a data pointer here).
    let function = unsafe { std::mem::transmute::<*mut c_void, FastFn>(data) };
    let handle = Env::from_raw(env);
    // SAFETY: every slot holds a live value of this call.
    let args = argv.map(|value| unsafe { Unknown::from_raw_unchecked(env, value) });
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| function(&handle, &args))) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => {
            // SAFETY: `env` is the live environment of this call.
            unsafe { napi::JsError::from(error).throw_into(env) };
            ptr::null_mut()
        }
        Err(_) => {
            let error =
                napi::Error::new(napi::Status::GenericFailure, "dpctl-memory: internal error (a panic in the binding)");
            // SAFETY: as above.
            unsafe { napi::JsError::from(error).throw_into(env) };
            ptr::null_mut()
        }
    }
}

/// Defines `exports[name]` as a function Node-API calls without napi-rs's per-call
/// machinery, for the few calls (allocate, free, small copies) where that machinery
/// would cost more than the work.
pub fn define_fast(
    env: &Env,
    exports: &mut napi::bindgen_prelude::Object,
    name: &str,
    function: FastFn,
) -> napi::Result<()> {
    let mut value = ptr::null_mut();
    // SAFETY: `name` outlives the call (Node-API copies it); the data pointer is a
    // function pointer, valid for the life of the process.
    let status = unsafe {
        sys::napi_create_function(
            env.raw(),
            name.as_ptr().cast(),
            name.len() as isize,
            Some(fast_trampoline),
            function as *mut c_void,
            &mut value,
        )
    };
    check(status, "napi_create_function")?;
    // SAFETY: `value` was just produced by Node-API for `env`.
    napi::bindgen_prelude::JsObjectValue::set_named_property(exports, name, unsafe {
        Unknown::from_raw_unchecked(env.raw(), value)
    })
}

/// A number argument, or `ERR_INTERNAL`-style failure for anything else (the JS layer
/// passes only numbers here).
pub fn f64_arg(env: &Env, value: &Unknown) -> napi::Result<f64> {
    let mut number = 0.0;
    // SAFETY: `value` is a live value of `env`; `number` is an out-pointer.
    check(unsafe { sys::napi_get_value_double(env.raw(), value.raw(), &mut number) }, "napi_get_value_double")?;
    Ok(number)
}

/// A bigint argument as `u64` (the JS layer checks the range: `lossless` is not asked).
pub fn u64_bigint_arg(env: &Env, value: &Unknown) -> napi::Result<u64> {
    let (mut number, mut lossless) = (0u64, false);
    // SAFETY: `value` is a live value of `env`; the out-pointers are locals.
    let status = unsafe { sys::napi_get_value_bigint_uint64(env.raw(), value.raw(), &mut number, &mut lossless) };
    check(status, "napi_get_value_bigint_uint64")?;
    Ok(number)
}

/// Whether an argument is a number (else some other value, e.g. a host buffer).
pub fn is_number(env: &Env, value: &Unknown) -> napi::Result<bool> {
    let mut kind = sys::ValueType::napi_undefined;
    // SAFETY: `value` is a live value of `env`; the out-pointer is a local.
    check(unsafe { sys::napi_typeof(env.raw(), value.raw(), &mut kind) }, "napi_typeof")?;
    Ok(kind == sys::ValueType::napi_number)
}

/// A number argument as `u32` (Node-API's conversion: truncated, wrapped).
pub fn u32_arg(env: &Env, value: &Unknown) -> napi::Result<u32> {
    let mut number = 0u32;
    // SAFETY: `value` is a live value of `env`; `number` is an out-pointer.
    check(unsafe { sys::napi_get_value_uint32(env.raw(), value.raw(), &mut number) }, "napi_get_value_uint32")?;
    Ok(number)
}

/// A JS number.
pub fn js_f64(env: &Env, number: f64) -> napi::Result<sys::napi_value> {
    let mut value = ptr::null_mut();
    // SAFETY: plain value creation in `env`; `value` is an out-pointer.
    check(unsafe { sys::napi_create_double(env.raw(), number, &mut value) }, "napi_create_double")?;
    Ok(value)
}

/// A JS boolean.
pub fn js_bool(env: &Env, flag: bool) -> napi::Result<sys::napi_value> {
    let mut value = ptr::null_mut();
    // SAFETY: as above.
    check(unsafe { sys::napi_get_boolean(env.raw(), flag, &mut value) }, "napi_get_boolean")?;
    Ok(value)
}

/// `undefined`.
pub fn js_undefined(env: &Env) -> napi::Result<sys::napi_value> {
    let mut value = ptr::null_mut();
    // SAFETY: as above.
    check(unsafe { sys::napi_get_undefined(env.raw(), &mut value) }, "napi_get_undefined")?;
    Ok(value)
}

/// A JS bigint of `number`.
pub fn js_bigint(env: &Env, number: u64) -> napi::Result<sys::napi_value> {
    let mut value = ptr::null_mut();
    // SAFETY: as above.
    check(unsafe { sys::napi_create_bigint_uint64(env.raw(), number, &mut value) }, "napi_create_bigint_uint64")?;
    Ok(value)
}

/// Marks the JS object `object` with `tag` (`napi_type_tag_object`: once per object; an
/// object tagged already is an error).
pub fn type_tag(env: &Env, object: &Unknown, tag: &sys::napi_type_tag) -> napi::Result<()> {
    // SAFETY: `object` is a value of this call's environment; `tag` is valid for the call.
    check(unsafe { sys::napi_type_tag_object(env.raw(), object.raw(), tag) }, "napi_type_tag_object")
}

/// Makes a JS external value around `data` (dropped by the value's finalizer) and marks it
/// with `tag` (`napi_type_tag_object`), which JS code can neither make nor forge: what the
/// C header of addon authors (`include/dpctl_memory.h`) checks before reading it. The
/// external's data pointer is the box's own address (what the header reads).
pub fn tagged_external<'env, T: 'static>(
    env: &'env Env,
    data: Box<T>,
    tag: &sys::napi_type_tag,
) -> napi::Result<Unknown<'env>> {
    unsafe extern "C" fn finalize<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
        // SAFETY: `data` is the `Box<T>` leaked below, handed to exactly one finalizer call.
        drop(unsafe { Box::from_raw(data.cast::<T>()) });
    }
    let boxed = Box::into_raw(data);
    let mut value = ptr::null_mut();
    // SAFETY: `boxed` stays valid until the finalizer, which the engine calls once.
    let status =
        unsafe { sys::napi_create_external(env.raw(), boxed.cast(), Some(finalize::<T>), ptr::null_mut(), &mut value) };
    if status != sys::Status::napi_ok {
        // SAFETY: the external was not made, so the box is still ours, freed once here.
        drop(unsafe { Box::from_raw(boxed) });
        return Err(napi::Error::new(napi::Status::from(status), "napi_create_external failed"));
    }
    // SAFETY: `value` is a fresh external of this call's environment; `tag` is valid.
    check(unsafe { sys::napi_type_tag_object(env.raw(), value, tag) }, "napi_type_tag_object")?;
    // SAFETY: `value` was just produced by Node-API for `env`.
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), value) })
}
