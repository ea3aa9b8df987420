//! Memory objects (`lib/memory.js`): allocation, views, adoption of other memory and of
//! `__sycl_usm_array_interface__`, facts, the zero-copy buffer, `free`, and the copies
//! and fills, synchronous and on libuv's thread pool. The hottest of them are the fast
//! calls at the end (`define_fast_calls`).

use std::cell::RefCell;
use std::rc::Rc;

use napi::bindgen_prelude::{AsyncTask, Float64Array, JsObjectValue, Object, Unknown};
use napi::{Env, JsValue, ValueType};
use napi_derive::napi;

use crate::error::MemoryError;
use crate::js::async_ops::{HostSide, Operation, UsmTask};
use crate::js::errors::OrThrow;
use crate::js::ffi::{self, ExternalBufferError, HostBytes, JsRef, TaskRef};
use crate::js::handles::{BufferLease, HandleKind, MemoryHandle};
use crate::js::lookup::{handles, lookup};
use crate::js::state::process;
use crate::memory::consume::{consume, SyclObj};
use crate::memory::interface::{IfaceValue, RawInterface, MAX_LIST};
use crate::memory::usm::{too_large_for_host, Adopted, UsmMemory};
use crate::runtime::UsmKind;

/// Gives back the handle of a JS object that is gone (its `FinalizationRegistry`
/// callback): `kind` 0 device, 1 context, 2 queue, 3 memory. A handle already given back
/// (memory after `free()`) is a no-op.
pub fn release_handle(env: &Env, kind: u32, id: f64) -> napi::Result<()> {
    let memory = handles(env)?.release(HandleKind::from_number(kind), id);
    if let Some(memory) = memory {
        memory.unreport(env);
    }
    Ok(())
}

/// A new allocation of `nbytes` (the JS layer checked it is a positive integer) of
/// `kind` (dpctl's enum value) on the queue `queue_id`.
pub fn mem_allocate(env: &Env, queue_id: f64, kind: u32, nbytes: f64, alignment: f64) -> napi::Result<f64> {
    mem_allocate_with_address(env, queue_id, kind, nbytes, alignment).map(|(id, _)| id)
}

/// `mem_allocate`, and the new allocation's address (what `js::observe`'s traced
/// allocation hands over without a second lookup).
pub fn mem_allocate_with_address(
    env: &Env,
    queue_id: f64,
    kind: u32,
    nbytes: f64,
    alignment: f64,
) -> napi::Result<(f64, u64)> {
    let queue = lookup(env, |h| h.queue(queue_id))?;
    let kind = UsmKind::from_allocated_value(kind).or_throw(env)?;
    let memory = UsmMemory::allocate(process().pool(), &queue, kind, nbytes as u64, alignment as u64).or_throw(env)?;
    let address = memory.address();
    let handle = MemoryHandle::allocated(env, memory);
    Ok((lookup(env, |h| h.add_memory(handle))?, address))
}

/// A second handle on the same memory (zero-copy; views share the allocation).
#[napi]
pub fn mem_view(env: &Env, memory_id: f64) -> napi::Result<f64> {
    lookup(env, |h| {
        let memory = h.memory(memory_id)?;
        h.add_memory(MemoryHandle::new(memory))
    })
}

/// The memory of `source_id` as memory of `kind`: a view when it is of that kind, a new
/// allocation on `queue_id` holding a copy when `copy`, else `ERR_USM_KIND_MISMATCH`.
#[napi]
pub fn mem_adopt(env: &Env, source_id: f64, kind: u32, copy: bool, queue_id: f64) -> napi::Result<f64> {
    let (source, queue) = lookup(env, |h| Ok((h.memory(source_id)?, h.queue(queue_id)?)))?;
    let kind = UsmKind::from_allocated_value(kind).or_throw(env)?;
    let handle =
        match UsmMemory::adopt(process().pool(), process().host_copies(), source, kind, copy, &queue).or_throw(env)? {
            Adopted::View(memory) => MemoryHandle::new(memory),
            Adopted::Copy(memory) => MemoryHandle::allocated(env, memory),
        };
    lookup(env, |h| h.add_memory(handle))
}

/// Consumes an interface. `fields` is `{ offset, version, data, shape, typestr, strides }`,
/// the JS layer's own plain copies of the interface's fields; `syclobj` is `{ present,
/// queue, context, filter, shown }`: whether the interface had one, and what it was (a
/// queue or context handle, a filter string, or neither; `shown`: how messages write it).
/// Both are objects the JS layer made for this call (plain data properties only).
#[napi]
pub fn mem_consume(env: &Env, fields: Object, syclobj: Object) -> napi::Result<f64> {
    let field = |name: &str| iface_value(fields.get_named_property::<Unknown>(name)?, 0);
    let raw = RawInterface {
        offset: field("offset")?,
        version: field("version")?,
        data: field("data")?,
        syclobj_present: syclobj.get_named_property::<bool>("present")?,
        shape: field("shape")?,
        typestr: field("typestr")?,
        strides: field("strides")?,
    };
    let queue: Option<f64> = syclobj.get_named_property("queue")?;
    let context: Option<f64> = syclobj.get_named_property("context")?;
    let filter: Option<String> = syclobj.get_named_property("filter")?;
    let shown: String = syclobj.get_named_property("shown")?;
    let syclobj = lookup(env, |h| {
        Ok(match (queue, context, filter) {
            (Some(id), _, _) => SyclObj::Queue(h.queue(id)?),
            (None, Some(id), _) => SyclObj::Context(h.context(id)?),
            (None, None, Some(text)) => SyclObj::Filter(text),
            (None, None, None) => SyclObj::Invalid,
        })
    })?;
    let memory = consume(process(), &raw, syclobj, &shown).or_throw(env)?;
    lookup(env, |h| h.add_memory(MemoryHandle::new(memory)))
}

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
    let memory = lookup(env, |h| h.memory(memory_id))?;
    let facts = vec![
        memory.nbytes() as f64,
        f64::from(memory.usm_type(None).enum_value()),
        f64::from(u8::from(memory.read_only())),
    ];
    Ok(Float64Array::new(facts))
}

/// The address, as a bigint.
pub fn mem_pointer(env: &Env, memory_id: f64) -> napi::Result<u64> {
    Ok(lookup(env, |h| h.memory(memory_id))?.address())
}

/// dpctl's kind enum of the memory in the context `context_id` (its own without one).
#[napi]
pub fn mem_kind(env: &Env, memory_id: f64, context_id: Option<f64>) -> napi::Result<u32> {
    let (memory, context) =
        lookup(env, |h| Ok((h.memory(memory_id)?, context_id.map(|id| h.context(id)).transpose()?)))?;
    Ok(memory.usm_type(context.as_deref()).enum_value())
}

/// The queue the memory is used through.
#[napi]
pub fn mem_queue(env: &Env, memory_id: f64) -> napi::Result<f64> {
    lookup(env, |h| {
        let queue = h.memory(memory_id)?.queue().clone();
        h.add_queue(queue)
    })
}

/// The zero-copy `ArrayBuffer` over host or shared memory (the JS layer makes it once).
/// A fast call: Node's external buffer is most of the cost of a view, and napi-rs's
/// per-call machinery would add a quarter to the rest.
pub fn mem_buffer(env: &Env, memory_id: f64) -> napi::Result<napi::sys::napi_value> {
    let (address, len, lease) = lookup(env, |h| {
        let memory = h.memory(memory_id)?;
        let (address, len) = memory.host_view(ffi::MAX_BUFFER_LENGTH)?;
        let lease: BufferLease = Rc::new(RefCell::new(Some(memory.owner().clone())));
        Ok((address, len, lease))
    })?;
    let buffer = match ffi::external_arraybuffer(env, address as *mut u8, len, lease.clone()) {
        Ok(buffer) => buffer,
        Err(ExternalBufferError::NotAllowed) => return Err(MemoryError::ExternalBuffersUnsupported).or_throw(env),
        Err(ExternalBufferError::TooLarge) => {
            return Err(too_large_for_host(len as u64, ffi::MAX_BUFFER_LENGTH)).or_throw(env)
        }
        Err(ExternalBufferError::Napi(err)) => return Err(err),
    };
    // Weak: the buffer must stay collectable (its exporter may hold the memory object).
    let reference = JsRef::weak(&buffer)?;
    if let Some(handle) = handles(env)?.memories.get(memory_id) {
        handle.buffer.replace(Some((lease, reference)));
    }
    Ok(buffer.raw())
}

/// A `SharedArrayBuffer` over host or shared memory (the JS layer makes it once per
/// object): posted to workers as is, it holds the allocation until the engine drops the
/// last thread's reference, whatever `free()` did meanwhile.
#[napi]
pub fn mem_shared_buffer(env: &Env, memory_id: f64) -> napi::Result<Unknown<'_>> {
    let (address, len, owner) = lookup(env, |h| h.memory(memory_id)?.shared_view(ffi::MAX_BUFFER_LENGTH))?;
    match ffi::external_sharedarraybuffer(env, address as *mut u8, len, Box::new(owner)) {
        Ok(Some(buffer)) => Ok(buffer),
        Ok(None) => {
            let node = env.get_node_version().map(|v| format!("v{}.{}.{}", v.major, v.minor, v.patch));
            Err(MemoryError::SharedBufferUnsupported { node: node.unwrap_or_else(|_| "of unknown version".into()) })
                .or_throw(env)
        }
        Err(ExternalBufferError::NotAllowed) => Err(MemoryError::ExternalBuffersUnsupported).or_throw(env),
        Err(ExternalBufferError::TooLarge) => Err(too_large_for_host(len as u64, ffi::MAX_BUFFER_LENGTH)).or_throw(env),
        Err(ExternalBufferError::Napi(err)) => Err(err),
    }
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
pub(crate) fn host_bytes(env: &Env, value: &Unknown, what: &str) -> napi::Result<HostBytes> {
    ffi::host_bytes(env, value)?.ok_or_else(|| MemoryError::NotHostBuffer { what: what.into() }).or_throw(env)
}

/// `copyToHost(dst)`: the whole memory into the start of a host buffer.
pub fn mem_copy_to_host(env: &Env, memory_id: f64, dst: Unknown) -> napi::Result<()> {
    // The buffer is read before the handle is looked up: a freed handle with a bad buffer
    // reports the buffer (the JS layer checks both before it calls, the handle first).
    let bytes = host_bytes(env, &dst, "dst")?;
    let registration = crate::js::registration::vouched(env, &bytes)?;
    // The copy runs no JS, so it runs with the handles borrowed.
    lookup(env, |h| {
        let memory = h.memory_ref(memory_id)?;
        bytes.with_bytes(|dst| memory.copy_to_host_via(process().host_copies(), dst, registration.as_deref()))
    })
}

/// `copyFromHost(src)`: a host buffer into the start of the memory.
pub fn mem_copy_from_host(env: &Env, memory_id: f64, src: Unknown) -> napi::Result<()> {
    let bytes = host_bytes(env, &src, "src")?;
    let registration = crate::js::registration::vouched(env, &bytes)?;
    lookup(env, |h| {
        let memory = h.memory_ref(memory_id)?;
        bytes.with_bytes(|src| {
            memory.copy_from_host_via(process().host_copies(), src.as_read(), registration.as_deref())
        })
    })
}

/// `copyFromDevice(src)`: another memory object into the start of this one.
pub fn mem_copy_from_device(env: &Env, memory_id: f64, source_id: f64) -> napi::Result<()> {
    // The copy runs no JS, so it runs with the handles borrowed.
    lookup(env, |h| h.memory_ref(memory_id)?.copy_from_device(process().host_copies(), h.memory_ref(source_id)?))
}

/// `memset(value)`: every byte of the memory.
pub fn mem_memset(env: &Env, memory_id: f64, value: u32) -> napi::Result<()> {
    lookup(env, |h| h.memory_ref(memory_id)?.memset(value as u8))
}

/// `copyToHost` off the main thread. The JS layer keeps `dst` and the memory object
/// alive until the Promise settles; the task holds the allocation itself.
#[napi(ts_return_type = "Promise<void>")]
pub fn mem_copy_to_host_async(env: &Env, memory_id: f64, dst: Unknown) -> napi::Result<AsyncTask<UsmTask>> {
    let memory = lookup(env, |h| h.memory(memory_id))?;
    let bytes = host_bytes(env, &dst, "dst")?;
    // Argument errors before any work, as the synchronous copy reports them.
    memory.check_copy_to_host(bytes.byte_length() as u64).or_throw(env)?;
    let host = HostSide::destination(env, &bytes)?;
    Ok(AsyncTask::new(UsmTask::new(Operation::ToHost { memory, host }, Some(TaskRef::new(&dst)?))))
}

/// `copyFromHostAsync(src)`, on the libuv thread pool.
#[napi(ts_return_type = "Promise<void>")]
pub fn mem_copy_from_host_async(env: &Env, memory_id: f64, src: Unknown) -> napi::Result<AsyncTask<UsmTask>> {
    let memory = lookup(env, |h| h.memory(memory_id))?;
    let bytes = host_bytes(env, &src, "src")?;
    // Before the source is copied into the task's own memory (a plain ArrayBuffer).
    memory.check_copy_from_host(bytes.byte_length() as u64).or_throw(env)?;
    let host = HostSide::source(env, &bytes)?;
    Ok(AsyncTask::new(UsmTask::new(Operation::FromHost { memory, host }, None)))
}

/// `copyFromDeviceAsync(src)`, on the libuv thread pool.
#[napi(ts_return_type = "Promise<void>")]
pub fn mem_copy_from_device_async(env: &Env, memory_id: f64, source_id: f64) -> napi::Result<AsyncTask<UsmTask>> {
    let (memory, source) = lookup(env, |h| Ok((h.memory(memory_id)?, h.memory(source_id)?)))?;
    memory.check_copy_from_device(&source).or_throw(env)?;
    Ok(AsyncTask::new(UsmTask::new(Operation::FromDevice { memory, source }, None)))
}

/// `memsetAsync(value)`, on the libuv thread pool.
#[napi(ts_return_type = "Promise<void>")]
pub fn mem_memset_async(env: &Env, memory_id: f64, value: u32) -> napi::Result<AsyncTask<UsmTask>> {
    let memory = lookup(env, |h| h.memory(memory_id))?;
    memory.check_memset().or_throw(env)?;
    Ok(AsyncTask::new(UsmTask::new(Operation::Memset { memory, value: value as u8 }, None)))
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

fn fast_mem_buffer(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    mem_buffer(env, ffi::f64_arg(env, &args[0])?)
}

fn fast_release_handle(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    release_handle(env, ffi::u32_arg(env, &args[0])?, ffi::f64_arg(env, &args[1])?)?;
    ffi::js_undefined(env)
}

/// Puts the fast calls on `exports`.
pub fn define_fast_calls(env: &Env, exports: &mut napi::bindgen_prelude::Object) -> napi::Result<()> {
    let calls: [(&str, ffi::FastFn); 9] = [
        ("memAllocate", fast_mem_allocate),
        ("memFree", fast_mem_free),
        ("memCopyToHost", fast_mem_copy_to_host),
        ("memCopyFromHost", fast_mem_copy_from_host),
        ("memCopyFromDevice", fast_mem_copy_from_device),
        ("memMemset", fast_mem_memset),
        ("memPointer", fast_mem_pointer),
        ("memBuffer", fast_mem_buffer),
        ("releaseHandle", fast_release_handle),
    ];
    for (name, function) in calls {
        ffi::define_fast(env, exports, name, function)?;
    }
    Ok(())
}
