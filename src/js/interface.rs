//! Consuming `__sycl_usm_array_interface__`: JS values in, checked USM memory out.
//! The validation itself is Node-free (`memory::interface`); this file reads the JS
//! object, resolves `syclobj` against the runtime, and enforces what dpctl does not:
//! the pointer must belong to the named context, and the derived byte range must lie
//! inside the allocation wherever its extent is known.

use std::sync::Arc;

use napi::bindgen_prelude::{ClassInstance, JavaScriptClassExt, JsObjectValue, Unknown};
use napi::{Env, JsValue, ValueType};

use crate::error::{InterfaceField, MemoryError};
use crate::js::device::{cached_queue_object, SyclContext, SyclQueue};
use crate::js::errors::OrThrow;
use crate::js::ffi::class_instance;
use crate::js::values::display;
use crate::memory::allocation::bind_view;
use crate::memory::interface::{parse_interface, pointer_not_bound, syclobj_invalid, IfaceValue, RawInterface};
use crate::memory::kind::UsmKind;
use crate::memory::registry::registry;
use crate::memory::usm::UsmMemory;
use crate::provider::{Address, Device, Queue};

pub const SUAI: &str = "__sycl_usm_array_interface__";

/// Longest list read from an interface field; longer ones are refused as malformed.
const MAX_LIST: u32 = 1024;

pub struct Consumed<'env> {
    pub memory: UsmMemory,
    pub queue_object: Unknown<'env>,
}

/// Where the queue of a consumed interface comes from.
enum QueueObject<'env> {
    /// The `SyclQueue` the interface named.
    Given(Unknown<'env>),
    /// The cached queue of a device named by filter string.
    Cached(Arc<dyn Device>),
    /// A queue made for a `SyclContext`: a new `SyclQueue` object.
    New,
}

pub fn consume_interface<'env>(env: &'env Env, exporter: &Unknown<'env>, iface: &Unknown<'env>) -> napi::Result<Consumed<'env>> {
    if iface.get_type()? != ValueType::Object || iface.is_array()? {
        return Err(MemoryError::malformed(
            InterfaceField::Interface,
            format!("Argument {} does not correctly expose `{SUAI}`: it must be an object.", display(exporter)),
        ))
        .or_throw(env);
    }
    let object = iface.coerce_to_object()?;
    let field = |name: &str| -> napi::Result<IfaceValue> { to_iface_value(object.get_named_property::<Unknown>(name)?, 0) };
    let syclobj: Unknown = object.get_named_property("syclobj")?;
    let raw = RawInterface {
        offset: field("offset")?,
        version: field("version")?,
        data: field("data")?,
        syclobj_present: syclobj.get_type()? != ValueType::Undefined,
        shape: field("shape")?,
        typestr: field("typestr")?,
        strides: field("strides")?,
    };
    let parsed = parse_interface(&raw, |ptr| resolve_syclobj(env, &syclobj, ptr)).or_throw(env)?;
    let (queue, queue_source) = parsed.queue;
    let owner = bind_view(&*queue.context(), parsed.base_ptr, parsed.ptr, parsed.nbytes).or_throw(env)?;
    let memory = UsmMemory::from_interface(parsed.ptr, parsed.nbytes, queue.clone(), owner, parsed.read_only);
    let queue_object = match queue_source {
        QueueObject::Given(object) => object,
        QueueObject::Cached(device) => cached_queue_object(env, Some(&device))?.1,
        QueueObject::New => {
            let instance: ClassInstance<SyclQueue> = SyclQueue { queue }.into_instance(env)?;
            instance.as_object(env).to_unknown()
        }
    };
    Ok(Consumed { memory, queue_object })
}

fn napi_failure(err: napi::Error) -> MemoryError {
    MemoryError::InvalidArgType(format!("could not read syclobj: {}", err.reason))
}

fn bound_kind(queue: &Arc<dyn Queue>, ptr: Address, syclobj: &str) -> Result<(), MemoryError> {
    if queue.context().pointer_kind(ptr) == UsmKind::Unknown {
        return Err(pointer_not_bound(ptr, syclobj));
    }
    Ok(())
}

/// `syclobj` as a queue the pointer is valid in: a `SyclQueue`, a `SyclContext`, or a
/// filter string. A foreign pointer is an error here, never an abort.
fn resolve_syclobj<'env>(
    env: &'env Env,
    syclobj: &Unknown<'env>,
    ptr: Address,
) -> Result<(Arc<dyn Queue>, QueueObject<'env>), MemoryError> {
    let shown = display(syclobj);
    if let Some(queue) = class_instance::<SyclQueue>(env, syclobj).map_err(napi_failure)? {
        bound_kind(&queue.queue, ptr, &shown)?;
        return Ok((queue.queue.clone(), QueueObject::Given(*syclobj)));
    }
    if let Some(context) = class_instance::<SyclContext>(env, syclobj).map_err(napi_failure)? {
        if context.context.pointer_kind(ptr) == UsmKind::Unknown {
            return Err(pointer_not_bound(ptr, &shown));
        }
        let device = context.context.pointer_device(ptr).map_err(|_| pointer_not_bound(ptr, &shown))?;
        let queue = context.context.create_queue(&device)?;
        return Ok((queue, QueueObject::New));
    }
    if syclobj.get_type().map_err(napi_failure)? == ValueType::String {
        let text = syclobj
            .coerce_to_string()
            .and_then(|s| s.into_utf8())
            .and_then(|s| s.into_owned())
            .map_err(napi_failure)?;
        let device = registry().select(Some(&text)).map_err(MemoryError::into_queue_creation)?;
        let queue = registry().cached_queue(&device)?;
        bound_kind(&queue, ptr, &shown)?;
        return Ok((queue, QueueObject::Cached(device)));
    }
    Err(syclobj_invalid(&shown))
}

fn to_iface_value(value: Unknown, depth: u32) -> napi::Result<IfaceValue> {
    Ok(match value.get_type()? {
        ValueType::Undefined => IfaceValue::Missing,
        ValueType::Null => IfaceValue::Null,
        ValueType::Boolean => IfaceValue::Bool(value.coerce_to_bool()?),
        ValueType::Number => IfaceValue::Number(value.coerce_to_number()?.get_double()?),
        ValueType::BigInt => {
            // SAFETY-free path: napi-rs reads the bigint's words for us.
            let big = crate::js::ffi::bigint(&value)?;
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
                items.push(to_iface_value(array.get_element::<Unknown>(index)?, depth + 1)?);
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

