//! The native hand-off of memory objects to other addons (`include/dpctl_memory.h`): the
//! getter `__dpctl_memory_handoff__` of every memory object (`lib/handoff.js`) returns an
//! external value made here, type-tagged so that JS cannot forge one, pointing at a
//! `dpctl_memory_handoff` whose function table reads the memory and makes references that
//! hold it (its allocation, queue, context, device) until the other addon releases them.
//!
//! The C functions take raw pointers from another addon: each is `unsafe extern "C"` and
//! trusts the header's contract (a record of a live hand-off value, a reference not yet
//! released), which its `// SAFETY:` comments name.

use std::ffi::{c_int, c_void};

use napi::bindgen_prelude::Unknown;
use napi::sys;
use napi::Env;
use napi_derive::napi;

use crate::js::ffi;
use crate::js::lookup::lookup;
use crate::js::state::registry;
use crate::memory::usm::UsmMemory;
use crate::runtime::program::NativeQueue;
use crate::runtime::UsmKind;

const API_VERSION: u32 = 1;
const MAGIC: u32 = 0x4450_4d48; // 'DPMH'
const STATUS_OK: c_int = 0;
const STATUS_FREED: c_int = 2;
const STATUS_ARG: c_int = 5;
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
    info: unsafe extern "C" fn(*const c_void, *mut Info) -> c_int,
    retain: unsafe extern "C" fn(*const c_void) -> *mut c_void,
    ref_info: unsafe extern "C" fn(*const c_void, *mut Info) -> c_int,
    release: unsafe extern "C" fn(*mut c_void),
}

static API: Api = Api {
    version: API_VERSION,
    struct_size: std::mem::size_of::<Api>() as u32,
    info: record_info,
    retain: record_retain,
    ref_info: held_info,
    release: held_release,
};

/// What a hand-off or a reference knows: the memory (`None`: freed) and its facts.
struct Held {
    memory: Option<UsmMemory>,
    filter: String,
    native: Option<NativeQueue>,
    host_accessible: bool,
}

/// `dpctl_memory_handoff` followed by what it describes (`record` points at `held`).
#[repr(C)]
struct Handoff {
    magic: u32,
    version: u32,
    api: *const Api,
    record: *const c_void,
    held: Held,
}

impl Held {
    fn of(memory: Option<UsmMemory>) -> Held {
        let Some(memory) = memory else {
            return Held { memory: None, filter: String::new(), native: None, host_accessible: false };
        };
        let queue = memory.queue();
        let device = queue.device();
        let filter = registry().filter_string_of(device.as_ref());
        let kind = memory.usm_type(None);
        let host_accessible = matches!(kind, UsmKind::Host | UsmKind::Shared) || device.device_memory_is_host_memory();
        let native = queue.native_handles();
        Held { memory: Some(memory), filter, native, host_accessible }
    }

    fn fill(&self, out: &mut Info) -> c_int {
        let Some(memory) = &self.memory else { return STATUS_FREED };
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
        STATUS_OK
    }

    fn duplicate(&self) -> Held {
        Held {
            memory: self.memory.clone(),
            filter: self.filter.clone(),
            native: self.native,
            host_accessible: self.host_accessible,
        }
    }
}

unsafe extern "C" fn record_info(record: *const c_void, out: *mut Info) -> c_int {
    if record.is_null() || out.is_null() {
        return STATUS_ARG;
    }
    // SAFETY: the header passes the `record` of a hand-off value the caller holds in the
    // current Node-API scope (so its finalizer has not run): the `Held` of a `Handoff`;
    // `out` is the caller's writable `dpctl_memory_info`.
    let (held, out) = unsafe { (&*record.cast::<Held>(), &mut *out) };
    held.fill(out)
}

unsafe extern "C" fn record_retain(record: *const c_void) -> *mut c_void {
    if record.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: as in `record_info`.
    let held = unsafe { &*record.cast::<Held>() };
    if held.memory.is_none() {
        return std::ptr::null_mut();
    }
    Box::into_raw(Box::new(held.duplicate())).cast()
}

unsafe extern "C" fn held_info(reference: *const c_void, out: *mut Info) -> c_int {
    if reference.is_null() || out.is_null() {
        return STATUS_ARG;
    }
    // SAFETY: a reference `record_retain` made and the caller has not released (the
    // header's contract), and the caller's writable `dpctl_memory_info`.
    let (held, out) = unsafe { (&*reference.cast::<Held>(), &mut *out) };
    held.fill(out)
}

unsafe extern "C" fn held_release(reference: *mut c_void) {
    if reference.is_null() {
        return;
    }
    // SAFETY: a reference `record_retain` boxed, released once (the header's contract).
    drop(unsafe { Box::from_raw(reference.cast::<Held>()) });
}

/// The hand-off value of a memory handle (`memory_id` < 0: of a freed object).
#[napi]
pub fn mem_handoff<'env>(env: &'env Env, memory_id: f64) -> napi::Result<Unknown<'env>> {
    let memory = if memory_id < 0.0 { None } else { Some(lookup(env, |h| h.memory(memory_id))?) };
    let mut handoff = Box::new(Handoff {
        magic: MAGIC,
        version: API_VERSION,
        api: &API,
        record: std::ptr::null(),
        held: Held::of(memory),
    });
    handoff.record = std::ptr::addr_of!(handoff.held).cast();
    ffi::tagged_external(env, handoff, &TYPE_TAG)
}
