//! The native binding: functions over opaque handles, taking and returning primitives,
//! handles and buffers. The JS classes in `lib/` own every object users see, read every
//! option and dictionary, and make every error in their own realm; these functions only
//! convert their arguments and call the Node-free model (`crate::memory`).
//!
//! No user code can run here: the JS layer hands over only primitives, handles, host
//! buffers and plain copies it made of interface fields.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::{Array, AsyncTask, BigInt, JsObjectValue, Unknown};
use napi::{Env, JsValue, ValueType};
use napi_derive::napi;

use crate::error::{InterfaceField, MemoryError};
use crate::js::async_ops::{HostSide, Operation, UsmTask};
use crate::js::errors::{to_js_error, OrThrow};
use crate::js::ffi::{self, handle_of, wrap_handle, ExternalBufferError, Handle, HostBytes, TaskRef};
use crate::memory::allocation::Allocation;
use crate::memory::consume::{consume, SyclObj};
use crate::memory::interface::{IfaceValue, RawInterface};
use crate::memory::kind::UsmKind;
use crate::memory::registry::{registry, DeviceChoice};
use crate::memory::usm::{too_large_for_host, Adopted, UsmMemory};
use crate::provider::{Context, Device, Queue};

/// A device handle.
pub struct DeviceHandle(Arc<dyn Device>);
/// A context handle.
pub struct ContextHandle(Arc<dyn Context>);
/// A queue handle.
pub struct QueueHandle(Arc<dyn Queue>);

impl Handle for DeviceHandle {
    const TAG: napi::sys::napi_type_tag = napi::sys::napi_type_tag { lower: 0x6470_6374_6c2d_6465, upper: 0x7669_6365_0000_0001 };
}
impl Handle for ContextHandle {
    const TAG: napi::sys::napi_type_tag = napi::sys::napi_type_tag { lower: 0x6470_6374_6c2d_6374, upper: 0x7874_0000_0000_0002 };
}
impl Handle for QueueHandle {
    const TAG: napi::sys::napi_type_tag = napi::sys::napi_type_tag { lower: 0x6470_6374_6c2d_7175, upper: 0x6575_6500_0000_0003 };
}

/// What keeps the memory under a zero-copy `ArrayBuffer` alive while the engine can
/// still reach it: the allocation, when it is ours (foreign memory is kept alive by the
/// exporter, which the JS layer ties to the buffer). Shared between the memory handle
/// and the buffer's finalizer; `memFree` empties it once it has detached the buffer.
type BufferLease = Rc<RefCell<Option<Arc<Allocation>>>>;

/// A memory handle: the memory until `memFree`, and what this handle reported to V8.
pub struct MemoryHandle {
    memory: RefCell<Option<UsmMemory>>,
    /// Bytes of an allocation this handle made, reported to V8 as external memory so
    /// that memory dropped without `free()` drives garbage collection. Every kind is
    /// reported, with or without a `buffer`: V8 tracks an external `ArrayBuffer`'s
    /// bytes only as backing-store statistics, which do not schedule collections.
    reported: Cell<i64>,
    /// The lease of the zero-copy `ArrayBuffer`, once made.
    lease: RefCell<Option<BufferLease>>,
}

impl Handle for MemoryHandle {
    const TAG: napi::sys::napi_type_tag = napi::sys::napi_type_tag { lower: 0x6470_6374_6c2d_6d65, upper: 0x6d6f_7279_0000_0004 };

    fn collected(self, env: &Env) {
        // The JS object is gone, and with it every way to `free()` this handle: GC is the
        // fallback that gives the memory back (the buffer's own lease may hold it longer).
        self.unreport(env);
    }
}

fn busy_error() -> MemoryError {
    MemoryError::Busy("this memory object is in use by a call that has not returned".into())
}

fn freed_error() -> MemoryError {
    MemoryError::Freed("USM memory has been freed: this object can no longer be used".into())
}

impl MemoryHandle {
    fn new(memory: UsmMemory) -> Self {
        MemoryHandle { memory: RefCell::new(Some(memory)), reported: Cell::new(0), lease: RefCell::new(None) }
    }

    fn allocated(env: &Env, memory: UsmMemory) -> Self {
        let handle = MemoryHandle::new(memory);
        let bytes = handle.live().map_or(0, |m| i64::try_from(m.nbytes()).unwrap_or(i64::MAX));
        ffi::adjust_external_memory(env, bytes);
        handle.reported.set(bytes);
        handle
    }

    /// The live memory (a cheap clone of its handles); `ERR_USM_FREED` after `memFree`.
    fn live(&self) -> Result<UsmMemory, MemoryError> {
        self.memory.try_borrow().map_err(|_| busy_error())?.as_ref().cloned().ok_or_else(freed_error)
    }

    fn unreport(&self, env: &Env) {
        let bytes = self.reported.replace(0);
        if bytes != 0 {
            ffi::adjust_external_memory(env, -bytes);
        }
    }
}

fn device<'v>(env: &Env, value: &Unknown<'v>) -> napi::Result<&'v Arc<dyn Device>> {
    Ok(&handle_of::<DeviceHandle>(env, value)?.0)
}
fn context<'v>(env: &Env, value: &Unknown<'v>) -> napi::Result<&'v Arc<dyn Context>> {
    Ok(&handle_of::<ContextHandle>(env, value)?.0)
}
fn queue<'v>(env: &Env, value: &Unknown<'v>) -> napi::Result<&'v Arc<dyn Queue>> {
    Ok(&handle_of::<QueueHandle>(env, value)?.0)
}
fn memory<'v>(env: &Env, value: &Unknown<'v>) -> napi::Result<&'v MemoryHandle> {
    handle_of::<MemoryHandle>(env, value)
}
fn live_memory(env: &Env, value: &Unknown) -> napi::Result<UsmMemory> {
    memory(env, value)?.live().or_throw(env)
}

fn device_handle<'env>(env: &'env Env, device: Arc<dyn Device>) -> napi::Result<Unknown<'env>> {
    wrap_handle(env, DeviceHandle(device))
}
fn context_handle<'env>(env: &'env Env, context: Arc<dyn Context>) -> napi::Result<Unknown<'env>> {
    wrap_handle(env, ContextHandle(context))
}
fn queue_handle<'env>(env: &'env Env, queue: Arc<dyn Queue>) -> napi::Result<Unknown<'env>> {
    wrap_handle(env, QueueHandle(queue))
}

fn device_array<'env>(env: &'env Env, devices: Vec<Arc<dyn Device>>) -> napi::Result<Array<'env>> {
    let mut array = env.create_array(devices.len() as u32)?;
    for (index, device) in devices.into_iter().enumerate() {
        array.set(index as u32, device_handle(env, device)?)?;
    }
    Ok(array)
}

// ---------------------------------------------------------------------------------------
// Devices, contexts, queues
// ---------------------------------------------------------------------------------------

/// Handles of the devices `getDevices(filter)` lists.
#[napi]
pub fn device_list<'env>(env: &'env Env, filter: Option<String>) -> napi::Result<Array<'env>> {
    let devices = registry().matching(filter.as_deref()).or_throw(env)?;
    device_array(env, devices)
}

/// The device a filter string selects (the default device without one).
#[napi]
pub fn device_select<'env>(env: &'env Env, filter: Option<String>) -> napi::Result<Unknown<'env>> {
    let device = registry().select(filter.as_deref()).map_err(MemoryError::into_device_creation).or_throw(env)?;
    device_handle(env, device)
}

/// What never changes about a device.
#[napi(object)]
pub struct DeviceFacts {
    pub name: String,
    pub vendor: String,
    pub backend: String,
    pub device_type: String,
    pub driver_version: String,
    pub filter_string: String,
    pub global_mem_size: f64,
    pub max_mem_alloc_size: f64,
    pub aspects: Vec<String>,
}

#[napi]
pub fn device_facts(env: &Env, device_handle: Unknown) -> napi::Result<DeviceFacts> {
    let device = device(env, &device_handle)?;
    let info = device.info();
    Ok(DeviceFacts {
        name: info.name.clone(),
        vendor: info.vendor.clone(),
        backend: info.backend.clone(),
        device_type: info.device_type.name().to_string(),
        driver_version: info.driver_version.clone(),
        filter_string: registry().filter_string_of(device.as_ref()),
        global_mem_size: info.global_mem_size as f64,
        max_mem_alloc_size: info.max_mem_alloc_size as f64,
        aspects: info.aspects.clone(),
    })
}

#[napi]
pub fn device_equals(env: &Env, a: Unknown, b: Unknown) -> napi::Result<bool> {
    Ok(device(env, &a)?.same_device(device(env, &b)?.as_ref()))
}

#[napi]
pub fn device_default_context<'env>(env: &'env Env, device_handle: Unknown) -> napi::Result<Unknown<'env>> {
    let context = device(env, &device_handle)?.default_context().or_throw(env)?;
    context_handle(env, context)
}

#[napi]
pub fn device_create_context<'env>(env: &'env Env, device_handle: Unknown) -> napi::Result<Unknown<'env>> {
    let context = device(env, &device_handle)?.create_context().or_throw(env)?;
    context_handle(env, context)
}

/// The default context of the default device (`new SyclContext()`).
#[napi]
pub fn context_default<'env>(env: &'env Env) -> napi::Result<Unknown<'env>> {
    let device = registry().select(None).or_throw(env)?;
    context_handle(env, device.default_context().or_throw(env)?)
}

#[napi]
pub fn context_devices<'env>(env: &'env Env, context_handle: Unknown) -> napi::Result<Array<'env>> {
    device_array(env, context(env, &context_handle)?.devices())
}

#[napi]
pub fn context_equals(env: &Env, a: Unknown, b: Unknown) -> napi::Result<bool> {
    Ok(context(env, &a)?.same_context(context(env, &b)?.as_ref()))
}

/// `new SyclQueue(...)`: in `context` if given, on `device` (a handle) or the device
/// `filter` names, else on the default device (or the context's first).
#[napi]
pub fn queue_create<'env>(
    env: &'env Env,
    context_handle: Option<Unknown>,
    device_handle: Option<Unknown>,
    filter: Option<String>,
) -> napi::Result<Unknown<'env>> {
    let context = context_handle.map(|value| context(env, &value).cloned()).transpose()?;
    let choice = match (device_handle, filter) {
        (Some(value), _) => DeviceChoice::Device(device(env, &value)?.clone()),
        (None, Some(text)) => DeviceChoice::Filter(text),
        (None, None) => DeviceChoice::Default,
    };
    let queue = registry().make_queue(context, choice).or_throw(env)?;
    queue_handle(env, queue)
}

/// The cached queue of a device (the default device without one): the queue every
/// allocation made without a queue uses.
#[napi]
pub fn queue_cached<'env>(env: &'env Env, device_handle: Option<Unknown>) -> napi::Result<Unknown<'env>> {
    let device = match device_handle {
        Some(value) => device(env, &value)?.clone(),
        None => registry().select(None).map_err(MemoryError::into_queue_creation).or_throw(env)?,
    };
    let queue = registry().cached_queue(&device).map_err(MemoryError::into_queue_creation).or_throw(env)?;
    queue_handle(env, queue)
}

#[napi]
pub fn queue_device<'env>(env: &'env Env, queue_handle: Unknown) -> napi::Result<Unknown<'env>> {
    let device = queue(env, &queue_handle)?.device();
    device_handle(env, device)
}

#[napi]
pub fn queue_context<'env>(env: &'env Env, queue_handle: Unknown) -> napi::Result<Unknown<'env>> {
    let context = queue(env, &queue_handle)?.context();
    context_handle(env, context)
}

#[napi]
pub fn queue_equals(env: &Env, a: Unknown, b: Unknown) -> napi::Result<bool> {
    Ok(Arc::ptr_eq(queue(env, &a)?, queue(env, &b)?))
}

#[napi]
pub fn queue_wait(env: &Env, queue_handle: Unknown) -> napi::Result<()> {
    queue(env, &queue_handle)?.wait().or_throw(env)
}

/// Why no device is available from each runtime that did not load (empty when all did).
#[napi]
pub fn runtime_diagnostics() -> Vec<String> {
    registry().unavailable().to_vec()
}

// ---------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------

fn kind_of(env: &Env, value: u32) -> napi::Result<UsmKind> {
    match value {
        1 => Ok(UsmKind::Device),
        2 => Ok(UsmKind::Shared),
        3 => Ok(UsmKind::Host),
        _ => Err(MemoryError::UnknownUsmType(format!("{value} is not a USM kind"))).or_throw(env),
    }
}

/// A new allocation of `nbytes` (the JS layer checked it is a positive integer) of
/// `kind` (dpctl's enum value) on `queue`.
#[napi]
pub fn mem_allocate<'env>(env: &'env Env, queue_handle: Unknown, kind: u32, nbytes: f64, alignment: f64) -> napi::Result<Unknown<'env>> {
    let queue = queue(env, &queue_handle)?;
    let memory = UsmMemory::allocate(queue, kind_of(env, kind)?, nbytes as u64, alignment as u64).or_throw(env)?;
    wrap_handle(env, MemoryHandle::allocated(env, memory))
}

/// A second handle on the same memory (zero-copy; views share the allocation).
#[napi]
pub fn mem_view<'env>(env: &'env Env, memory_handle: Unknown) -> napi::Result<Unknown<'env>> {
    let memory = live_memory(env, &memory_handle)?;
    wrap_handle(env, MemoryHandle::new(memory))
}

/// The memory of `source` as memory of `kind`: a view when it is of that kind, a new
/// allocation on `queue` holding a copy when `copy`, else `ERR_USM_KIND_MISMATCH`.
/// `[handle, copied]`.
#[napi]
pub fn mem_adopt<'env>(env: &'env Env, source: Unknown, kind: u32, copy: bool, queue_handle: Unknown) -> napi::Result<Array<'env>> {
    let source = live_memory(env, &source)?;
    let queue = queue(env, &queue_handle)?;
    let (handle, copied) = match UsmMemory::adopt(source, kind_of(env, kind)?, copy, queue).or_throw(env)? {
        Adopted::View(memory) => (MemoryHandle::new(memory), false),
        Adopted::Copy(memory) => (MemoryHandle::allocated(env, memory), true),
    };
    let mut pair = env.create_array(2)?;
    pair.set(0, wrap_handle(env, handle)?)?;
    pair.set(1, copied)?;
    Ok(pair)
}

/// Consumes an interface. The fields are the JS layer's own plain copies; `syclobj`
/// came as a queue or context handle, a filter string, or neither (`shown`: how
/// messages write what it was).
#[napi]
#[allow(clippy::too_many_arguments)]
pub fn mem_consume<'env>(
    env: &'env Env,
    offset: Unknown,
    version: Unknown,
    data: Unknown,
    shape: Unknown,
    typestr: Unknown,
    strides: Unknown,
    syclobj_present: bool,
    syclobj_queue: Option<Unknown>,
    syclobj_context: Option<Unknown>,
    syclobj_filter: Option<String>,
    shown: String,
) -> napi::Result<Unknown<'env>> {
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
        (Some(value), _, _) => SyclObj::Queue(queue(env, &value)?.clone()),
        (None, Some(value), _) => SyclObj::Context(context(env, &value)?.clone()),
        (None, None, Some(text)) => SyclObj::Filter(text),
        (None, None, None) => SyclObj::Invalid,
    };
    let memory = consume(&raw, syclobj, &shown).or_throw(env)?;
    wrap_handle(env, MemoryHandle::new(memory))
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

/// The error for an interface that is not an object (`shown`: the exporter).
#[napi]
pub fn interface_not_object(env: &Env, shown: String) -> napi::Error {
    to_js_error(
        env,
        MemoryError::malformed(
            InterfaceField::Interface,
            format!("Argument {shown} does not correctly expose `__sycl_usm_array_interface__`: it must be an object."),
        ),
    )
}

/// `[nbytes, pointer, kind, readOnly]` of live memory.
#[napi]
pub fn mem_facts<'env>(env: &'env Env, memory_handle: Unknown) -> napi::Result<Array<'env>> {
    let memory = live_memory(env, &memory_handle)?;
    let mut facts = env.create_array(4)?;
    facts.set(0, memory.nbytes() as f64)?;
    facts.set(1, BigInt::from(memory.address()))?;
    facts.set(2, memory.usm_type(None).enum_value())?;
    facts.set(3, memory.read_only())?;
    Ok(facts)
}

/// The address, as a bigint.
#[napi]
pub fn mem_pointer(env: &Env, memory_handle: Unknown) -> napi::Result<BigInt> {
    Ok(BigInt::from(live_memory(env, &memory_handle)?.address()))
}

/// dpctl's kind enum of the memory in `context` (its own context without one).
#[napi]
pub fn mem_kind(env: &Env, memory_handle: Unknown, context_handle: Option<Unknown>) -> napi::Result<u32> {
    let memory = live_memory(env, &memory_handle)?;
    let context = context_handle.map(|value| context(env, &value).cloned()).transpose()?;
    Ok(memory.usm_type(context.as_deref()).enum_value())
}

/// The queue the memory is used through.
#[napi]
pub fn mem_queue<'env>(env: &'env Env, memory_handle: Unknown) -> napi::Result<Unknown<'env>> {
    let memory = live_memory(env, &memory_handle)?;
    queue_handle(env, memory.queue().clone())
}

/// dpctl's `repr`.
#[napi]
pub fn mem_describe(env: &Env, memory_handle: Unknown) -> napi::Result<String> {
    Ok(live_memory(env, &memory_handle)?.describe())
}

/// The zero-copy `ArrayBuffer` over host or shared memory (the JS layer makes it once).
#[napi]
pub fn mem_buffer<'env>(env: &'env Env, memory_handle: Unknown) -> napi::Result<Unknown<'env>> {
    let handle = memory(env, &memory_handle)?;
    let memory = handle.live().or_throw(env)?;
    let (address, len) = memory.host_view(ffi::MAX_BUFFER_LENGTH).or_throw(env)?;
    let lease: BufferLease = Rc::new(RefCell::new(memory.owner().cloned()));
    let buffer = match ffi::external_arraybuffer(env, address as *mut u8, len, lease.clone()) {
        Ok(buffer) => buffer,
        Err(ExternalBufferError::NotAllowed) => {
            return Err(MemoryError::ExternalBuffersUnsupported(
                "this JS engine forbids external ArrayBuffers (e.g. Electron's V8 memory cage), so USM memory cannot be viewed without a copy: use copyToHost()/copyFromHost()".into(),
            ))
            .or_throw(env)
        }
        Err(ExternalBufferError::TooLarge) => return Err(too_large_for_host(memory.nbytes(), ffi::MAX_BUFFER_LENGTH)).or_throw(env),
        Err(ExternalBufferError::Napi(err)) => return Err(err),
    };
    *handle.lease.try_borrow_mut().map_err(|_| busy_error()).or_throw(env)? = Some(lease);
    Ok(buffer)
}

/// Releases the handle's memory now. `buffer` is its zero-copy `ArrayBuffer`, if the JS
/// layer made one: detached here, and only then does its lease let go (a buffer someone
/// else detached, by transferring it, may still reach the memory). Idempotent.
#[napi]
pub fn mem_free(env: &Env, memory_handle: Unknown, buffer: Option<Unknown>) -> napi::Result<()> {
    let handle = memory(env, &memory_handle)?;
    let mut memory = handle.memory.try_borrow_mut().map_err(|_| busy_error()).or_throw(env)?;
    let lease = handle.lease.try_borrow_mut().map_err(|_| busy_error()).or_throw(env)?.take();
    if let (Some(lease), Some(buffer)) = (lease, buffer) {
        if ffi::detach_arraybuffer(env, &buffer)? {
            if let Ok(mut held) = lease.try_borrow_mut() {
                held.take();
            }
        }
    }
    handle.unreport(env);
    memory.take();
    Ok(())
}

/// The bytes of a host buffer argument: the JS layer passes only ArrayBuffers and
/// views (a SharedArrayBuffer as a `Uint8Array` over it).
fn host_bytes(env: &Env, value: &Unknown, what: &str) -> napi::Result<HostBytes> {
    ffi::host_bytes(env, value)?
        .ok_or_else(|| MemoryError::InvalidArgType(format!("{what} must be an ArrayBuffer, SharedArrayBuffer, TypedArray, DataView or Buffer")))
        .or_throw(env)
}

#[napi]
pub fn mem_copy_to_host(env: &Env, memory_handle: Unknown, dst: Unknown) -> napi::Result<()> {
    let memory = live_memory(env, &memory_handle)?;
    let bytes = host_bytes(env, &dst, "dst")?;
    bytes.with_slice(|dst| memory.copy_to_host(dst)).or_throw(env)
}

#[napi]
pub fn mem_copy_from_host(env: &Env, memory_handle: Unknown, src: Unknown) -> napi::Result<()> {
    let memory = live_memory(env, &memory_handle)?;
    let bytes = host_bytes(env, &src, "src")?;
    bytes.with_slice(|src| memory.copy_from_host(src)).or_throw(env)
}

#[napi]
pub fn mem_copy_from_device(env: &Env, memory_handle: Unknown, src: Unknown) -> napi::Result<()> {
    let memory = live_memory(env, &memory_handle)?;
    let source = live_memory(env, &src)?;
    memory.copy_from_device(&source).or_throw(env)
}

#[napi]
pub fn mem_memset(env: &Env, memory_handle: Unknown, value: u32) -> napi::Result<()> {
    live_memory(env, &memory_handle)?.memset(value as u8).or_throw(env)
}

/// `copyToHost` off the main thread. The JS layer keeps `dst` and the memory object
/// alive until the Promise settles; the task holds the allocation itself.
#[napi(ts_return_type = "Promise<void>")]
pub fn mem_copy_to_host_async(env: &Env, memory_handle: Unknown, dst: Unknown) -> napi::Result<AsyncTask<UsmTask>> {
    let memory = live_memory(env, &memory_handle)?;
    let bytes = host_bytes(env, &dst, "dst")?;
    let host = HostSide::destination(env, &bytes)?;
    Ok(AsyncTask::new(UsmTask::new(Operation::ToHost { memory, host }, Some(TaskRef::new(&dst)?))))
}

#[napi(ts_return_type = "Promise<void>")]
pub fn mem_copy_from_host_async(env: &Env, memory_handle: Unknown, src: Unknown) -> napi::Result<AsyncTask<UsmTask>> {
    let memory = live_memory(env, &memory_handle)?;
    let bytes = host_bytes(env, &src, "src")?;
    let host = HostSide::source(env, &bytes)?;
    Ok(AsyncTask::new(UsmTask::new(Operation::FromHost { memory, host }, None)))
}

#[napi(ts_return_type = "Promise<void>")]
pub fn mem_copy_from_device_async(env: &Env, memory_handle: Unknown, src: Unknown) -> napi::Result<AsyncTask<UsmTask>> {
    let memory = live_memory(env, &memory_handle)?;
    let source = live_memory(env, &src)?;
    Ok(AsyncTask::new(UsmTask::new(Operation::FromDevice { memory, source }, None)))
}

#[napi(ts_return_type = "Promise<void>")]
pub fn mem_memset_async(env: &Env, memory_handle: Unknown, value: u32) -> napi::Result<AsyncTask<UsmTask>> {
    let memory = live_memory(env, &memory_handle)?;
    Ok(AsyncTask::new(UsmTask::new(Operation::Memset { memory, value: value as u8 }, None)))
}

/// The largest `ArrayBuffer` this engine makes, for the JS layer's size checks.
#[napi]
pub fn max_buffer_length() -> f64 {
    ffi::MAX_BUFFER_LENGTH as f64
}
