//! The native hand-off of memory objects to other addons (`include/dpctl_memory.h`): the
//! getter `__dpctl_memory_handoff__` of every memory object (`lib/handoff.js`) returns an
//! external value made here, type-tagged so that JS cannot forge one, pointing at a
//! `dpctl_memory_handoff` whose function table reads the memory and makes references that
//! hold it (its allocation, queue, context, device) until the other addon releases them.
//!
//! The value names its memory object twice over, so that it is memory only there and only
//! while that object lives: by the object's own type tag (its *brand*, put on the object
//! once, by the getter, which JS cannot do), checked against the caller's `object`; and by
//! the object's memory handle, looked up in its environment's handles when it is read (a
//! freed handle finds nothing). A reference is an id into [`REFERENCES`], never a pointer,
//! so a released one is a status. The header keeps no state: every value and reference
//! carries this copy's [`API`], so each file of an addon, and each copy of this package
//! in the process, is served by the table that made what it holds.
//!
//! The C functions take raw pointers from another addon: each is `unsafe extern "C"` and
//! trusts the header's contract (a record of a hand-off value the caller holds in its
//! current Node-API scope), which its `// SAFETY:` comments name.

use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use napi::bindgen_prelude::Unknown;
use napi::sys;
use napi::Env;
use napi_derive::napi;

use crate::js::ffi;
use crate::js::state::{registry, state};
use crate::memory::usm::UsmMemory;
use crate::runtime::program::NativeQueue;
use crate::runtime::UsmKind;

const API_VERSION: u32 = 2;
const MAGIC: u32 = 0x4450_4d48; // 'DPMH'
const STATUS_OK: c_int = 0;
const STATUS_NOT_MEMORY: c_int = 1;
const STATUS_FREED: c_int = 2;
const STATUS_NAPI: c_int = 4;
const STATUS_ARG: c_int = 5;
const STATUS_RELEASED: c_int = 6;
const BACKEND_SYCL: i32 = 1;
const BACKEND_CUDA: i32 = 2;

/// `DPCTL_MEMORY_TYPE_TAG` of the header.
static TYPE_TAG: sys::napi_type_tag = sys::napi_type_tag { lower: 0x6470_6374_6374_6c6d, upper: 0x656d_6f72_7900_0001 };

/// `dpctl_memory_info`.
#[repr(C)]
pub struct Info {
    struct_size: u32,
    pointer: *mut c_void,
    nbytes: u64,
    kind: i32,
    read_only: i32,
    backend: i32,
    host_accessible: i32,
    filter_string: [u8; 64],
    sycl_queue: *mut c_void,
    sycl_context: *mut c_void,
    sycl_device: *mut c_void,
    cuda_context: *mut c_void,
    cuda_stream: *mut c_void,
    cuda_device: i32,
    reserved: i32,
}

/// `dpctl_memory_api`.
#[repr(C)]
struct Api {
    version: u32,
    struct_size: u32,
    get: unsafe extern "C" fn(sys::napi_env, sys::napi_value, *const c_void, *mut Info, *mut u64) -> c_int,
    ref_info: unsafe extern "C" fn(u64, *mut Info) -> c_int,
    release: extern "C" fn(u64) -> c_int,
}

/// This copy's table: every hand-off value and (through the header) every reference made
/// here points at it; its address also tells this copy's brands from another copy's.
static API: Api = Api {
    version: API_VERSION,
    struct_size: std::mem::size_of::<Api>() as u32,
    get: record_get,
    ref_info: reference_info,
    release: reference_release,
};

/// What a reference holds: the memory and its facts.
struct Held {
    memory: UsmMemory,
    filter: String,
    native: Option<NativeQueue>,
    host_accessible: bool,
}

/// What a hand-off value says: the memory handle of the object it was read from (`None`:
/// freed then) in the environment that made it, and that object's brand.
struct Record {
    env: sys::napi_env,
    memory_id: Option<f64>,
    brand: sys::napi_type_tag,
}

/// `dpctl_memory_handoff` followed by what it describes (`record` points at `record_data`).
#[repr(C)]
struct Handoff {
    magic: u32,
    version: u32,
    api: *const Api,
    record: *const c_void,
    record_data: Record,
}

/// The references other addons hold, by id. Ids count up from 1 and are never reused, so
/// a released id finds nothing, however many references were made since.
struct References {
    next: u64,
    held: BTreeMap<u64, Held>,
}

static REFERENCES: Mutex<References> = Mutex::new(References { next: 1, held: BTreeMap::new() });

fn references() -> std::sync::MutexGuard<'static, References> {
    REFERENCES.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Held {
    fn of(memory: UsmMemory) -> Held {
        let queue = memory.queue();
        let device = queue.device();
        let filter = registry().filter_string_of(device.as_ref());
        let kind = memory.usm_type(None);
        let host_accessible = matches!(kind, UsmKind::Host | UsmKind::Shared) || device.device_memory_is_host_memory();
        let native = queue.native_handles();
        Held { memory, filter, native, host_accessible }
    }

    fn fill(&self, out: &mut Info) {
        let memory = &self.memory;
        out.struct_size = std::mem::size_of::<Info>() as u32;
        out.pointer = memory.address() as usize as *mut c_void;
        out.nbytes = memory.nbytes();
        out.kind = memory.usm_type(None).enum_value() as i32;
        out.read_only = i32::from(memory.read_only());
        out.host_accessible = i32::from(self.host_accessible);
        let bytes = self.filter.as_bytes();
        let n = bytes.len().min(out.filter_string.len() - 1);
        out.filter_string[..n].copy_from_slice(&bytes[..n]);
        out.filter_string[n] = 0;
        out.cuda_device = -1;
        match self.native {
            Some(NativeQueue::Sycl { queue, context, device }) => {
                out.backend = BACKEND_SYCL;
                out.sycl_queue = queue as *mut c_void;
                out.sycl_context = context as *mut c_void;
                out.sycl_device = device as *mut c_void;
            }
            Some(NativeQueue::Cuda { context, stream, ordinal }) => {
                out.backend = BACKEND_CUDA;
                out.cuda_context = context as *mut c_void;
                out.cuda_stream = stream as *mut c_void;
                out.cuda_device = ordinal;
            }
            None => out.backend = 0,
        }
    }
}

/// The memory a record names, if its object is not freed; `Err(status)` otherwise.
fn record_memory(record: &Record) -> Result<UsmMemory, c_int> {
    let Some(memory_id) = record.memory_id else { return Err(STATUS_FREED) };
    // The environment that made the hand-off value: alive while the value is (its
    // finalizer frees the record), and this is its thread (the caller holds the value in a
    // Node-API scope of that isolate). The caller's own `env` is another addon's.
    let env = Env::from_raw(record.env);
    let Ok(state) = state(&env) else { return Err(STATUS_NAPI) };
    // No binding call holds the handles while JS runs, so this borrow succeeds; a failure
    // is reported rather than waited for.
    let Ok(handles) = state.handles.try_borrow() else { return Err(STATUS_NAPI) };
    handles.memory(memory_id).map_err(|_| STATUS_FREED)
}

/// # Safety
///
/// `env` and `object` are the caller's, in its current Node-API scope; `record` is the
/// record of a hand-off value the caller holds in that scope (so its finalizer has not
/// run); `out` is writable; `id` is NULL or writable.
unsafe extern "C" fn record_get(
    env: sys::napi_env,
    object: sys::napi_value,
    record: *const c_void,
    out: *mut Info,
    id: *mut u64,
) -> c_int {
    if env.is_null() || object.is_null() || record.is_null() || out.is_null() {
        return STATUS_ARG;
    }
    // SAFETY: as the contract above says: the `Record` of a live `Handoff`, and the
    // caller's writable `dpctl_memory_info`.
    let (record, out) = unsafe { (&*record.cast::<Record>(), &mut *out) };
    let mut branded = false;
    // SAFETY: the caller's environment and value, in its scope; `brand` outlives the call.
    let status = unsafe { sys::napi_check_object_type_tag(env, object, &record.brand, &mut branded) };
    if status != sys::Status::napi_ok {
        return STATUS_NAPI;
    }
    if !branded {
        // Not the object this value was read from: a look-alike, or another object
        // carrying it.
        return STATUS_NOT_MEMORY;
    }
    let memory = match record_memory(record) {
        Ok(memory) => memory,
        Err(status) => return status,
    };
    let held = Held::of(memory);
    held.fill(out);
    if !id.is_null() {
        let mut references = references();
        let made = references.next;
        references.next += 1;
        references.held.insert(made, held);
        // SAFETY: `id` is the caller's writable `uint64_t`.
        unsafe { *id = made };
    }
    STATUS_OK
}

/// # Safety
///
/// `out` is NULL or the caller's writable `dpctl_memory_info`.
unsafe extern "C" fn reference_info(id: u64, out: *mut Info) -> c_int {
    if out.is_null() {
        return STATUS_ARG;
    }
    // SAFETY: as the contract above says.
    let out = unsafe { &mut *out };
    let references = references();
    let Some(held) = references.held.get(&id) else { return STATUS_RELEASED };
    held.fill(out);
    STATUS_OK
}

extern "C" fn reference_release(id: u64) -> c_int {
    let Some(held) = references().held.remove(&id) else { return STATUS_RELEASED };
    // Dropped outside the lock: the last holder gives the block back to its pool, and no
    // panic may unwind into the caller's frames.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(held)));
    STATUS_OK
}

/// The brand of this copy's memory objects: a fresh serial, and this copy's table's
/// address, which no other copy loaded in the process shares.
fn brand(serial: u64) -> sys::napi_type_tag {
    sys::napi_type_tag { lower: serial, upper: std::ptr::addr_of!(API) as usize as u64 }
}

/// Brands a memory object (once, from its hand-off getter, which checked that it is one):
/// type-tags it with a fresh serial of this copy, which it returns for `memHandoff`.
#[napi]
pub fn mem_handoff_brand(env: &Env, object: Unknown) -> napi::Result<f64> {
    static SERIALS: AtomicU64 = AtomicU64::new(1);
    // Below 2^53, so the serial is exact as a JS number.
    let serial = SERIALS.fetch_add(1, Ordering::Relaxed) & ((1 << 53) - 1);
    ffi::type_tag(env, &object, &brand(serial))?;
    Ok(serial as f64)
}

/// The hand-off value of a memory handle (`memory_id` < 0: of a freed object) read from
/// the object branded with `serial`.
#[napi]
pub fn mem_handoff<'env>(env: &'env Env, memory_id: f64, serial: f64) -> napi::Result<Unknown<'env>> {
    let mut handoff = Box::new(Handoff {
        magic: MAGIC,
        version: API_VERSION,
        api: &API,
        record: std::ptr::null(),
        record_data: Record {
            env: env.raw(),
            memory_id: (memory_id >= 0.0).then_some(memory_id),
            brand: brand(serial as u64),
        },
    });
    handoff.record = std::ptr::addr_of!(handoff.record_data).cast();
    ffi::tagged_external(env, handoff, &TYPE_TAG)
}
