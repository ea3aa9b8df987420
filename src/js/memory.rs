//! `MemoryUSMDevice`, `MemoryUSMHost`, `MemoryUSMShared` and `asUsmMemory`.
//!
//! The three classes share one implementation (`MemoryCore`), stamped out by
//! `usm_class!` because napi-rs classes cannot inherit.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, BigInt, Buffer, FnArgs, This, ClassInstance, Either3, JavaScriptClassExt, JsObjectValue, Object, Unknown};
use napi::{Env, JsValue, ValueType};
use napi_derive::napi;

use crate::error::MemoryError;
use crate::js::async_ops::{HostSide, Operation, UsmTask};
use crate::js::device::{cached_queue_object, SyclContext, SyclQueue};
use crate::js::errors::OrThrow;
use crate::js::ffi::{self, class_instance, ensure_constructed, ExternalBufferError, JsRef, TaskRef};
use crate::js::interface::{consume_interface, SUAI};
use crate::js::values::{alignment_arg, bool_arg, display, has_property, integer, nbytes_arg, optional, property, type_name, Integer};
use crate::memory::allocation::Allocation;
use crate::memory::kind::UsmKind;
use crate::memory::usm::UsmMemory;
use crate::provider::Queue;

/// What keeps the memory under a zero-copy `ArrayBuffer` alive while the engine can
/// still reach it: the allocation, when it is ours (foreign memory is kept alive by the
/// exporter, which the buffer holds as a hidden property). Shared between the memory
/// object and the buffer's finalizer; `free()` empties it once it has detached the buffer.
type BufferLease = Rc<RefCell<Option<Arc<Allocation>>>>;

/// The object that keeps a memory object's memory alive (its `referenceObj`), held as a
/// hidden property of `holder` (the memory object, or its `buffer`).
fn reference_of<'env>(env: &'env Env, holder: &Unknown<'env>) -> napi::Result<Option<Unknown<'env>>> {
    let key = crate::js::state::state(env)?.reference_key.get(env)?;
    optional(ffi::get_own_keyed(env, holder, &key)?)
}

fn set_reference(env: &Env, holder: &Unknown, reference: &Unknown) -> napi::Result<()> {
    let key = crate::js::state::state(env)?.reference_key.get(env)?;
    ffi::set_hidden(env, holder, &key, reference)
}

/// The zero-copy `ArrayBuffer` a memory object made, held as its hidden property.
fn buffer_of<'env>(env: &'env Env, this: &Unknown<'env>) -> napi::Result<Option<Unknown<'env>>> {
    let key = crate::js::state::state(env)?.buffer_key.get(env)?;
    optional(ffi::get_own_keyed(env, this, &key)?)
}

pub struct MemoryCore {
    kind: UsmKind,
    /// `None` once freed.
    memory: Option<UsmMemory>,
    queue_object: Option<JsRef>,
    /// The lease of the zero-copy `ArrayBuffer`, once made (the buffer itself is a hidden
    /// property of the JS object, see `buffer_of`).
    buffer: Option<BufferLease>,
    /// Bytes of the allocation this object made, reported to V8 as external memory so
    /// that memory dropped without `free()` drives garbage collection. Every kind is
    /// reported, with or without a `buffer`: V8 tracks an external `ArrayBuffer`'s bytes
    /// only as backing-store statistics, which do not schedule collections.
    reported_bytes: i64,
}

/// The core of a memory object behind a `RefCell`: every method takes `&self`, because
/// napi-rs keeps a borrow of the object alive while an async method's Promise is pending,
/// and `free()` or `buffer` must still work then. A re-entrant use (a user getter calling
/// back into the object mid-call) is an `ERR_USM_BUSY` error, never a panic.
pub struct CoreCell(RefCell<MemoryCore>);

fn busy_error() -> MemoryError {
    MemoryError::Busy("this memory object is in use by a call that has not returned (re-entered from JS)".into())
}

impl CoreCell {
    fn new(core: MemoryCore) -> Self {
        CoreCell(RefCell::new(core))
    }

    fn with<R>(&self, env: &Env, f: impl FnOnce(&MemoryCore) -> napi::Result<R>) -> napi::Result<R> {
        let core = self.0.try_borrow().map_err(|_| busy_error()).or_throw(env)?;
        f(&core)
    }

    fn with_mut<R>(&self, env: &Env, f: impl FnOnce(&mut MemoryCore) -> napi::Result<R>) -> napi::Result<R> {
        let mut core = self.0.try_borrow_mut().map_err(|_| busy_error()).or_throw(env)?;
        f(&mut core)
    }

    /// The live memory (a cheap clone of its handles); `ERR_USM_FREED` after `free()`.
    fn memory(&self, env: &Env) -> napi::Result<UsmMemory> {
        self.with(env, |core| Ok(core.live().or_throw(env)?.clone()))
    }

}

/// The references an asynchronous task holds: the JS values it was given, and the
/// exporter behind the memory object `this` (so `free()` during the task cannot let it
/// be collected).
fn task_refs(env: &Env, this: &Unknown, values: &[&Unknown]) -> napi::Result<Vec<TaskRef>> {
    let mut keep = values.iter().map(|v| TaskRef::new(v)).collect::<napi::Result<Vec<_>>>()?;
    if let Some(reference) = reference_of(env, this)? {
        keep.push(TaskRef::new(&reference)?);
    }
    Ok(keep)
}

impl CoreCell {
    fn describe(&self) -> String {
        match self.0.try_borrow() {
            Ok(core) => core.describe(),
            Err(_) => "<SYCL(TM) USM allocation (busy)>".to_string(),
        }
    }
}

/// A memory object's parts before it becomes a JS object.
struct Source<'env> {
    memory: UsmMemory,
    queue_object: Unknown<'env>,
    reference: Option<Unknown<'env>>,
}

fn too_large_for_js(nbytes: u64) -> MemoryError {
    MemoryError::HostBufferTooLarge(format!(
        "{nbytes} bytes is more than a JS ArrayBuffer may hold here ({} bytes): copy it in parts with an interface view, or use copyFromDevice",
        ffi::MAX_BUFFER_LENGTH
    ))
}

fn freed_error() -> MemoryError {
    MemoryError::Freed("USM memory has been freed: this object can no longer be used".into())
}

impl MemoryCore {
    fn live(&self) -> Result<&UsmMemory, MemoryError> {
        self.memory.as_ref().ok_or_else(freed_error)
    }

    fn from_source(kind: UsmKind, source: Source) -> napi::Result<Self> {
        Ok(MemoryCore {
            kind,
            queue_object: Some(JsRef::new(&source.queue_object)?),
            memory: Some(source.memory),
            buffer: None,
            reported_bytes: 0,
        })
    }

    fn allocate(env: &Env, kind: UsmKind, nbytes: u64, options: &Options) -> napi::Result<Self> {
        let (queue, queue_object) = options.queue_or_default(env)?;
        let memory = UsmMemory::allocate(&queue, kind, nbytes, options.alignment).or_throw(env)?;
        let mut core = MemoryCore::from_source(kind, Source { memory, queue_object, reference: None })?;
        core.reported_bytes = i64::try_from(nbytes).unwrap_or(i64::MAX);
        ffi::adjust_external_memory(env, core.reported_bytes);
        Ok(core)
    }

    /// Both constructor forms. Also returns the object that must keep the memory alive
    /// (an interface's exporter), for the caller to attach to the new JS object.
    fn construct<'env>(
        env: &'env Env,
        kind: UsmKind,
        arg: Unknown<'env>,
        options: Option<Unknown<'env>>,
    ) -> napi::Result<(Self, Option<Unknown<'env>>)> {
        let options = Options::parse(env, options)?;
        match arg.get_type()? {
            ValueType::Number | ValueType::BigInt => {
                let nbytes = nbytes_arg(env, &arg)?;
                Ok((MemoryCore::allocate(env, kind, nbytes, &options)?, None))
            }
            ValueType::Object | ValueType::Function => {
                let source = usm_source(env, &arg)?;
                let source_kind = source.memory.usm_type(None);
                if source_kind == kind {
                    let reference = source.reference;
                    return Ok((MemoryCore::from_source(kind, source)?, reference));
                }
                if !options.copy {
                    return Err(MemoryError::KindMismatch(format!(
                        "USM pointer in the argument {} is not a USM {} pointer. Zero-copy operation is not possible with copy=false. Either use copy: true, or use a constructor appropriate for type '{}'",
                        source.memory.describe(),
                        kind.name(),
                        source_kind.name()
                    )))
                    .or_throw(env);
                }
                let mut core = MemoryCore::allocate(env, kind, source.memory.nbytes(), &options.without_alignment())?;
                if let Err(err) = core.live().and_then(|memory| memory.copy_from_device(&source.memory)) {
                    // Give the new allocation back (and its external-memory report) at once.
                    core.free(env, None)?;
                    return Err(err).or_throw(env);
                }
                Ok((core, None))
            }
            _ => Err(MemoryError::InvalidArgType(format!(
                "expected a byte count (number or bigint) or an object exposing __sycl_usm_array_interface__, got {}",
                type_name(&arg)
            )))
            .or_throw(env),
        }
    }

    /// `buffer` is the object's zero-copy `ArrayBuffer`, if it made one.
    fn free(&mut self, env: &Env, buffer: Option<&Unknown>) -> napi::Result<()> {
        if self.memory.is_none() {
            return Ok(());
        }
        if let (Some(lease), Some(buffer)) = (self.buffer.take(), buffer) {
            // Release under the buffer only when we detached it ourselves: a buffer
            // someone else detached (transferred) may still reach the memory.
            if ffi::detach_arraybuffer(env, buffer)? {
                lease.borrow_mut().take();
            }
        }
        if self.reported_bytes != 0 {
            ffi::adjust_external_memory(env, -self.reported_bytes);
            self.reported_bytes = 0;
        }
        self.memory = None;
        self.queue_object = None;
        Ok(())
    }

    /// The zero-copy `ArrayBuffer`; `reference` (the exporter, if any) is attached to it
    /// so that it keeps foreign memory alive as long as the buffer lives.
    /// Makes the zero-copy `ArrayBuffer` (the caller stores it on the JS object).
    fn make_buffer<'env>(&mut self, env: &'env Env, reference: Option<&Unknown>) -> napi::Result<Unknown<'env>> {
        let memory = self.live().or_throw(env)?.clone();
        if !self.kind.host_accessible() {
            return Err(MemoryError::NotHostAccessible(
                "USM device memory is not host accessible: copy it with copyToHost() instead".into(),
            ))
            .or_throw(env);
        }
        if memory.read_only() {
            return Err(MemoryError::ReadOnly(
                "this memory comes from a read-only __sycl_usm_array_interface__: JS ArrayBuffers cannot be read-only, so it has no buffer; use copyToHost()".into(),
            ))
            .or_throw(env);
        }
        let len = usize::try_from(memory.nbytes())
            .map_err(|_| MemoryError::NotHostAccessible("the memory is larger than this process can address".into()))
            .or_throw(env)?;
        let lease: BufferLease = Rc::new(RefCell::new(memory.owner().cloned()));
        let buffer = match ffi::external_arraybuffer(env, memory.address() as *mut u8, len, lease.clone()) {
            Ok(buffer) => buffer,
            Err(ExternalBufferError::NotAllowed) => {
                return Err(MemoryError::ExternalBuffersUnsupported(
                    "this JS engine forbids external ArrayBuffers (e.g. Electron's V8 memory cage), so USM memory cannot be viewed without a copy: use copyToHost()/copyFromHost()".into(),
                ))
                .or_throw(env)
            }
            Err(ExternalBufferError::TooLarge) => return Err(too_large_for_js(memory.nbytes())).or_throw(env),
            Err(ExternalBufferError::Napi(err)) => return Err(err),
        };
        if let Some(reference) = reference {
            set_reference(env, &buffer, reference)?;
        }
        self.buffer = Some(lease);
        Ok(buffer)
    }

    fn interface<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let memory = self.live().or_throw(env)?;
        let queue = match &self.queue_object {
            Some(queue) => queue.get(env)?,
            None => return Err(freed_error()).or_throw(env),
        };
        let make: napi::bindgen_prelude::Function<FnArgs<(BigInt, bool, f64, Unknown)>, Object> = builtin(env, "makeInterface")?;
        make.call((BigInt::from(memory.address()), memory.read_only(), memory.nbytes() as f64, queue).into())
    }

    fn describe(&self) -> String {
        match &self.memory {
            Some(memory) => memory.describe(),
            None => format!("<SYCL(TM) USM-{} allocation (freed)>", self.kind.name()),
        }
    }

    fn finalize(&mut self, env: &Env) {
        if self.reported_bytes != 0 {
            ffi::adjust_external_memory(env, -self.reported_bytes);
            self.reported_bytes = 0;
        }
    }
}

/// `{ alignment?, queue?, copy? }`.
struct Options<'env> {
    alignment: u64,
    queue: Option<(Arc<dyn Queue>, Unknown<'env>)>,
    copy: bool,
}

impl<'env> Options<'env> {
    fn parse(env: &'env Env, value: Option<Unknown<'env>>) -> napi::Result<Self> {
        let mut options = Options { alignment: 0, queue: None, copy: false };
        let Some(value) = optional(value)? else { return Ok(options) };
        if value.get_type()? != ValueType::Object {
            return Err(MemoryError::InvalidArgType(format!("options must be an object, not {}", type_name(&value))))
                .or_throw(env);
        }
        // Only the object's own properties are read, and an unknown name is refused.
        let properties = ffi::own_properties(env, &value)?;
        if properties.is_empty() && !value.is_array()? {
            let misplaced = class_instance::<SyclQueue>(env, &value)?.is_some()
                || class_instance::<SyclContext>(env, &value)?.is_some()
                || class_instance::<crate::js::device::SyclDevice>(env, &value)?.is_some()
                || memory_core(env, &value)?.is_some();
            if misplaced {
                return Err(MemoryError::InvalidArgType(
                    "options must be a plain object such as { queue }, not a SyclQueue, SyclContext, SyclDevice or memory object".into(),
                ))
                .or_throw(env);
            }
        }
        if value.is_array()? {
            return Err(MemoryError::InvalidArgType("options must be a plain object, not an array".into())).or_throw(env);
        }
        let (mut alignment, mut queue, mut copy) = (None, None, None);
        for (name, property) in properties {
            let slot = match name.as_str() {
                "alignment" => &mut alignment,
                "queue" => &mut queue,
                "copy" => &mut copy,
                _ => {
                    return Err(MemoryError::InvalidArgType(format!(
                        "unknown option '{name}': the options are alignment, queue and copy"
                    )))
                    .or_throw(env)
                }
            };
            *slot = optional(Some(property))?;
        }
        if let Some(alignment) = alignment {
            options.alignment = alignment_arg(env, &alignment)?;
        }
        if let Some(queue) = queue {
            let Some(instance) = class_instance::<SyclQueue>(env, &queue)? else {
                return Err(MemoryError::InvalidArgType(format!(
                    "queue must be a SyclQueue, not {}",
                    display(&queue)
                )))
                .or_throw(env);
            };
            options.queue = Some((instance.queue.clone(), queue));
        }
        if let Some(copy) = copy {
            options.copy = bool_arg(env, copy, "copy")?;
        }
        Ok(options)
    }

    /// dpctl ignores `alignment` in the copying conversion.
    fn without_alignment(&self) -> Options<'env> {
        Options { alignment: 0, queue: self.queue.clone(), copy: self.copy }
    }

    fn queue_or_default(&self, env: &'env Env) -> napi::Result<(Arc<dyn Queue>, Unknown<'env>)> {
        match &self.queue {
            Some(queue) => Ok(queue.clone()),
            None => cached_queue_object(env, None),
        }
    }
}

/// The memory object behind any of the three classes.
fn memory_core<'a>(env: &Env, value: &Unknown<'a>) -> napi::Result<Option<CoreRef<'a>>> {
    if let Some(m) = class_instance::<MemoryUSMDevice>(env, value)? {
        return Ok(Some(CoreRef::Device(m)));
    }
    if let Some(m) = class_instance::<MemoryUSMHost>(env, value)? {
        return Ok(Some(CoreRef::Host(m)));
    }
    if let Some(m) = class_instance::<MemoryUSMShared>(env, value)? {
        return Ok(Some(CoreRef::Shared(m)));
    }
    Ok(None)
}

enum CoreRef<'a> {
    Device(ClassInstance<'a, MemoryUSMDevice>),
    Host(ClassInstance<'a, MemoryUSMHost>),
    Shared(ClassInstance<'a, MemoryUSMShared>),
}

impl CoreRef<'_> {
    fn core(&self) -> &CoreCell {
        match self {
            CoreRef::Device(m) => &m.core,
            CoreRef::Host(m) => &m.core,
            CoreRef::Shared(m) => &m.core,
        }
    }
}

/// The USM memory an argument stands for: one of our memory objects (sharing its
/// allocation, with the owner chain flattened) or any object exposing
/// `__sycl_usm_array_interface__`.
fn usm_source<'env>(env: &'env Env, value: &Unknown<'env>) -> napi::Result<Source<'env>> {
    if let Some(other) = memory_core(env, value)? {
        let (memory, queue_object) = other.core().with(env, |core| {
            let memory = core.live().or_throw(env)?.clone();
            match &core.queue_object {
                Some(queue) => Ok((memory, queue.get(env)?)),
                None => Err(freed_error()).or_throw(env),
            }
        })?;
        // The owner chain stays flat: a view of a view refers to the original exporter.
        let reference = reference_of(env, value)?;
        return Ok(Source { memory, queue_object, reference });
    }
    if !has_property(value, SUAI)? {
        return Err(MemoryError::NotUsm(format!("Argument {} does not expose `{SUAI}`.", display(value)))).or_throw(env);
    }
    let iface = property(value, SUAI)?;
    let consumed = consume_interface(env, value, &iface)?;
    Ok(Source { memory: consumed.memory, queue_object: consumed.queue_object, reference: Some(*value) })
}

/// Host bytes of an ArrayBuffer, SharedArrayBuffer or ArrayBufferView argument.
fn host_arg(env: &Env, value: &Unknown, what: &str) -> napi::Result<ffi::HostBytes> {
    if let Some(bytes) = ffi::host_bytes(env, value)? {
        return Ok(bytes);
    }
    // Node-API has no SharedArrayBuffer accessor before Node 24: view it through a
    // Uint8Array, and accept the result only if its buffer is the argument itself (an
    // object that merely looks like one would give a fresh copy nobody keeps).
    // Anything else is refused at once: no array-like is ever read element by element.
    let is_shared: napi::bindgen_prelude::Function<Unknown, bool> = builtin(env, "isSharedArrayBuffer")?;
    if value.get_type()? == ValueType::Object && is_shared.call(*value)? {
        let uint8: napi::bindgen_prelude::Function<Unknown, Unknown> = builtin(env, "Uint8Array")?;
        let view = uint8.new_instance(*value)?;
        if let Some(bytes) = ffi::host_bytes(env, &view)? {
            if bytes.is_buffer_of(env, value)? {
                return Ok(bytes);
            }
        }
    }
    Err(MemoryError::InvalidArgType(format!(
        "{what} must be an ArrayBuffer, SharedArrayBuffer, TypedArray, DataView or Buffer, not {}",
        display(value)
    )))
    .or_throw(env)
}

/// One of `EnvState::builtins`.
fn builtin<T: napi::bindgen_prelude::FromNapiValue + napi::bindgen_prelude::ValidateNapiValue>(env: &Env, name: &str) -> napi::Result<T> {
    let builtins = crate::js::state::state(env)?.builtins.get(env)?;
    builtins.coerce_to_object()?.get_named_property(name)
}

/// `syclobj` for `getUsmType`: a SyclQueue or a SyclContext.
fn context_arg(env: &Env, syclobj: Option<Unknown>) -> napi::Result<Option<Arc<dyn crate::provider::Context>>> {
    let Some(value) = optional(syclobj)? else { return Ok(None) };
    if let Some(queue) = class_instance::<SyclQueue>(env, &value)? {
        return Ok(Some(queue.queue.context()));
    }
    if let Some(context) = class_instance::<SyclContext>(env, &value)? {
        return Ok(Some(context.context.clone()));
    }
    Err(MemoryError::InvalidSyclObj(
        "syclobj keyword can be either None, or an instance of SyclContext or SyclQueue".into(),
    ))
    .or_throw(env)
}

fn fill_value(env: &Env, value: Option<Unknown>) -> napi::Result<u8> {
    let Some(value) = optional(value)? else { return Ok(0) };
    match integer(&value)? {
        Integer::Value(v) if (0..=255).contains(&v) => Ok(v as u8),
        Integer::Value(v) => Err(MemoryError::InvalidFillValue(format!("memset value must be an integer in 0..255, got {v}"))).or_throw(env),
        Integer::NotInteger(text) => Err(MemoryError::InvalidFillValue(format!("memset value must be an integer in 0..255, got {text}"))).or_throw(env),
        Integer::WrongType(kind) => Err(MemoryError::InvalidArgType(format!("memset value must be a number, not {kind}"))).or_throw(env),
    }
}

/// The destination of `copyToHost[Async]`: `dst`, or a new `Uint8Array` of `nbytes`.
fn host_destination<'env>(env: &'env Env, memory: &UsmMemory, dst: Option<Unknown<'env>>) -> napi::Result<Unknown<'env>> {
    match optional(dst)? {
        Some(dst) => Ok(dst),
        None if memory.nbytes() > ffi::MAX_BUFFER_LENGTH => Err(too_large_for_js(memory.nbytes())).or_throw(env),
        None => {
            let ctor: napi::bindgen_prelude::Function<f64, Unknown> = builtin(env, "Uint8Array")?;
            ctor.new_instance(memory.nbytes() as f64)
        }
    }
}

/// The source of `copyFromDevice[Async]`, with `copy_from_device`'s own argument check.
fn device_source<'env>(env: &'env Env, src: &Unknown<'env>) -> napi::Result<Source<'env>> {
    let is_object = matches!(src.get_type()?, ValueType::Object | ValueType::Function);
    if !is_object || (memory_core(env, src)?.is_none() && !has_property(src, SUAI)?) {
        return Err(MemoryError::NotUsm(format!("Object does not implement `{SUAI}` protocol"))).or_throw(env);
    }
    usm_source(env, src)
}

macro_rules! usm_class {
    ($(#[$doc:meta])* $name:ident, $js_name:literal, $kind:expr) => {
        $(#[$doc])*
        #[napi(custom_finalize, js_name = $js_name)]
        pub struct $name {
            core: CoreCell,
        }

        impl napi::bindgen_prelude::ObjectFinalize for $name {
            fn finalize(mut self, env: Env) -> napi::Result<()> {
                self.core.0.get_mut().finalize(&env);
                Ok(())
            }
        }

        #[napi]
        impl $name {
            /// `new Memory(nbytes, { alignment?, queue? })` allocates `nbytes` (a positive
            /// number or bigint) on `queue` (default: the cached queue of the default
            /// device). `new Memory(usmObj, { copy?, queue? })` views the memory of
            /// `usmObj` (a memory object or anything exposing `__sycl_usm_array_interface__`)
            /// without copying when it is of this kind; with `copy: true` a different kind
            /// is copied into a new allocation, else that is an error.
            #[napi(constructor, ts_args_type = "source: number | bigint | SyclUsmArrayInterfaceExporter, options?: MemoryOptions")]
            pub fn new(env: Env, this: This<Unknown>, source: Unknown, options: Option<Unknown>) -> napi::Result<Self> {
                ensure_constructed::<$name>(&env, &this, $js_name)?;
                let (core, reference) = MemoryCore::construct(&env, $kind, source, options)?;
                if let Some(reference) = &reference {
                    set_reference(&env, &this, reference)?;
                }
                Ok($name { core: CoreCell::new(core) })
            }

            /// Extent of this USM buffer in bytes.
            #[napi(getter)]
            pub fn nbytes(&self, env: Env) -> napi::Result<f64> {
                Ok(self.core.memory(&env)?.nbytes() as f64)
            }

            /// Extent of this USM buffer in bytes (same as `nbytes`).
            #[napi(getter)]
            pub fn size(&self, env: Env) -> napi::Result<f64> {
                self.nbytes(env)
            }

            /// The USM address as a bigint.
            #[napi(getter)]
            pub fn pointer(&self, env: Env) -> napi::Result<BigInt> {
                Ok(BigInt::from(self.core.memory(&env)?.address()))
            }

            /// The object that keeps this memory alive: the object exposing the interface
            /// this memory was made from, or `null` for memory this library allocated.
            #[napi(getter, ts_return_type = "unknown")]
            pub fn reference_obj<'env>(&self, env: &'env Env, this: This<Unknown<'env>>) -> napi::Result<Option<Unknown<'env>>> {
                self.core.memory(env)?;
                reference_of(env, &this)
            }

            /// The queue the memory is used through.
            #[napi(getter, ts_return_type = "SyclQueue")]
            pub fn sycl_queue<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
                self.core.with(env, |core| {
                    core.live().or_throw(env)?;
                    match &core.queue_object {
                        Some(queue) => queue.get(env),
                        None => Err(freed_error()).or_throw(env),
                    }
                })
            }

            /// The context the USM pointer is bound to.
            #[napi(getter)]
            pub fn sycl_context(&self, env: Env) -> napi::Result<SyclContext> {
                Ok(SyclContext { context: self.core.memory(&env)?.queue().context() })
            }

            /// The device the memory belongs to.
            #[napi(getter)]
            pub fn sycl_device(&self, env: Env) -> napi::Result<crate::js::device::SyclDevice> {
                Ok(crate::js::device::SyclDevice { device: self.core.memory(&env)?.queue().device() })
            }

            /// The zero-copy `ArrayBuffer` over host or shared memory: the same object on
            /// every read, detached by `free()`. Throws for device memory.
            #[napi(getter, ts_return_type = "ArrayBuffer")]
            pub fn buffer<'env>(&self, env: &'env Env, this: This<Unknown<'env>>) -> napi::Result<Unknown<'env>> {
                self.core.memory(env)?;
                if let Some(buffer) = buffer_of(env, &this)? {
                    return Ok(buffer);
                }
                let reference = reference_of(env, &this)?;
                let buffer = self.core.with_mut(env, |core| core.make_buffer(env, reference.as_ref()))?;
                let key = crate::js::state::state(env)?.buffer_key.get(env)?;
                if ffi::set_hidden(env, &this, &key, &buffer).is_err() {
                    // A frozen (or otherwise non-extensible) object cannot hold its buffer.
                    // Nothing can reach the new buffer but this call: detach it and give
                    // its lease back now, so that it pins nothing until it is collected.
                    ffi::detach_arraybuffer(env, &buffer)?;
                    self.core.with_mut(env, |core| {
                        if let Some(lease) = core.buffer.take() {
                            lease.borrow_mut().take();
                        }
                        Ok(())
                    })?;
                    return Err(MemoryError::InvalidArgType(
                        "this memory object is frozen or not extensible, so it cannot keep its buffer: read buffer before freezing it".into(),
                    ))
                    .or_throw(env);
                }
                Ok(buffer)
            }

            /// The USM kind of the memory in the context of `syclobj` (a `SyclQueue` or
            /// `SyclContext`), or in its own context: `'device'`, `'shared'`, `'host'`,
            /// or `'unknown'` when the pointer is not bound to that context.
            #[napi(ts_args_type = "syclobj?: SyclQueue | SyclContext", ts_return_type = "'device' | 'shared' | 'host' | 'unknown'")]
            pub fn get_usm_type(&self, env: Env, syclobj: Option<Unknown>) -> napi::Result<String> {
                let context = context_arg(&env, syclobj)?;
                let memory = self.core.memory(&env)?;
                Ok(memory.usm_type(context.as_deref()).name().to_string())
            }

            /// dpctl's enum value of `getUsmType()`: unknown 0, device 1, shared 2, host 3.
            #[napi(ts_args_type = "syclobj?: SyclQueue | SyclContext")]
            pub fn get_usm_type_enum(&self, env: Env, syclobj: Option<Unknown>) -> napi::Result<u32> {
                let context = context_arg(&env, syclobj)?;
                let memory = self.core.memory(&env)?;
                Ok(memory.usm_type(context.as_deref()).enum_value())
            }

            /// Copies the memory into `dst` (any ArrayBuffer or view at least `nbytes`
            /// long) and returns `dst`; without `dst`, into a new `Uint8Array`.
            #[napi(ts_args_type = "dst?: ArrayBuffer | SharedArrayBuffer | ArrayBufferView", ts_return_type = "any")]
            pub fn copy_to_host<'env>(&self, env: &'env Env, dst: Option<Unknown<'env>>) -> napi::Result<Unknown<'env>> {
                let memory = self.core.memory(env)?;
                let target = host_destination(env, &memory, dst)?;
                let bytes = host_arg(env, &target, "dst")?;
                bytes.with_slice(|dst| memory.copy_to_host(dst)).or_throw(env)?;
                Ok(target)
            }

            /// Writes all of `src` (any ArrayBuffer or view, at most `nbytes` long) at
            /// offset 0.
            #[napi(ts_args_type = "src: ArrayBuffer | SharedArrayBuffer | ArrayBufferView")]
            pub fn copy_from_host(&self, env: Env, src: Unknown) -> napi::Result<()> {
                let memory = self.core.memory(&env)?;
                let bytes = host_arg(&env, &src, "src")?;
                bytes.with_slice(|src| memory.copy_from_host(src)).or_throw(&env)
            }

            /// Copies all of `src` (a memory object or anything exposing
            /// `__sycl_usm_array_interface__`) to offset 0, through the host when the two
            /// are in different contexts.
            #[napi(ts_args_type = "src: SyclUsmArrayInterfaceExporter")]
            pub fn copy_from_device(&self, env: Env, src: Unknown) -> napi::Result<()> {
                let memory = self.core.memory(&env)?;
                let source = device_source(&env, &src)?;
                memory.copy_from_device(&source.memory).or_throw(&env)
            }

            /// Fills the memory with the byte `value` (an integer 0..255, default 0).
            #[napi(ts_args_type = "value?: number")]
            pub fn memset(&self, env: Env, value: Option<Unknown>) -> napi::Result<()> {
                let value = fill_value(&env, value)?;
                self.core.memory(&env)?.memset(value).or_throw(&env)
            }

            /// `copyToHost` off the main thread: resolves to `dst` (or a new `Uint8Array`)
            /// once the copy is done. The memory and `dst` stay alive until then, even if
            /// this object is freed meanwhile. A resizable `dst` is refused; do not
            /// transfer `dst` while the copy runs.
            #[napi(ts_args_type = "dst?: ArrayBuffer | SharedArrayBuffer | ArrayBufferView", ts_return_type = "Promise<any>")]
            pub fn copy_to_host_async<'env>(&self, env: &'env Env, this: This<Unknown<'env>>, dst: Option<Unknown<'env>>) -> napi::Result<AsyncTask<UsmTask>> {
                let memory = self.core.memory(env)?;
                let target = host_destination(env, &memory, dst)?;
                let bytes = host_arg(env, &target, "dst")?;
                let host = HostSide::destination(env, &bytes)?;
                let keep = task_refs(env, &this, &[])?;
                let operation = Operation::ToHost { memory, host };
                Ok(AsyncTask::new(UsmTask::new(operation, keep, Some(TaskRef::new(&target)?))))
            }

            /// `copyFromHost` off the main thread; `src` stays alive until it settles. A
            /// resizable `src` is refused; do not transfer `src` while the copy runs.
            #[napi(ts_args_type = "src: ArrayBuffer | SharedArrayBuffer | ArrayBufferView", ts_return_type = "Promise<void>")]
            pub fn copy_from_host_async(&self, env: Env, this: This<Unknown>, src: Unknown) -> napi::Result<AsyncTask<UsmTask>> {
                let memory = self.core.memory(&env)?;
                let bytes = host_arg(&env, &src, "src")?;
                let host = HostSide::source(&env, &bytes)?;
                let keep = task_refs(&env, &this, &[&src])?;
                let operation = Operation::FromHost { memory, host };
                Ok(AsyncTask::new(UsmTask::new(operation, keep, None)))
            }

            /// `copyFromDevice` off the main thread; both memories stay alive until it settles.
            #[napi(ts_args_type = "src: SyclUsmArrayInterfaceExporter", ts_return_type = "Promise<void>")]
            pub fn copy_from_device_async(&self, env: Env, this: This<Unknown>, src: Unknown) -> napi::Result<AsyncTask<UsmTask>> {
                let memory = self.core.memory(&env)?;
                let source = device_source(&env, &src)?;
                let mut keep = task_refs(&env, &this, &[&src])?;
                if let Some(reference) = &source.reference {
                    keep.push(TaskRef::new(reference)?);
                }
                let operation = Operation::FromDevice { memory, source: source.memory };
                Ok(AsyncTask::new(UsmTask::new(operation, keep, None)))
            }

            /// `memset` off the main thread.
            #[napi(ts_args_type = "value?: number", ts_return_type = "Promise<void>")]
            pub fn memset_async(&self, env: Env, this: This<Unknown>, value: Option<Unknown>) -> napi::Result<AsyncTask<UsmTask>> {
                let value = fill_value(&env, value)?;
                let memory = self.core.memory(&env)?;
                let keep = task_refs(&env, &this, &[])?;
                Ok(AsyncTask::new(UsmTask::new(Operation::Memset { memory, value }, keep, None)))
            }

            /// A copy of the memory as a `Buffer`.
            #[napi]
            pub fn to_bytes(&self, env: Env) -> napi::Result<Buffer> {
                let nbytes = self.core.memory(&env)?.nbytes();
                if nbytes > ffi::MAX_BUFFER_LENGTH {
                    return Err(too_large_for_js(nbytes)).or_throw(&env);
                }
                let bytes = self.core.memory(&env)?.to_vec().or_throw(&env)?;
                Ok(Buffer::from(bytes))
            }

            /// `{ data: [pointer, readOnly], shape: [nbytes], strides: null, typestr: '|u1',
            /// version: 1, syclobj: syclQueue }`, a new object on every read.
            #[napi(getter, js_name = "__sycl_usm_array_interface__", ts_return_type = "SyclUsmArrayInterface")]
            pub fn sycl_usm_array_interface<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
                self.core.with(env, |core| core.interface(env))
            }

            /// Releases this object's reference to the memory now, and detaches its
            /// `buffer` so no TypedArray can touch the memory again. Idempotent; every
            /// later method call throws `ERR_USM_FREED`. Views made from this object
            /// keep the memory alive until they are freed too.
            #[napi]
            pub fn free(&self, env: Env, this: This<Unknown>) -> napi::Result<()> {
                let buffer = buffer_of(&env, &this)?;
                self.core.with_mut(&env, |core| core.free(&env, buffer.as_ref()))
            }

            /// Same as `free()`, for `using` declarations.
            #[napi(well_known_symbol = "dispose")]
            pub fn dispose(&self, env: Env, this: This<Unknown>) -> napi::Result<()> {
                self.free(env, this)
            }

            /// `<SYCL(TM) USM-device allocation of 16 bytes at 0x…>`, as dpctl's repr.
            #[napi]
            #[allow(clippy::inherent_to_string)]
            pub fn to_string(&self) -> String {
                self.core.describe()
            }

            /// What `util.inspect` and `console.log` show.
            #[napi(symbol_for = "nodejs.util.inspect.custom")]
            pub fn inspect(&self) -> String {
                self.core.describe()
            }
        }
    };
}

usm_class!(
    /// USM device memory: reachable from the host only through copies.
    MemoryUSMDevice,
    "MemoryUSMDevice",
    UsmKind::Device
);
usm_class!(
    /// USM host memory: host memory the device can reach; `buffer` views it with no copy.
    MemoryUSMHost,
    "MemoryUSMHost",
    UsmKind::Host
);
usm_class!(
    /// USM shared memory: migrates between host and device; `buffer` views it with no copy.
    MemoryUSMShared,
    "MemoryUSMShared",
    UsmKind::Shared
);

/// Wraps the memory an object exposes through `__sycl_usm_array_interface__` (or one of
/// this library's memory objects) in the memory class of its USM kind, without copying.
#[napi(ts_args_type = "obj: SyclUsmArrayInterfaceExporter")]
pub fn as_usm_memory<'env>(
    env: &'env Env,
    obj: Unknown<'env>,
) -> napi::Result<Either3<ClassInstance<'env, MemoryUSMShared>, ClassInstance<'env, MemoryUSMDevice>, ClassInstance<'env, MemoryUSMHost>>> {
    if !matches!(obj.get_type()?, ValueType::Object | ValueType::Function) {
        return Err(MemoryError::NotUsm(format!("Argument {} does not expose `{SUAI}`.", display(&obj)))).or_throw(env);
    }
    let source = usm_source(env, &obj)?;
    let kind = source.memory.usm_type(None);
    let reference = source.reference;
    let attach = |object: Object| -> napi::Result<()> {
        match &reference {
            Some(reference) => set_reference(env, &object.to_unknown(), reference),
            None => Ok(()),
        }
    };
    match kind {
        UsmKind::Shared => {
            let instance = MemoryUSMShared { core: CoreCell::new(MemoryCore::from_source(kind, source)?) }.into_instance(env)?;
            attach(instance.as_object(env))?;
            Ok(Either3::A(instance))
        }
        UsmKind::Device => {
            let instance = MemoryUSMDevice { core: CoreCell::new(MemoryCore::from_source(kind, source)?) }.into_instance(env)?;
            attach(instance.as_object(env))?;
            Ok(Either3::B(instance))
        }
        UsmKind::Host => {
            let instance = MemoryUSMHost { core: CoreCell::new(MemoryCore::from_source(kind, source)?) }.into_instance(env)?;
            attach(instance.as_object(env))?;
            Ok(Either3::C(instance))
        }
        UsmKind::Unknown => Err(MemoryError::UnknownUsmType(format!(
            "Could not determine the type USM allocation represented by argument {}",
            display(&obj)
        )))
        .or_throw(env),
    }
}
