//! The native binding: functions over handles (ids of the values in this environment's
//! slabs, see `js::slab`), taking and returning primitives, ids and buffers. The JS
//! classes in `lib/` own every object users see, read every option and dictionary, and
//! make every error in their own realm; these functions only convert their arguments
//! and call the Node-free model (`crate::memory`).
//!
//! No user code can run here: the JS layer hands over only primitives, handles, host
//! buffers and plain copies it made of interface fields.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, Float64Array, JsObjectValue, Unknown};
use napi::{Env, JsValue, ValueType};
use napi_derive::napi;

use crate::error::MemoryError;
use crate::js::async_ops::{HostSide, Operation, UsmTask};
use crate::js::errors::OrThrow;
use crate::js::ffi::{self, ExternalBufferError, HostBytes, JsRef, TaskRef};
use crate::js::handles::{BufferLease, Handles, MemoryHandle};
use crate::js::json;
use crate::memory::consume::{consume, SyclObj};
use crate::memory::interface::{IfaceValue, RawInterface};
use crate::memory::ipc;
use crate::memory::registry::{registry_with, DeviceChoice, Registry};
use crate::memory::share;
use crate::memory::usm::{too_large_for_host, Adopted, UsmMemory};
use crate::runtime::UsmKind;
use crate::runtime::{Context, Device, Queue, WriteBytes};

/// The process's device registry over every provider (the binding is where the
/// providers are named; the model only sees the runtime interface).
fn registry() -> &'static Registry {
    registry_with(crate::provider::load_all)
}

fn busy_error() -> MemoryError {
    MemoryError::Busy
}

fn freed_error() -> MemoryError {
    MemoryError::Freed
}

/// This environment's handles. No function holds the borrow while anything can call
/// back into the binding.
fn handles(env: &Env) -> napi::Result<std::cell::RefMut<'static, Handles>> {
    crate::js::state::state(env)?.handles.try_borrow_mut().map_err(|_| busy_error()).or_throw(env)
}

fn stale(what: &str) -> MemoryError {
    MemoryError::StaleHandle { what: what.into() }
}

fn device(env: &Env, id: f64) -> napi::Result<Arc<dyn Device>> {
    handles(env)?.devices.get(id).cloned().ok_or_else(|| stale("device")).or_throw(env)
}
fn context(env: &Env, id: f64) -> napi::Result<Arc<dyn Context>> {
    handles(env)?.contexts.get(id).cloned().ok_or_else(|| stale("context")).or_throw(env)
}
fn queue(env: &Env, id: f64) -> napi::Result<Arc<dyn Queue>> {
    handles(env)?.queues.get(id).cloned().ok_or_else(|| stale("queue")).or_throw(env)
}
/// The memory of a live handle (a cheap clone: two `Arc`s); `ERR_USM_FREED` after `memFree`.
fn live_memory(env: &Env, id: f64) -> napi::Result<UsmMemory> {
    let memory = handles(env)?.memories.get(id).map(|handle| handle.memory.clone());
    memory.ok_or_else(freed_error).or_throw(env)
}

fn full() -> MemoryError {
    MemoryError::TooManyObjects
}

fn device_handle(env: &Env, device: Arc<dyn Device>) -> napi::Result<f64> {
    handles(env)?.devices.insert(device).ok_or_else(full).or_throw(env)
}
fn context_handle(env: &Env, context: Arc<dyn Context>) -> napi::Result<f64> {
    handles(env)?.contexts.insert(context).ok_or_else(full).or_throw(env)
}
fn queue_handle(env: &Env, queue: Arc<dyn Queue>) -> napi::Result<f64> {
    handles(env)?.queues.insert(queue).ok_or_else(full).or_throw(env)
}
fn memory_handle(env: &Env, handle: MemoryHandle) -> napi::Result<f64> {
    handles(env)?.memories.insert(handle).ok_or_else(full).or_throw(env)
}

/// Device handles as a `Float64Array` (whose elements no prototype setter can touch).
fn device_array(env: &Env, devices: Vec<Arc<dyn Device>>) -> napi::Result<Float64Array> {
    let ids = devices.into_iter().map(|device| device_handle(env, device)).collect::<napi::Result<Vec<f64>>>()?;
    Ok(Float64Array::new(ids))
}

/// Gives back the handle of a JS object that is gone (its `FinalizationRegistry`
/// callback): `kind` 0 device, 1 context, 2 queue, 3 memory. A handle already given back
/// (memory after `free()`) is a no-op.
pub fn release_handle(env: &Env, kind: u32, id: f64) -> napi::Result<()> {
    let mut handles = handles(env)?;
    match kind {
        0 => drop(handles.devices.remove(id)),
        1 => drop(handles.contexts.remove(id)),
        2 => drop(handles.queues.remove(id)),
        _ => {
            if let Some(memory) = handles.memories.remove(id) {
                drop(handles);
                memory.unreport(env);
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Devices, contexts, queues
// ---------------------------------------------------------------------------------------

/// Handles of the devices `getDevices(filter)` lists.
#[napi]
pub fn device_list(env: &Env, filter: Option<String>) -> napi::Result<Float64Array> {
    let devices = registry().matching(filter.as_deref()).or_throw(env)?;
    device_array(env, devices)
}

/// The device a filter string selects (the default device without one).
#[napi]
pub fn device_select(env: &Env, filter: Option<String>) -> napi::Result<f64> {
    let device = registry().select(filter.as_deref()).map_err(MemoryError::into_device_creation).or_throw(env)?;
    device_handle(env, device)
}

/// What never changes about a device, as JSON: `{ name, vendor, backend, deviceType,
/// driverVersion, filterString, globalMemSize, maxMemAllocSize, aspects }`.
#[napi]
pub fn device_facts(env: &Env, device_id: f64) -> napi::Result<String> {
    let device = device(env, device_id)?;
    let info = device.info();
    Ok(json::object(&[
        ("name", json::string(&info.name)),
        ("vendor", json::string(&info.vendor)),
        ("backend", json::string(&info.backend)),
        ("deviceType", json::string(info.device_type.name())),
        ("driverVersion", json::string(&info.driver_version)),
        ("filterString", json::string(&registry().filter_string_of(device.as_ref()))),
        ("globalMemSize", json::number(info.global_mem_size as f64)),
        ("maxMemAllocSize", json::number(info.max_mem_alloc_size as f64)),
        ("aspects", json::array(info.aspects.iter().map(|a| json::string(a)))),
    ]))
}

/// Whether two device handles name the same device (`SyclDevice` equality).
#[napi]
pub fn device_equals(env: &Env, a: f64, b: f64) -> napi::Result<bool> {
    Ok(device(env, a)?.same_device(device(env, b)?.as_ref()))
}

/// The context every default queue of the device shares.
#[napi]
pub fn device_default_context(env: &Env, device_id: f64) -> napi::Result<f64> {
    let context = device(env, device_id)?.default_context().or_throw(env)?;
    context_handle(env, context)
}

/// A new context of its own for the device (`new SyclContext(device)`).
#[napi]
pub fn device_create_context(env: &Env, device_id: f64) -> napi::Result<f64> {
    let context = device(env, device_id)?.create_context().or_throw(env)?;
    context_handle(env, context)
}

/// The default context of the default device (`new SyclContext()`).
#[napi]
pub fn context_default(env: &Env) -> napi::Result<f64> {
    let device = registry().select(None).or_throw(env)?;
    let context = device.default_context().or_throw(env)?;
    context_handle(env, context)
}

/// Handles of the devices of a context.
#[napi]
pub fn context_devices(env: &Env, context_id: f64) -> napi::Result<Float64Array> {
    let devices = context(env, context_id)?.devices();
    device_array(env, devices)
}

/// Whether two context handles name the same context.
#[napi]
pub fn context_equals(env: &Env, a: f64, b: f64) -> napi::Result<bool> {
    Ok(context(env, a)?.same_context(context(env, b)?.as_ref()))
}

/// `new SyclQueue(...)`: in the context `context_id` if given, on the device `device_id`
/// or the device `filter` names, else on the default device (or the context's first).
#[napi]
pub fn queue_create(
    env: &Env,
    context_id: Option<f64>,
    device_id: Option<f64>,
    filter: Option<String>,
) -> napi::Result<f64> {
    let context = context_id.map(|id| context(env, id)).transpose()?;
    let choice = match (device_id, filter) {
        (Some(id), _) => DeviceChoice::Device(device(env, id)?),
        (None, Some(text)) => DeviceChoice::Filter(text),
        (None, None) => DeviceChoice::Default,
    };
    let queue = registry().make_queue(context, choice).or_throw(env)?;
    queue_handle(env, queue)
}

/// The cached queue of a device (the default device without one): the queue every
/// allocation made without a queue uses.
#[napi]
pub fn queue_cached(env: &Env, device_id: Option<f64>) -> napi::Result<f64> {
    let device = match device_id {
        Some(id) => device(env, id)?,
        None => registry().select(None).map_err(MemoryError::into_queue_creation).or_throw(env)?,
    };
    let queue = registry().cached_queue(&device).map_err(MemoryError::into_queue_creation).or_throw(env)?;
    queue_handle(env, queue)
}

/// The device of a queue.
#[napi]
pub fn queue_device(env: &Env, queue_id: f64) -> napi::Result<f64> {
    let device = queue(env, queue_id)?.device();
    device_handle(env, device)
}

/// The context of a queue.
#[napi]
pub fn queue_context(env: &Env, queue_id: f64) -> napi::Result<f64> {
    let context = queue(env, queue_id)?.context();
    context_handle(env, context)
}

/// Whether two queue handles name the same queue.
#[napi]
pub fn queue_equals(env: &Env, a: f64, b: f64) -> napi::Result<bool> {
    Ok(Arc::ptr_eq(&queue(env, a)?, &queue(env, b)?))
}

/// Waits for the queue's work, reporting its asynchronous errors.
#[napi]
pub fn queue_wait(env: &Env, queue_id: f64) -> napi::Result<()> {
    queue(env, queue_id)?.wait().or_throw(env)
}

/// Why no device is available from each runtime that did not load (empty when all
/// did), as a JSON array of strings.
#[napi]
pub fn runtime_diagnostics() -> String {
    json::array(registry().unavailable().iter().map(|line| json::string(line)))
}

// ---------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------

fn kind_of(env: &Env, value: u32) -> napi::Result<UsmKind> {
    match value {
        1 => Ok(UsmKind::Device),
        2 => Ok(UsmKind::Shared),
        3 => Ok(UsmKind::Host),
        _ => Err(MemoryError::UnknownUsmType { value }).or_throw(env),
    }
}

/// A new allocation of `nbytes` (the JS layer checked it is a positive integer) of
/// `kind` (dpctl's enum value) on the queue `queue_id`.
pub fn mem_allocate(env: &Env, queue_id: f64, kind: u32, nbytes: f64, alignment: f64) -> napi::Result<f64> {
    let queue = queue(env, queue_id)?;
    let memory = UsmMemory::allocate(&queue, kind_of(env, kind)?, nbytes as u64, alignment as u64).or_throw(env)?;
    memory_handle(env, MemoryHandle::allocated(env, memory))
}

/// A second handle on the same memory (zero-copy; views share the allocation).
#[napi]
pub fn mem_view(env: &Env, memory_id: f64) -> napi::Result<f64> {
    let memory = live_memory(env, memory_id)?;
    memory_handle(env, MemoryHandle::new(memory))
}

/// The memory of `source_id` as memory of `kind`: a view when it is of that kind, a new
/// allocation on `queue_id` holding a copy when `copy`, else `ERR_USM_KIND_MISMATCH`.
#[napi]
pub fn mem_adopt(env: &Env, source_id: f64, kind: u32, copy: bool, queue_id: f64) -> napi::Result<f64> {
    let source = live_memory(env, source_id)?;
    let queue = queue(env, queue_id)?;
    let handle = match UsmMemory::adopt(source, kind_of(env, kind)?, copy, &queue).or_throw(env)? {
        Adopted::View(memory) => MemoryHandle::new(memory),
        Adopted::Copy(memory) => MemoryHandle::allocated(env, memory),
    };
    memory_handle(env, handle)
}

/// Consumes an interface. The fields are the JS layer's own plain copies; `syclobj`
/// came as a queue or context handle, a filter string, or neither (`shown`: how
/// messages write what it was).
#[napi]
#[allow(clippy::too_many_arguments)]
pub fn mem_consume(
    env: &Env,
    offset: Unknown,
    version: Unknown,
    data: Unknown,
    shape: Unknown,
    typestr: Unknown,
    strides: Unknown,
    syclobj_present: bool,
    syclobj_queue: Option<f64>,
    syclobj_context: Option<f64>,
    syclobj_filter: Option<String>,
    shown: String,
) -> napi::Result<f64> {
    let raw = RawInterface {
        offset: iface_value(offset, 0)?,
        version: iface_value(version, 0)?,
        data: iface_value(data, 0)?,
        syclobj_present,
        shape: iface_value(shape, 0)?,
        typestr: iface_value(typestr, 0)?,
        strides: iface_value(strides, 0)?,
    };
    let syclobj = match (syclobj_queue, syclobj_context, syclobj_filter) {
        (Some(id), _, _) => SyclObj::Queue(queue(env, id)?),
        (None, Some(id), _) => SyclObj::Context(context(env, id)?),
        (None, None, Some(text)) => SyclObj::Filter(text),
        (None, None, None) => SyclObj::Invalid,
    };
    let memory = consume(registry(), &raw, syclobj, &shown).or_throw(env)?;
    memory_handle(env, MemoryHandle::new(memory))
}

/// Longest list read from an interface field; longer ones are refused as malformed.
const MAX_LIST: u32 = 1024;

fn iface_value(value: Unknown, depth: u32) -> napi::Result<IfaceValue> {
    Ok(match value.get_type()? {
        ValueType::Undefined => IfaceValue::Missing,
        ValueType::Null => IfaceValue::Null,
        ValueType::Boolean => IfaceValue::Bool(value.coerce_to_bool()?),
        ValueType::Number => IfaceValue::Number(value.coerce_to_number()?.get_double()?),
        ValueType::BigInt => {
            let big = ffi::bigint(&value)?;
            IfaceValue::from_bigint_words(big.sign_bit, &big.words)
        }
        ValueType::String => IfaceValue::String(value.coerce_to_string()?.into_utf8()?.into_owned()?),
        ValueType::Object if value.is_array()? && depth == 0 => {
            let array = value.coerce_to_object()?;
            let length: u32 = array.get_named_property("length")?;
            if length > MAX_LIST {
                return Ok(IfaceValue::Other(format!("array of {length} elements")));
            }
            let mut items = Vec::with_capacity(length as usize);
            for index in 0..length {
                items.push(iface_value(array.get_element::<Unknown>(index)?, depth + 1)?);
            }
            IfaceValue::List(items)
        }
        ValueType::Object if value.is_array()? => IfaceValue::Other("array".into()),
        ValueType::Object => IfaceValue::Other("object".into()),
        ValueType::Function => IfaceValue::Other("function".into()),
        ValueType::Symbol => IfaceValue::Other("symbol".into()),
        _ => IfaceValue::Other("value".into()),
    })
}

/// `[nbytes, kind, readOnly ? 1 : 0]` of live memory (the pointer: `memPointer`).
#[napi]
pub fn mem_facts(env: &Env, memory_id: f64) -> napi::Result<Float64Array> {
    let memory = live_memory(env, memory_id)?;
    let facts = vec![
        memory.nbytes() as f64,
        f64::from(memory.usm_type(None).enum_value()),
        f64::from(u8::from(memory.read_only())),
    ];
    Ok(Float64Array::new(facts))
}

/// The address, as a bigint.
pub fn mem_pointer(env: &Env, memory_id: f64) -> napi::Result<u64> {
    Ok(live_memory(env, memory_id)?.address())
}

/// dpctl's kind enum of the memory in the context `context_id` (its own without one).
#[napi]
pub fn mem_kind(env: &Env, memory_id: f64, context_id: Option<f64>) -> napi::Result<u32> {
    let memory = live_memory(env, memory_id)?;
    let context = context_id.map(|id| context(env, id)).transpose()?;
    Ok(memory.usm_type(context.as_deref()).enum_value())
}

/// The queue the memory is used through.
#[napi]
pub fn mem_queue(env: &Env, memory_id: f64) -> napi::Result<f64> {
    let queue = live_memory(env, memory_id)?.queue().clone();
    queue_handle(env, queue)
}

/// The zero-copy `ArrayBuffer` over host or shared memory (the JS layer makes it once).
#[napi]
pub fn mem_buffer<'env>(env: &'env Env, memory_id: f64) -> napi::Result<Unknown<'env>> {
    let memory = live_memory(env, memory_id)?;
    let (address, len) = memory.host_view(ffi::MAX_BUFFER_LENGTH).or_throw(env)?;
    let lease: BufferLease = Rc::new(RefCell::new(Some(memory.owner().clone())));
    let buffer = match ffi::external_arraybuffer(env, address as *mut u8, len, lease.clone()) {
        Ok(buffer) => buffer,
        Err(ExternalBufferError::NotAllowed) => return Err(MemoryError::ExternalBuffersUnsupported).or_throw(env),
        Err(ExternalBufferError::TooLarge) => {
            return Err(too_large_for_host(memory.nbytes(), ffi::MAX_BUFFER_LENGTH)).or_throw(env)
        }
        Err(ExternalBufferError::Napi(err)) => return Err(err),
    };
    // Weak: the buffer must stay collectable (its exporter may hold the memory object).
    let reference = JsRef::weak(&buffer)?;
    if let Some(handle) = handles(env)?.memories.get(memory_id) {
        handle.buffer.replace(Some((lease, reference)));
    }
    Ok(buffer)
}

/// Releases the memory now and gives the handle back. Its zero-copy `ArrayBuffer`, if
/// it made one, is detached here, and only then does the buffer's lease let go (a buffer
/// someone else detached, by transferring it, may still reach the memory). A handle
/// already given back is a no-op.
pub fn mem_free(env: &Env, memory_id: f64) -> napi::Result<()> {
    let Some(handle) = handles(env)?.memories.remove(memory_id) else { return Ok(()) };
    if let Some((lease, reference)) = handle.buffer.take() {
        // A buffer already collected has let go of its lease itself.
        if let Some(buffer) = reference.get_if_alive(env)? {
            if ffi::detach_arraybuffer(env, &buffer)? {
                if let Ok(mut held) = lease.try_borrow_mut() {
                    held.take();
                }
            }
        }
    }
    handle.unreport(env);
    Ok(())
}

/// The bytes of a host buffer argument: the JS layer passes only ArrayBuffers and
/// views (a SharedArrayBuffer as a `Uint8Array` over it).
fn host_bytes(env: &Env, value: &Unknown, what: &str) -> napi::Result<HostBytes> {
    ffi::host_bytes(env, value)?.ok_or_else(|| MemoryError::NotHostBuffer { what: what.into() }).or_throw(env)
}

/// `copyToHost(dst)`: the whole memory into the start of a host buffer.
pub fn mem_copy_to_host(env: &Env, memory_id: f64, dst: Unknown) -> napi::Result<()> {
    let memory = live_memory(env, memory_id)?;
    let bytes = host_bytes(env, &dst, "dst")?;
    let registration = crate::js::registration::vouched(env, &bytes)?;
    bytes.with_bytes(|dst| memory.copy_to_host_via(dst, registration.as_deref())).or_throw(env)
}

/// `copyFromHost(src)`: a host buffer into the start of the memory.
pub fn mem_copy_from_host(env: &Env, memory_id: f64, src: Unknown) -> napi::Result<()> {
    let memory = live_memory(env, memory_id)?;
    let bytes = host_bytes(env, &src, "src")?;
    let registration = crate::js::registration::vouched(env, &bytes)?;
    bytes.with_bytes(|src| memory.copy_from_host_via(src.as_read(), registration.as_deref())).or_throw(env)
}

/// `copyFromDevice(src)`: another memory object into the start of this one.
pub fn mem_copy_from_device(env: &Env, memory_id: f64, source_id: f64) -> napi::Result<()> {
    let memory = live_memory(env, memory_id)?;
    let source = live_memory(env, source_id)?;
    memory.copy_from_device(&source).or_throw(env)
}

/// `memset(value)`: every byte of the memory.
pub fn mem_memset(env: &Env, memory_id: f64, value: u32) -> napi::Result<()> {
    live_memory(env, memory_id)?.memset(value as u8).or_throw(env)
}

/// `copyToHost` off the main thread. The JS layer keeps `dst` and the memory object
/// alive until the Promise settles; the task holds the allocation itself.
#[napi(ts_return_type = "Promise<void>")]
pub fn mem_copy_to_host_async(env: &Env, memory_id: f64, dst: Unknown) -> napi::Result<AsyncTask<UsmTask>> {
    let memory = live_memory(env, memory_id)?;
    let bytes = host_bytes(env, &dst, "dst")?;
    let host = HostSide::destination(env, &bytes)?;
    Ok(AsyncTask::new(UsmTask::new(Operation::ToHost { memory, host }, Some(TaskRef::new(&dst)?))))
}

/// `copyFromHostAsync(src)`, on the libuv thread pool.
#[napi(ts_return_type = "Promise<void>")]
pub fn mem_copy_from_host_async(env: &Env, memory_id: f64, src: Unknown) -> napi::Result<AsyncTask<UsmTask>> {
    let memory = live_memory(env, memory_id)?;
    let bytes = host_bytes(env, &src, "src")?;
    let host = HostSide::source(env, &bytes)?;
    Ok(AsyncTask::new(UsmTask::new(Operation::FromHost { memory, host }, None)))
}

/// `copyFromDeviceAsync(src)`, on the libuv thread pool.
#[napi(ts_return_type = "Promise<void>")]
pub fn mem_copy_from_device_async(env: &Env, memory_id: f64, source_id: f64) -> napi::Result<AsyncTask<UsmTask>> {
    let memory = live_memory(env, memory_id)?;
    let source = live_memory(env, source_id)?;
    Ok(AsyncTask::new(UsmTask::new(Operation::FromDevice { memory, source }, None)))
}

/// `memsetAsync(value)`, on the libuv thread pool.
#[napi(ts_return_type = "Promise<void>")]
pub fn mem_memset_async(env: &Env, memory_id: f64, value: u32) -> napi::Result<AsyncTask<UsmTask>> {
    let memory = live_memory(env, memory_id)?;
    Ok(AsyncTask::new(UsmTask::new(Operation::Memset { memory, value: value as u8 }, None)))
}

// ---------------------------------------------------------------------------------------
// Sharing with other threads of the process (`crate::memory::share`)
// ---------------------------------------------------------------------------------------

/// Holds the memory under a new share token and returns the token's text; `timeout_ms`
/// `None` gives the default timeout.
#[napi]
pub fn mem_share(env: &Env, memory_id: f64, timeout_ms: Option<f64>) -> napi::Result<String> {
    let memory = live_memory(env, memory_id)?;
    Ok(share::share(&memory, timeout_ms).or_throw(env)?.text())
}

/// Opens a share token (made in any thread) into memory of this environment, which
/// holds the allocation from now on; returns its memory handle (`memSharedFacts` and
/// `memQueue` tell the rest: a returned typed array would cost more than the open).
#[napi]
pub fn mem_open_shared(env: &Env, token: String, kind: u32, nbytes: f64) -> napi::Result<f64> {
    let kind = kind_of(env, kind)?;
    let memory = share::open(&token, kind, nbytes as u64).or_throw(env)?;
    // Reported to V8 as an allocation of this thread: dropped here without free(), it
    // must drive this thread's collections.
    memory_handle(env, MemoryHandle::allocated(env, memory))
}

/// `cachedQueueKey * 2 + (readOnly ? 1 : 0)` of memory opened from a token. The key is 0
/// unless the memory's queue is its device's cached queue; then it is a number that
/// stands for that queue for the life of the process (the address of the registry's
/// queue, below 2^48), so the JS layer can give it this realm's one object for that
/// queue without making a queue handle or looking the device up.
#[napi]
pub fn mem_shared_facts(env: &Env, memory_id: f64) -> napi::Result<f64> {
    let memory = live_memory(env, memory_id)?;
    let queue = memory.queue();
    let cached = registry().cached_queue(&queue.device()).is_ok_and(|cached| Arc::ptr_eq(&cached, queue));
    let key = if cached { Arc::as_ptr(queue).cast::<()>() as usize as f64 } else { 0.0 };
    Ok(key * 2.0 + f64::from(u8::from(memory.read_only())))
}

/// Revokes a share token still pending (`true`); `false` when it was already opened,
/// revoked or expired.
#[napi]
pub fn mem_revoke_shared(env: &Env, token: String) -> napi::Result<bool> {
    share::revoke(&token).or_throw(env)
}

// ---------------------------------------------------------------------------------------
// Sharing device memory with other processes (`crate::memory::ipc`)
// ---------------------------------------------------------------------------------------

/// Whether memory on the device can be shared with other processes (IPC handles).
#[napi]
pub fn ipc_available(env: &Env, device_id: f64) -> napi::Result<bool> {
    Ok(ipc::available(device(env, device_id)?.as_ref()))
}

/// Bytes of memory free now on the device, where its runtime can tell (CUDA:
/// `cuMemGetInfo`), else `null`: what the IPC tests and the bench compare with a baseline.
#[napi]
pub fn device_free_memory(env: &Env, device_id: f64) -> napi::Result<Option<f64>> {
    let context = device(env, device_id)?.default_context().or_throw(env)?;
    Ok(context.free_memory().map(|bytes| bytes as f64))
}

/// The IPC handle of the memory: its bytes, one per element (the JS layer makes the
/// `Uint8Array` in its own realm).
#[napi]
pub fn mem_ipc_export(env: &Env, memory_id: f64) -> napi::Result<Float64Array> {
    let memory = live_memory(env, memory_id)?;
    let handle = ipc::export(&memory).or_throw(env)?;
    Ok(Float64Array::new(handle.into_iter().map(f64::from).collect()))
}

/// Opens IPC handle bytes (a host buffer) into `nbytes` of memory used through the queue
/// `queue_id`; returns its memory handle.
#[napi]
pub fn mem_ipc_open(env: &Env, bytes: Unknown, queue_id: f64, nbytes: f64) -> napi::Result<f64> {
    let queue = queue(env, queue_id)?;
    let bytes = host_bytes(env, &bytes, "handle")?;
    let read = |handle: &mut [u8]| {
        bytes.with_bytes(|src| crate::host::host_memcpy(WriteBytes::of_slice(handle), src.as_read()));
    };
    let memory = ipc::open_with(bytes.byte_length(), read, &queue, nbytes as u64).or_throw(env)?;
    // Reported to V8 like an allocation: a mapping dropped without free() must drive
    // collections, which close it.
    memory_handle(env, MemoryHandle::allocated(env, memory))
}

/// The largest `ArrayBuffer` this engine makes, for the JS layer's size checks.
#[napi]
pub fn max_buffer_length() -> f64 {
    ffi::MAX_BUFFER_LENGTH as f64
}

// ---------------------------------------------------------------------------------------
// The calls defined through `ffi::define_fast`: per-call work here is a fraction of a
// microsecond, less than napi-rs's own per-call machinery would add.
// ---------------------------------------------------------------------------------------

fn fast_mem_allocate(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    let (queue_id, kind) = (ffi::f64_arg(env, &args[0])?, ffi::u32_arg(env, &args[1])?);
    let id = mem_allocate(env, queue_id, kind, ffi::f64_arg(env, &args[2])?, ffi::f64_arg(env, &args[3])?)?;
    ffi::js_f64(env, id)
}

fn fast_mem_free(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    mem_free(env, ffi::f64_arg(env, &args[0])?)?;
    ffi::js_undefined(env)
}

fn fast_mem_copy_to_host(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    mem_copy_to_host(env, ffi::f64_arg(env, &args[0])?, args[1])?;
    ffi::js_undefined(env)
}

fn fast_mem_copy_from_host(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    mem_copy_from_host(env, ffi::f64_arg(env, &args[0])?, args[1])?;
    ffi::js_undefined(env)
}

fn fast_mem_copy_from_device(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    mem_copy_from_device(env, ffi::f64_arg(env, &args[0])?, ffi::f64_arg(env, &args[1])?)?;
    ffi::js_undefined(env)
}

fn fast_mem_memset(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    mem_memset(env, ffi::f64_arg(env, &args[0])?, ffi::u32_arg(env, &args[1])?)?;
    ffi::js_undefined(env)
}

fn fast_mem_pointer(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    let address = mem_pointer(env, ffi::f64_arg(env, &args[0])?)?;
    ffi::js_bigint(env, address)
}

fn fast_release_handle(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    release_handle(env, ffi::u32_arg(env, &args[0])?, ffi::f64_arg(env, &args[1])?)?;
    ffi::js_undefined(env)
}

/// Puts the fast calls on `exports`.
pub fn define_fast_calls(env: &Env, exports: &mut napi::bindgen_prelude::Object) -> napi::Result<()> {
    let calls: [(&str, ffi::FastFn); 8] = [
        ("memAllocate", fast_mem_allocate),
        ("memFree", fast_mem_free),
        ("memCopyToHost", fast_mem_copy_to_host),
        ("memCopyFromHost", fast_mem_copy_from_host),
        ("memCopyFromDevice", fast_mem_copy_from_device),
        ("memMemset", fast_mem_memset),
        ("memPointer", fast_mem_pointer),
        ("releaseHandle", fast_release_handle),
    ];
    for (name, function) in calls {
        ffi::define_fast(env, exports, name, function)?;
    }
    Ok(())
}
