//! UCX's C API (`ucp.h`), fenced: the types this transport passes, and the entry points
//! it calls, resolved once from the `libucp` found at run time (`locate.rs`), as the CUDA
//! provider resolves the driver. Nothing of UCX is a load-time dependency of the addon.
//!
//! The structs are `ucp.h`'s up to the last field this module sets: each has a
//! `field_mask` naming the fields it fills, so an older UCX (1.16 of a distribution) reads
//! only what it knows, and a newer one treats the fields past the mask as unset.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::OnceLock;

/// `ucs_status_t`: a packed enum (`UCS_S_PACKED`), one signed byte, as a return value and
/// as an argument (the statuses the policy tells apart are in `memory::transport::status`).
pub type Status = i8;
pub const UCS_OK: Status = 0;
pub const UCS_ERR_INVALID_PARAM: Status = -5;
pub const UCS_ERR_NO_ELEM: Status = -12;
pub const UCS_ERR_BUSY: Status = -15;
pub const UCS_ERR_CANCELED: Status = -16;
pub const UCS_ERR_NOT_CONNECTED: Status = -24;
/// `UCS_ERR_LAST`: a status pointer at or above `(uintptr_t)UCS_ERR_LAST` is an error.
const UCS_ERR_LAST: isize = -100;

pub type Context = *mut c_void;
pub type Worker = *mut c_void;
pub type Endpoint = *mut c_void;
pub type Listener = *mut c_void;
pub type ConnRequest = *mut c_void;
pub type MemHandle = *mut c_void;
pub type Rkey = *mut c_void;
pub type Config = *mut c_void;
/// `ucs_status_ptr_t`: NULL (done), an error status, or a request.
pub type StatusPtr = *mut c_void;

/// What a status pointer says.
pub enum Posted {
    /// Done at once (only without `UCP_OP_ATTR_FLAG_NO_IMM_CMPL`).
    Done,
    /// Failed at once.
    Failed(Status),
    /// A request whose callback will run.
    Request(*mut c_void),
}

impl Posted {
    /// `UCS_PTR_IS_ERR` / `UCS_PTR_STATUS`.
    pub fn of(ptr: StatusPtr) -> Posted {
        let raw = ptr as usize;
        if raw == 0 {
            Posted::Done
        } else if raw >= UCS_ERR_LAST as usize {
            // `UCS_PTR_STATUS`: the pointer's value, as a `ucs_status_t` (its low byte).
            Posted::Failed(raw as isize as Status)
        } else {
            Posted::Request(ptr)
        }
    }
}

pub const UCP_PARAM_FIELD_FEATURES: u64 = 1 << 0;
pub const UCP_PARAM_FIELD_NAME: u64 = 1 << 8;
pub const UCP_FEATURE_TAG: u64 = 1 << 0;
pub const UCP_FEATURE_RMA: u64 = 1 << 1;
pub const UCP_FEATURE_WAKEUP: u64 = 1 << 4;

pub const UCP_WORKER_PARAM_FIELD_THREAD_MODE: u64 = 1 << 0;
/// `UCS_THREAD_MODE_SINGLE`: one thread uses the worker (the one that made it).
pub const UCS_THREAD_MODE_SINGLE: c_int = 0;

pub const UCP_LISTENER_PARAM_FIELD_SOCK_ADDR: u64 = 1 << 0;
pub const UCP_LISTENER_PARAM_FIELD_CONN_HANDLER: u64 = 1 << 2;
pub const UCP_LISTENER_ATTR_FIELD_SOCKADDR: u64 = 1 << 0;

pub const UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE: u64 = 1 << 1;
pub const UCP_EP_PARAM_FIELD_ERR_HANDLER: u64 = 1 << 2;
pub const UCP_EP_PARAM_FIELD_SOCK_ADDR: u64 = 1 << 4;
pub const UCP_EP_PARAM_FIELD_FLAGS: u64 = 1 << 5;
pub const UCP_EP_PARAM_FIELD_CONN_REQUEST: u64 = 1 << 6;
pub const UCP_EP_PARAMS_FLAGS_CLIENT_SERVER: c_uint = 1 << 0;
/// `UCP_ERR_HANDLING_MODE_PEER`: failures of the peer are reported (and keepalive runs).
pub const UCP_ERR_HANDLING_MODE_PEER: c_int = 1;
pub const UCP_EP_CLOSE_FLAG_FORCE: u32 = 1 << 0;

pub const UCP_OP_ATTR_FIELD_CALLBACK: u32 = 1 << 1;
pub const UCP_OP_ATTR_FIELD_USER_DATA: u32 = 1 << 2;
pub const UCP_OP_ATTR_FIELD_FLAGS: u32 = 1 << 4;
pub const UCP_OP_ATTR_FIELD_MEMH: u32 = 1 << 8;
pub const UCP_OP_ATTR_FLAG_NO_IMM_CMPL: u32 = 1 << 16;

pub const UCP_MEM_MAP_PARAM_FIELD_ADDRESS: u64 = 1 << 0;
pub const UCP_MEM_MAP_PARAM_FIELD_LENGTH: u64 = 1 << 1;

/// `ucs_sock_addr_t`.
#[repr(C)]
pub struct SockAddr {
    pub addr: *const libc::sockaddr,
    pub addrlen: libc::socklen_t,
}

/// `ucp_params_t`, up to `name`.
#[repr(C)]
pub struct Params {
    pub field_mask: u64,
    pub features: u64,
    pub request_size: usize,
    pub request_init: Option<unsafe extern "C" fn(*mut c_void)>,
    pub request_cleanup: Option<unsafe extern "C" fn(*mut c_void)>,
    pub tag_sender_mask: u64,
    pub mt_workers_shared: c_int,
    pub estimated_num_eps: usize,
    pub estimated_num_ppn: usize,
    pub name: *const c_char,
}

/// `ucp_worker_params_t`, up to `thread_mode` (the rest is unset).
#[repr(C)]
pub struct WorkerParams {
    pub field_mask: u64,
    pub thread_mode: c_int,
    pub cpu_mask: [u64; 16],
    pub events: c_uint,
    pub user_data: *mut c_void,
    pub event_fd: c_int,
    pub flags: u64,
}

pub type ConnCallback = unsafe extern "C" fn(ConnRequest, *mut c_void);
pub type ErrCallback = unsafe extern "C" fn(*mut c_void, Endpoint, Status);

/// `ucp_listener_params_t`.
#[repr(C)]
pub struct ListenerParams {
    pub field_mask: u64,
    pub sockaddr: SockAddr,
    pub accept_cb: Option<unsafe extern "C" fn(Endpoint, *mut c_void)>,
    pub accept_arg: *mut c_void,
    pub conn_cb: Option<ConnCallback>,
    pub conn_arg: *mut c_void,
}

/// `ucp_listener_attr_t`.
#[repr(C)]
pub struct ListenerAttr {
    pub field_mask: u64,
    pub sockaddr: libc::sockaddr_storage,
}

/// `ucp_ep_params_t`, up to `conn_request`.
#[repr(C)]
pub struct EpParams {
    pub field_mask: u64,
    pub address: *const c_void,
    pub err_mode: c_int,
    pub err_cb: Option<ErrCallback>,
    pub err_arg: *mut c_void,
    pub user_data: *mut c_void,
    pub flags: c_uint,
    pub sockaddr: SockAddr,
    pub conn_request: ConnRequest,
}

/// `ucp_tag_recv_info_t`.
#[repr(C)]
pub struct TagRecvInfo {
    pub sender_tag: u64,
    pub length: usize,
}

/// `ucp_request_param_t`, up to `memh`. `cb` is the union of the send and receive
/// callbacks (both are one function pointer).
#[repr(C)]
pub struct RequestParam {
    pub op_attr_mask: u32,
    pub flags: u32,
    pub request: *mut c_void,
    pub cb: *const c_void,
    pub datatype: u64,
    pub user_data: *mut c_void,
    pub reply_buffer: *mut c_void,
    pub memory_type: c_int,
    pub recv_info: *mut c_void,
    pub memh: MemHandle,
}

impl RequestParam {
    /// A request whose completion calls `cb` with `user_data`, never at once.
    pub fn with_callback(cb: *const c_void, user_data: *mut c_void) -> Self {
        RequestParam {
            op_attr_mask: UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
            flags: 0,
            request: std::ptr::null_mut(),
            cb,
            datatype: 0,
            user_data,
            reply_buffer: std::ptr::null_mut(),
            memory_type: 0,
            recv_info: std::ptr::null_mut(),
            memh: std::ptr::null_mut(),
        }
    }

    /// A request whose completion calls `cb` with `user_data`, or that completes at once
    /// (the call returns `UCS_OK` and no callback runs). Only for operations whose
    /// completion carries nothing (a receive's carries its length and tag).
    pub fn with_callback_or_at_once(cb: *const c_void, user_data: *mut c_void) -> Self {
        RequestParam {
            op_attr_mask: UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
            ..Self::with_callback(cb, user_data)
        }
    }
}

/// `ucp_context_attr_t`, up to `memory_types` (`thread_mode` is a 4-byte enum; the
/// `u64` after it is aligned to 8 either way).
#[repr(C)]
pub struct ContextAttr {
    pub field_mask: u64,
    pub request_size: usize,
    pub thread_mode: c_int,
    pub memory_types: u64,
    pub name: [c_char; 32],
}

pub const UCP_ATTR_FIELD_MEMORY_TYPES: u64 = 1 << 2;
/// `UCS_MEMORY_TYPE_CUDA`, as a bit of `memory_types`.
pub const UCS_MEMORY_TYPE_CUDA_BIT: u64 = 1 << 1;

/// `ucp_mem_map_params_t`, up to `length`.
#[repr(C)]
pub struct MemMapParams {
    pub field_mask: u64,
    pub address: *mut c_void,
    pub length: usize,
    pub flags: c_uint,
    pub prot: c_uint,
    pub memory_type: c_int,
    pub exported_memh_buffer: *const c_void,
}

macro_rules! ucp_table {
    ( $( $field:ident : fn($($arg:ty),* $(,)?) -> $ret:ty; )* ) => {
        /// Function pointers into `libucp`, all resolved before the first call.
        #[allow(non_snake_case)]
        pub struct Table {
            $( pub $field: unsafe extern "C" fn($($arg),*) -> $ret, )*
        }

        impl Table {
            /// Resolves every entry point; `Err` names the first missing symbol.
            ///
            /// # Safety
            /// `lib` must be UCX's `libucp`: each symbol is given the signature `ucp.h`
            /// declares for it.
            unsafe fn resolve(lib: &libloading::Library) -> Result<Self, String> {
                Ok(Self {
                    $(
                        // SAFETY: the type is `ucp.h`'s signature of this symbol.
                        $field: *unsafe { lib.get::<unsafe extern "C" fn($($arg),*) -> $ret>(stringify!($field).as_bytes()) }
                            .map_err(|e| format!("{} has no symbol {}: {e:?}", "libucp", stringify!($field)))?,
                    )*
                })
            }
        }
    };
}

ucp_table! {
    ucp_get_version: fn(*mut c_uint, *mut c_uint, *mut c_uint) -> ();
    ucp_config_read: fn(*const c_char, *const c_char, *mut Config) -> Status;
    ucp_config_modify: fn(Config, *const c_char, *const c_char) -> Status;
    ucp_config_release: fn(Config) -> ();
    ucp_init_version: fn(c_uint, c_uint, *const Params, Config, *mut Context) -> Status;
    ucp_cleanup: fn(Context) -> ();
    ucp_context_query: fn(Context, *mut ContextAttr) -> Status;
    ucp_worker_create: fn(Context, *const WorkerParams, *mut Worker) -> Status;
    ucp_worker_destroy: fn(Worker) -> ();
    ucp_worker_progress: fn(Worker) -> c_uint;
    ucp_worker_get_efd: fn(Worker, *mut c_int) -> Status;
    ucp_worker_arm: fn(Worker) -> Status;
    ucp_listener_create: fn(Worker, *const ListenerParams, *mut Listener) -> Status;
    ucp_listener_destroy: fn(Listener) -> ();
    ucp_listener_query: fn(Listener, *mut ListenerAttr) -> Status;
    ucp_listener_reject: fn(Listener, ConnRequest) -> Status;
    ucp_ep_create: fn(Worker, *const EpParams, *mut Endpoint) -> Status;
    ucp_ep_close_nbx: fn(Endpoint, *const RequestParam) -> StatusPtr;
    ucp_ep_flush_nbx: fn(Endpoint, *const RequestParam) -> StatusPtr;
    ucp_tag_send_nbx: fn(Endpoint, *const c_void, usize, u64, *const RequestParam) -> StatusPtr;
    ucp_tag_recv_nbx: fn(Worker, *mut c_void, usize, u64, u64, *const RequestParam) -> StatusPtr;
    ucp_put_nbx: fn(Endpoint, *const c_void, usize, u64, Rkey, *const RequestParam) -> StatusPtr;
    ucp_get_nbx: fn(Endpoint, *mut c_void, usize, u64, Rkey, *const RequestParam) -> StatusPtr;
    ucp_request_cancel: fn(Worker, *mut c_void) -> ();
    ucp_request_free: fn(*mut c_void) -> ();
    ucp_mem_map: fn(Context, *const MemMapParams, *mut MemHandle) -> Status;
    ucp_mem_unmap: fn(Context, MemHandle) -> Status;
    ucp_rkey_pack: fn(Context, MemHandle, *mut *mut c_void, *mut usize) -> Status;
    ucp_rkey_buffer_release: fn(*mut c_void) -> ();
    ucp_ep_rkey_unpack: fn(Endpoint, *const c_void, *mut Rkey) -> Status;
    ucp_rkey_destroy: fn(Rkey) -> ();
}

/// `libucs`'s one entry point this module needs (`ucs_status_string`), from the library
/// `libucp` itself loaded.
type StatusString = unsafe extern "C" fn(Status) -> *const c_char;

/// UCX, loaded: the library (kept loaded for the life of the process), its table, and
/// where it came from.
pub struct Ucp {
    pub table: Table,
    status_string: StatusString,
    /// The `libucp` path, and what named it.
    pub origin: String,
    /// `(major, minor, release)` of the library.
    pub version: (u32, u32, u32),
    _ucs: libloading::Library,
    _lib: libloading::Library,
}

static UCP: OnceLock<Result<Ucp, String>> = OnceLock::new();

/// UCX, loaded once per process; `Err` says what was searched and what to install.
pub fn ucp() -> Result<&'static Ucp, &'static str> {
    UCP.get_or_init(load).as_ref().map_err(String::as_str)
}

/// The settings that switch UCX's memory hooks (`UCM`) on or off. UCX reads them when
/// `libucs` loads, so they are set before the first load.
const MEMORY_HOOK_SETTINGS: &[&str] =
    &["UCX_MEM_EVENTS", "UCX_MEM_MALLOC_HOOKS", "UCX_MEM_MMAP_HOOK_MODE", "UCX_MEM_CUDA_HOOK_MODE"];

/// Keeps UCX's memory hooks off unless the user chose otherwise (any of
/// [`MEMORY_HOOK_SETTINGS`] set); true when this set `UCX_MEM_EVENTS=n`, which
/// [`load`] takes back out of the environment once UCX has read it (children choose for
/// themselves). UCX patches `malloc`, `mmap` and the CUDA allocation calls in every
/// loaded library while the process runs other threads (V8's, libuv's, the SYCL
/// runtime's): left on, they corrupted the heap of Node processes now and then (a crash in
/// `malloc` or V8 soon after UCX loaded, more often under load). The hooks only feed UCX's
/// registration and memory-type caches; without them UCX registers and detects memory
/// per operation.
fn keep_memory_hooks_off() -> bool {
    if MEMORY_HOOK_SETTINGS.iter().any(|name| std::env::var_os(name).is_some()) {
        return false;
    }
    std::env::set_var("UCX_MEM_EVENTS", "n");
    true
}

/// Whether sends and receives must bring their own registration: UCX before 1.22 crashes
/// when a peer fails during a rendezvous whose buffer it registered itself while it runs
/// without its registration cache (openucx/ucx#11467, fixed in 1.22), and one it was
/// handed it leaves alone. The cache is off with the memory events (this addon's default)
/// and may be turned off by settings this process cannot see (a `ucx.conf`), so on those
/// versions every op brings one.
pub fn ops_bring_registration(version: (u32, u32, u32)) -> bool {
    version < (1, 22, 0)
}

/// The name `ucp_config_modify` takes for the TCP transport's put switch (`UCX_TCP_PUT_ENABLE`
/// in the environment). UCX keeps a transport setting it is handed and applies it to each
/// transport's configuration as that is read: from 1.18 it matches the name with the
/// transport's prefix (`TCP_`), before 1.18 only the bare field name, so there the prefixed
/// name is kept, applied nowhere, and the puts stay on.
pub fn tcp_put_setting(version: (u32, u32, u32)) -> &'static CStr {
    if version < (1, 18, 0) {
        c"PUT_ENABLE"
    } else {
        c"TCP_PUT_ENABLE"
    }
}

fn load() -> Result<Ucp, String> {
    let events_turned_off_here = keep_memory_hooks_off();
    let log_quieted_here = keep_log_quiet();
    let found = super::locate::locate();
    let loaded = found.and_then(|found| open(&found));
    if events_turned_off_here {
        // Read by libucs as it loaded (or never needed).
        std::env::remove_var("UCX_MEM_EVENTS");
    }
    if log_quieted_here {
        std::env::remove_var("UCX_LOG_LEVEL");
    }
    loaded
}

/// Keeps UCX's own log (`UCX ERROR ...`, `UCX WARN ...` on stderr) to fatal errors unless
/// the user set `UCX_LOG_LEVEL`; true when this set it, which [`load`] takes back out of
/// the environment once libucs has read it. Every failure this transport sees comes to JS
/// as a coded error saying the same (a refused connection, a configuration UCX refuses, a
/// peer gone); UCX's lines beside it only repeat it, out of the program's control.
fn keep_log_quiet() -> bool {
    if std::env::var_os("UCX_LOG_LEVEL").is_some() {
        return false;
    }
    std::env::set_var("UCX_LOG_LEVEL", "fatal");
    true
}

/// Loads the UCX `found` names.
fn open(found: &super::locate::Found) -> Result<Ucp, String> {
    // SAFETY: loading a shared library runs its initialisers; this is UCX's libucp, at
    // the absolute path the system search, the user or the checked cache gave.
    let lib = unsafe { libloading::Library::new(&found.libucp) }.map_err(|e| {
        format!("UCX was found at {} ({}) but could not be loaded: {e:?}", found.libucp.display(), found.source)
    })?;
    // SAFETY: `lib` is libucp (above).
    let table = unsafe { Table::resolve(&lib) }?;
    // SAFETY: libucs is libucp's own dependency, already loaded with it: RTLD_NOLOAD only
    // takes another reference to the loaded one and never searches (a bare name that
    // searched could resolve to the working directory).
    let ucs = unsafe {
        libloading::os::unix::Library::open(
            Some("libucs.so.0"),
            libloading::os::unix::RTLD_LAZY | libloading::os::unix::RTLD_LOCAL | libc::RTLD_NOLOAD,
        )
    }
    .map(libloading::Library::from)
    .map_err(|e| format!("libucs.so.0, which {} needs, is not loaded with it: {e:?}", found.libucp.display()))?;
    // SAFETY: `ucs_status_string` has this signature in `ucs/type/status.h`.
    let status_string = *unsafe { ucs.get::<StatusString>(b"ucs_status_string") }
        .map_err(|e| format!("libucs has no ucs_status_string: {e:?}"))?;
    let (mut major, mut minor, mut release) = (0, 0, 0);
    // SAFETY: three writable `unsigned`s.
    unsafe { (table.ucp_get_version)(&mut major, &mut minor, &mut release) };
    if (major, minor) < (1, 12) {
        return Err(format!(
            "UCX {major}.{minor}.{release} at {} is too old: this transport needs UCX 1.12 or newer",
            found.libucp.display()
        ));
    }
    Ok(Ucp {
        table,
        status_string,
        origin: format!("{} ({})", found.libucp.display(), found.source),
        version: (major, minor, release),
        _ucs: ucs,
        _lib: lib,
    })
}

impl Ucp {
    /// UCX's own text for a status (`ucs_status_string`).
    pub fn describe(&self, status: Status) -> String {
        // SAFETY: `ucs_status_string` takes any status and returns a static C string.
        let text = unsafe { (self.status_string)(status) };
        if text.is_null() {
            return format!("status {status}");
        }
        // SAFETY: non-NULL, NUL-terminated, static (above).
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ucx_before_1_22_needs_registrations_brought() {
        assert!(ops_bring_registration((1, 16, 0)));
        assert!(ops_bring_registration((1, 21, 9)));
        assert!(!ops_bring_registration((1, 22, 0)));
        assert!(!ops_bring_registration((2, 0, 0)));
    }

    #[test]
    fn the_tcp_put_switch_is_named_as_each_version_matches_it() {
        assert_eq!(tcp_put_setting((1, 12, 0)), c"PUT_ENABLE");
        assert_eq!(tcp_put_setting((1, 17, 9)), c"PUT_ENABLE");
        assert_eq!(tcp_put_setting((1, 18, 0)), c"TCP_PUT_ENABLE");
        assert_eq!(tcp_put_setting((1, 22, 0)), c"TCP_PUT_ENABLE");
    }
}
