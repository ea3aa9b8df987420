//! One UCX worker (and its own context) per JS thread, over `ucp.rs`: listeners,
//! endpoints, tagged messages, memory maps and remote keys, each named by an id. The
//! worker is made with `UCS_THREAD_MODE_SINGLE` and is not `Send`: only its thread calls
//! it, and UCX runs every callback inside `ucp_worker_progress` (or a cancel) on that
//! thread. The callbacks only record what happened in the worker's [`Inbox`];
//! [`Worker::progress_events`] hands those records out.
//!
//! Memory: the caller keeps every buffer it passes alive and unmoved until the operation's
//! [`Completion`] comes out of `progress_events` (the binding holds its operands until then).

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_int, c_void, CString};
use std::net::SocketAddr;
use std::ptr;

use super::ucp::{self, Posted, RequestParam, Status, Ucp};

/// A failed UCX call: what was being done and UCX's status.
#[derive(Debug, Clone)]
pub struct UcxError {
    pub operation: &'static str,
    pub status: Status,
    pub text: String,
}

impl std::fmt::Display for UcxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.operation, self.text)
    }
}

/// An operation that ended: its id, UCX's status, and for a receive the length and tag
/// that came.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub id: u64,
    pub status: Status,
    pub length: u64,
    pub sender_tag: u64,
}

/// What `progress_events` reports.
#[derive(Debug, Clone)]
pub enum Event {
    Completed(Completion),
    /// A listener accepted a connection: the new endpoint's id.
    Accepted {
        listener: u64,
        endpoint: u64,
    },
    /// An accepted connection whose endpoint could not be made.
    AcceptFailed {
        listener: u64,
        error: UcxError,
    },
    /// UCX reported the endpoint failed (the peer died, the connection broke or was refused).
    EndpointFailed {
        endpoint: u64,
        status: Status,
    },
}

/// What the callbacks record, until `progress_events` takes it.
#[derive(Default)]
struct Inbox {
    events: Vec<Event>,
    /// Requests in flight by op id (removed by their callback, which frees them).
    requests: HashMap<u64, *mut c_void>,
    /// Connection requests by listener id, not yet made into endpoints.
    conn_requests: Vec<(u64, ucp::ConnRequest)>,
    /// Ops whose callback ran inside the call that posted them (a forced close can),
    /// before their request was recorded: it is freed already and must not be.
    early: std::collections::HashSet<u64>,
}

/// The callback argument of an operation: the inbox and the op id.
struct OpArg {
    inbox: *const RefCell<Inbox>,
    id: u64,
}

/// The callback argument of an endpoint's error handler or a listener's connection
/// handler: the inbox and the object's id (kept until the object is gone).
struct ObjArg {
    inbox: *const RefCell<Inbox>,
    id: u64,
}

unsafe extern "C" fn on_send(request: *mut c_void, status: Status, user_data: *mut c_void) {
    // SAFETY: `user_data` is the `OpArg` this module boxed for this request, handed over
    // once: this callback runs once per request.
    let arg = unsafe { Box::from_raw(user_data as *mut OpArg) };
    // SAFETY: the inbox outlives every request (the worker cancels and drains them before
    // it drops the inbox).
    let inbox = unsafe { &*arg.inbox };
    if let Ok(mut inbox) = inbox.try_borrow_mut() {
        if inbox.requests.remove(&arg.id).is_none() {
            inbox.early.insert(arg.id);
        }
        inbox.events.push(Event::Completed(Completion { id: arg.id, status, length: 0, sender_tag: 0 }));
    }
    if let Ok(ucp) = ucp::ucp() {
        // SAFETY: a request UCX handed to this callback, freed once.
        unsafe { (ucp.table.ucp_request_free)(request) };
    }
}

unsafe extern "C" fn on_recv(
    request: *mut c_void,
    status: Status,
    info: *const ucp::TagRecvInfo,
    user_data: *mut c_void,
) {
    // SAFETY: as `on_send`.
    let arg = unsafe { Box::from_raw(user_data as *mut OpArg) };
    // SAFETY: as `on_send`.
    let inbox = unsafe { &*arg.inbox };
    let (length, sender_tag) = if info.is_null() {
        (0, 0)
    } else {
        // SAFETY: a non-NULL `info` is valid during the callback.
        unsafe { ((*info).length as u64, (*info).sender_tag) }
    };
    if let Ok(mut inbox) = inbox.try_borrow_mut() {
        if inbox.requests.remove(&arg.id).is_none() {
            inbox.early.insert(arg.id);
        }
        inbox.events.push(Event::Completed(Completion { id: arg.id, status, length, sender_tag }));
    }
    if let Ok(ucp) = ucp::ucp() {
        // SAFETY: as `on_send`.
        unsafe { (ucp.table.ucp_request_free)(request) };
    }
}

unsafe extern "C" fn on_ep_error(arg: *mut c_void, _ep: ucp::Endpoint, status: Status) {
    // SAFETY: the endpoint's `ObjArg`, alive while the endpoint is (see `EndpointRec`).
    let arg = unsafe { &*(arg as *const ObjArg) };
    // SAFETY: the inbox outlives every endpoint.
    if let Ok(mut inbox) = unsafe { &*arg.inbox }.try_borrow_mut() {
        inbox.events.push(Event::EndpointFailed { endpoint: arg.id, status });
    }
}

unsafe extern "C" fn on_conn_request(request: ucp::ConnRequest, arg: *mut c_void) {
    // SAFETY: the listener's `ObjArg`, alive while the listener is.
    let arg = unsafe { &*(arg as *const ObjArg) };
    // SAFETY: the inbox outlives every listener.
    if let Ok(mut inbox) = unsafe { &*arg.inbox }.try_borrow_mut() {
        inbox.conn_requests.push((arg.id, request));
    }
}

struct EndpointRec {
    ep: ucp::Endpoint,
    _arg: Box<ObjArg>,
}

struct ListenerRec {
    listener: ucp::Listener,
    _arg: Box<ObjArg>,
}

/// A UCX worker of this thread (see the module documentation).
pub struct Worker {
    ucp: &'static Ucp,
    context: ucp::Context,
    worker: ucp::Worker,
    efd: c_int,
    inbox: Box<RefCell<Inbox>>,
    endpoints: HashMap<u64, EndpointRec>,
    listeners: HashMap<u64, ListenerRec>,
    maps: HashMap<u64, ucp::MemHandle>,
    rkeys: HashMap<u64, ucp::Rkey>,
    /// Whether sends and receives bring their own registration (`op_maps`; see
    /// [`ucp::ops_bring_registration`]).
    register_ops: bool,
    /// The registrations of operations in flight, by op id, unmapped as each completes.
    op_maps: HashMap<u64, ucp::MemHandle>,
    /// Error-handler arguments of endpoints being closed, by the close op: UCX may still
    /// call the handler until the close completes.
    closing: HashMap<u64, Box<ObjArg>>,
    next_id: u64,
    /// Whether the context was made with `UCP_FEATURE_RMA` (see [`Worker::rma`]).
    rma: bool,
}

/// A `sockaddr_in`/`sockaddr_in6` for `addr`.
fn sockaddr_of(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid `sockaddr_storage`.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(v4.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: `sockaddr_storage` is larger than and aligned for `sockaddr_in`.
            unsafe { ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
            (storage, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t)
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: v6.ip().octets() },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: as above, for `sockaddr_in6`.
            unsafe { ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
            (storage, std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t)
        }
    }
}

/// The address in a `sockaddr_storage` UCX filled.
fn socket_addr_from(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match storage.ss_family as c_int {
        libc::AF_INET => {
            // SAFETY: the family says it holds a `sockaddr_in`.
            let sin = unsafe { &*(storage as *const _ as *const libc::sockaddr_in) };
            let ip = std::net::Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::from((ip, u16::from_be(sin.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says it holds a `sockaddr_in6`.
            let sin6 = unsafe { &*(storage as *const _ as *const libc::sockaddr_in6) };
            let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::from((ip, u16::from_be(sin6.sin6_port))))
        }
        _ => None,
    }
}

/// What a worker that UCX (loaded) would not make says: UCX's text, and the `UCX_*`
/// variables of the environment, which are what is likely wrong (a transport or device
/// that is not here, a value UCX does not read).
fn config_error(ucp: &Ucp, operation: &str, status: Status) -> String {
    let set: Vec<String> = std::env::vars_os()
        .filter_map(|(name, value)| {
            let name = name.into_string().ok()?;
            name.starts_with("UCX_")
                .then(|| format!("{name}={}", value.to_string_lossy().chars().take(80).collect::<String>()))
        })
        .collect();
    let (a, b, c) = ucp.version;
    let settings = if set.is_empty() {
        "no UCX_* variable is set (a ucx.conf, or this machine's devices?)".to_string()
    } else {
        format!("check the UCX_* variables set: {}", set.join(", "))
    };
    format!(
        "UCX {a}.{b}.{c} is installed but refused its configuration ({operation}: {}): {settings}; `ucx_info -d` lists the transports and devices UCX can use",
        ucp.describe(status)
    )
}

/// UCX settings this transport changes from UCX's defaults, unless the environment sets
/// them (`UCX_<NAME>` wins): a dead peer is noticed within seconds, not minutes.
const DEFAULTS: &[(&str, &str)] = &[("KEEPALIVE_INTERVAL", "1s"), ("KEEPALIVE_NUM_EPS", "inf")];

impl Worker {
    fn fail(&self, operation: &'static str, status: Status) -> UcxError {
        UcxError { operation, status, text: self.ucp.describe(status) }
    }

    /// A context and a worker for this thread, with its event fd; one-sided access (RMA)
    /// only with `rma` (see [`Worker::rma`]).
    pub fn new(rma: bool) -> Result<Worker, String> {
        let ucp = ucp::ucp().map_err(str::to_string)?;
        let t = &ucp.table;
        let mut config: ucp::Config = ptr::null_mut();
        // SAFETY: NULL prefix and file: UCX's defaults and `UCX_*` variables.
        let status = unsafe { (t.ucp_config_read)(ptr::null(), ptr::null(), &mut config) };
        if status != ucp::UCS_OK {
            return Err(config_error(ucp, "ucp_config_read", status));
        }
        for (name, value) in DEFAULTS {
            if std::env::var_os(format!("UCX_{name}")).is_none() {
                let (Ok(n), Ok(v)) = (CString::new(*name), CString::new(*value)) else { continue };
                // SAFETY: a live config and two C strings. A UCX that lacks the setting
                // says so, and keeps its default.
                let _ = unsafe { (t.ucp_config_modify)(config, n.as_ptr(), v.as_ptr()) };
            }
        }
        if !rma {
            // UCX's TCP transport writes a put request's bytes at whatever address it names
            // (UCP's RMA feature does not gate it), and with it on, a peer's put through a
            // key it made up lands here. Off, UCX does not offer TCP puts to peers: their
            // puts go as UCP messages this context has no handler for, and are dropped.
            // (Rendezvous sends then move large messages as fragments instead.)
            let setting = ucp::tcp_put_setting(ucp.version);
            // SAFETY: a live config and two C strings.
            let status = unsafe { (t.ucp_config_modify)(config, setting.as_ptr(), c"n".as_ptr()) };
            // A UCX without its TCP transport has no such setting, and nothing to turn off.
            if status != ucp::UCS_OK && status != ucp::UCS_ERR_NO_ELEM {
                // SAFETY: the config read above, released once.
                unsafe { (t.ucp_config_release)(config) };
                return Err(format!("turning UCX's TCP puts off (UCX_TCP_PUT_ENABLE=n): {}", ucp.describe(status)));
            }
        }
        let name = c"dpctl-memory";
        let params = ucp::Params {
            field_mask: ucp::UCP_PARAM_FIELD_FEATURES | ucp::UCP_PARAM_FIELD_NAME,
            features: ucp::UCP_FEATURE_TAG | ucp::UCP_FEATURE_WAKEUP | if rma { ucp::UCP_FEATURE_RMA } else { 0 },
            request_size: 0,
            request_init: None,
            request_cleanup: None,
            tag_sender_mask: 0,
            mt_workers_shared: 0,
            estimated_num_eps: 0,
            estimated_num_ppn: 0,
            name: name.as_ptr(),
        };
        let mut context: ucp::Context = ptr::null_mut();
        let (major, minor, _) = ucp.version;
        // SAFETY: valid params and config; the API version is the library's own, so it
        // reads the structs as this module lays them out (fields past the mask unset).
        let status = unsafe { (t.ucp_init_version)(major, minor, &params, config, &mut context) };
        // SAFETY: the config was read above and is released once.
        unsafe { (t.ucp_config_release)(config) };
        if status != ucp::UCS_OK {
            return Err(config_error(ucp, "ucp_init", status));
        }
        let wparams = ucp::WorkerParams {
            field_mask: ucp::UCP_WORKER_PARAM_FIELD_THREAD_MODE,
            thread_mode: ucp::UCS_THREAD_MODE_SINGLE,
            cpu_mask: [0; 16],
            events: 0,
            user_data: ptr::null_mut(),
            event_fd: -1,
            flags: 0,
        };
        let mut worker: ucp::Worker = ptr::null_mut();
        // SAFETY: a live context and valid params.
        let status = unsafe { (t.ucp_worker_create)(context, &wparams, &mut worker) };
        if status != ucp::UCS_OK {
            // SAFETY: the context made above, cleaned up once.
            unsafe { (t.ucp_cleanup)(context) };
            return Err(config_error(ucp, "ucp_worker_create", status));
        }
        let mut efd: c_int = -1;
        // SAFETY: a live worker of a context made with UCP_FEATURE_WAKEUP.
        let status = unsafe { (t.ucp_worker_get_efd)(worker, &mut efd) };
        if status != ucp::UCS_OK {
            // SAFETY: destroyed once, worker first.
            unsafe {
                (t.ucp_worker_destroy)(worker);
                (t.ucp_cleanup)(context);
            }
            return Err(format!("ucp_worker_get_efd: {}", ucp.describe(status)));
        }
        Ok(Worker {
            ucp,
            context,
            worker,
            efd,
            inbox: Box::default(),
            endpoints: HashMap::new(),
            listeners: HashMap::new(),
            maps: HashMap::new(),
            rkeys: HashMap::new(),
            register_ops: ucp::ops_bring_registration(ucp.version),
            op_maps: HashMap::new(),
            closing: HashMap::new(),
            next_id: 1,
            rma,
        })
    }

    /// Whether one-sided access (maps, remote keys, put/get) is on. Off, the context has no
    /// `UCP_FEATURE_RMA` and TCP's put handler is off (`TCP_PUT_ENABLE=n`), so a peer's
    /// put or get through a key it made up reaches nothing here.
    pub fn rma(&self) -> bool {
        self.rma
    }

    /// The UCX in use: its version and where it was loaded from.
    pub fn describe_library(&self) -> String {
        let (a, b, c) = self.ucp.version;
        format!("UCX {a}.{b}.{c} from {}", self.ucp.origin)
    }

    /// Whether this UCX moves CUDA device memory (its CUDA transports are there and loaded).
    pub fn supports_cuda_memory(&self) -> bool {
        // SAFETY: all-zero is a valid attr; a live context.
        let mut attr: ucp::ContextAttr = unsafe { std::mem::zeroed() };
        attr.field_mask = ucp::UCP_ATTR_FIELD_MEMORY_TYPES;
        // SAFETY: a live context and an attr it fills.
        let status = unsafe { (self.ucp.table.ucp_context_query)(self.context, &mut attr) };
        status == ucp::UCS_OK && attr.memory_types & ucp::UCS_MEMORY_TYPE_CUDA_BIT != 0
    }

    /// The worker's event fd: readable when `progress_events` has work (once armed).
    pub fn event_fd(&self) -> c_int {
        self.efd
    }

    fn id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Progresses until UCX has nothing more or something happened, makes endpoints of
    /// accepted connections, and returns what happened (a caller that got something
    /// calls again for the rest: [`Worker::arm`] says busy while UCX has work left). The
    /// event fd is left as it is: [`Worker::arm`] before waiting on it (a caller that
    /// keeps progressing has no use for its wake-ups, and on some transports an armed
    /// worker costs the peer a signal per message).
    pub fn progress_events(&mut self) -> Vec<Event> {
        let t = &self.ucp.table;
        // Stopping at the first completion hands it out a poll sooner (one more poll of
        // the sockets, empty, would come before it otherwise).
        // SAFETY: a live worker, on its own thread.
        while unsafe { (t.ucp_worker_progress)(self.worker) } != 0 {
            let inbox = self.inbox.borrow();
            if !inbox.events.is_empty() || !inbox.conn_requests.is_empty() {
                break;
            }
        }
        let mut events = Vec::new();
        let conn_requests = std::mem::take(&mut self.inbox.borrow_mut().conn_requests);
        for (listener, request) in conn_requests {
            match self.accept(request) {
                Ok(endpoint) => events.push(Event::Accepted { listener, endpoint }),
                Err(error) => events.push(Event::AcceptFailed { listener, error }),
            }
        }
        events.append(&mut self.inbox.borrow_mut().events);
        for event in &events {
            if let Event::Completed(done) = event {
                self.retire(done.id);
            }
        }
        events
    }

    /// What an op held until it completed: a closing endpoint's handler argument, the
    /// op's registration.
    fn retire(&mut self, op: u64) {
        self.closing.remove(&op);
        if let Some(memh) = self.op_maps.remove(&op) {
            // SAFETY: a live handle of this context that only this op used, and it is done.
            unsafe { (self.ucp.table.ucp_mem_unmap)(self.context, memh) };
        }
    }

    /// Arms the event fd: true when armed (it wakes the loop at the next event), false
    /// when events came in meanwhile (progress again first).
    pub fn arm(&mut self) -> bool {
        // SAFETY: a live worker, on its own thread.
        unsafe { (self.ucp.table.ucp_worker_arm)(self.worker) != ucp::UCS_ERR_BUSY }
    }

    /// The completion of `op` if it completed inside the call that posted it (UCX ran
    /// its callback there): taken out of what `progress_events` would report. Only a
    /// success is taken; a failure comes out of `progress_events` as usual.
    pub fn take_completed(&mut self, op: u64) -> Option<Completion> {
        let mut inbox = self.inbox.borrow_mut();
        let at = inbox
            .events
            .iter()
            .position(|e| matches!(e, Event::Completed(done) if done.id == op && done.status == ucp::UCS_OK))?;
        let taken = inbox.events.remove(at);
        drop(inbox);
        match taken {
            Event::Completed(done) => {
                self.retire(done.id);
                Some(done)
            }
            _ => None,
        }
    }

    /// An endpoint's parameters, with UCX's peer failure handling. UCX's shared-memory
    /// transports (posix, sysv) cannot report a peer's failure, so UCX leaves them out of
    /// such an endpoint: two processes of one host talk over TCP. Without it a dead peer
    /// hangs its operations, and UCX's forced close and its close handshake misbehave
    /// (tried: hangs, and a crash at exit), so every endpoint has it.
    fn endpoint_params(&self, arg: &ObjArg) -> ucp::EpParams {
        ucp::EpParams {
            field_mask: ucp::UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | ucp::UCP_EP_PARAM_FIELD_ERR_HANDLER,
            address: ptr::null(),
            err_mode: ucp::UCP_ERR_HANDLING_MODE_PEER,
            err_cb: Some(on_ep_error),
            err_arg: arg as *const ObjArg as *mut c_void,
            user_data: ptr::null_mut(),
            flags: 0,
            sockaddr: ucp::SockAddr { addr: ptr::null(), addrlen: 0 },
            conn_request: ptr::null_mut(),
        }
    }

    fn accept(&mut self, request: ucp::ConnRequest) -> Result<u64, UcxError> {
        let id = self.id();
        let arg = Box::new(ObjArg { inbox: &*self.inbox, id });
        let mut params = self.endpoint_params(&arg);
        params.field_mask |= ucp::UCP_EP_PARAM_FIELD_CONN_REQUEST;
        params.conn_request = request;
        let mut ep: ucp::Endpoint = ptr::null_mut();
        // SAFETY: a live worker, a connection request its listener handed over, params
        // whose error argument lives as long as the endpoint record.
        let status = unsafe { (self.ucp.table.ucp_ep_create)(self.worker, &params, &mut ep) };
        if status != ucp::UCS_OK {
            return Err(self.fail("accepting a connection (ucp_ep_create)", status));
        }
        self.endpoints.insert(id, EndpointRec { ep, _arg: arg });
        Ok(id)
    }

    /// Listens on `addr` (port 0: any free port); returns the listener's id and the
    /// address it listens on.
    pub fn listen(&mut self, addr: SocketAddr) -> Result<(u64, SocketAddr), UcxError> {
        let id = self.id();
        let arg = Box::new(ObjArg { inbox: &*self.inbox, id });
        let (storage, len) = sockaddr_of(&addr);
        let params = ucp::ListenerParams {
            field_mask: ucp::UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | ucp::UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
            sockaddr: ucp::SockAddr { addr: &storage as *const _ as *const libc::sockaddr, addrlen: len },
            accept_cb: None,
            accept_arg: ptr::null_mut(),
            conn_cb: Some(on_conn_request),
            conn_arg: &*arg as *const ObjArg as *mut c_void,
        };
        let mut listener: ucp::Listener = ptr::null_mut();
        // SAFETY: a live worker; the sockaddr outlives the call; the handler's argument
        // lives as long as the listener record.
        let status = unsafe { (self.ucp.table.ucp_listener_create)(self.worker, &params, &mut listener) };
        if status != ucp::UCS_OK {
            return Err(self.fail("ucp_listener_create", status));
        }
        // SAFETY: all-zero is a valid attr; a live listener.
        let mut attr: ucp::ListenerAttr = unsafe { std::mem::zeroed() };
        attr.field_mask = ucp::UCP_LISTENER_ATTR_FIELD_SOCKADDR;
        // SAFETY: a live listener and an attr it fills.
        let status = unsafe { (self.ucp.table.ucp_listener_query)(listener, &mut attr) };
        let bound = if status == ucp::UCS_OK { socket_addr_from(&attr.sockaddr).unwrap_or(addr) } else { addr };
        self.listeners.insert(id, ListenerRec { listener, _arg: arg });
        Ok((id, bound))
    }

    /// Stops a listener (connections it accepted stay). Connection requests it had not
    /// handed over yet are rejected.
    pub fn close_listener(&mut self, id: u64) {
        let Some(rec) = self.listeners.remove(&id) else { return };
        let pending: Vec<_> = {
            let mut inbox = self.inbox.borrow_mut();
            let (mine, others) = std::mem::take(&mut inbox.conn_requests).into_iter().partition(|(l, _)| *l == id);
            inbox.conn_requests = others;
            mine
        };
        for (_, request) in pending {
            // SAFETY: a request of this live listener, not yet used.
            unsafe { (self.ucp.table.ucp_listener_reject)(rec.listener, request) };
        }
        // SAFETY: a live listener, destroyed once; its argument is dropped after.
        unsafe { (self.ucp.table.ucp_listener_destroy)(rec.listener) };
    }

    /// Connects to `addr`. The endpoint exists at once; the returned op (a flush) completes
    /// when the connection is up, or fails when it cannot be made.
    pub fn connect(&mut self, addr: SocketAddr) -> Result<(u64, u64), UcxError> {
        let id = self.id();
        let arg = Box::new(ObjArg { inbox: &*self.inbox, id });
        let (storage, len) = sockaddr_of(&addr);
        let mut params = self.endpoint_params(&arg);
        params.field_mask |= ucp::UCP_EP_PARAM_FIELD_SOCK_ADDR | ucp::UCP_EP_PARAM_FIELD_FLAGS;
        params.flags = ucp::UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
        params.sockaddr = ucp::SockAddr { addr: &storage as *const _ as *const libc::sockaddr, addrlen: len };
        let mut ep: ucp::Endpoint = ptr::null_mut();
        // SAFETY: as `accept`; the sockaddr outlives the call (UCX copies it).
        let status = unsafe { (self.ucp.table.ucp_ep_create)(self.worker, &params, &mut ep) };
        if status != ucp::UCS_OK {
            return Err(self.fail("ucp_ep_create", status));
        }
        self.endpoints.insert(id, EndpointRec { ep, _arg: arg });
        match self.flush(id) {
            Ok(op) => Ok((id, op)),
            Err(e) => {
                self.destroy_endpoint(id, true);
                Err(e)
            }
        }
    }

    fn ep(&self, endpoint: u64) -> Result<ucp::Endpoint, UcxError> {
        self.endpoints.get(&endpoint).map(|rec| rec.ep).ok_or(UcxError {
            operation: "endpoint",
            status: ucp::UCS_ERR_NOT_CONNECTED,
            text: "the endpoint is closed".into(),
        })
    }

    /// Posts an operation: `post` gets the request parameters and returns UCX's status
    /// pointer; the op id is returned, its completion comes out of `progress_events`.
    fn post(
        &mut self,
        operation: &'static str,
        callback: *const c_void,
        post: impl FnOnce(&ucp::Table, &RequestParam) -> ucp::StatusPtr,
    ) -> Result<u64, UcxError> {
        self.post_with(operation, RequestParam::with_callback, None, callback, post)
    }

    /// [`Worker::post`] with the request's parameters made by `param` from the callback
    /// and its argument, and the registration `memh` of its buffer if it brings one (the
    /// op owns it from here: it is unmapped when the op is done).
    fn post_with(
        &mut self,
        operation: &'static str,
        param: fn(*const c_void, *mut c_void) -> RequestParam,
        memh: Option<ucp::MemHandle>,
        callback: *const c_void,
        post: impl FnOnce(&ucp::Table, &RequestParam) -> ucp::StatusPtr,
    ) -> Result<u64, UcxError> {
        let id = self.id();
        let arg = Box::into_raw(Box::new(OpArg { inbox: &*self.inbox, id }));
        let mut param = param(callback, arg as *mut c_void);
        if let Some(memh) = memh {
            param.op_attr_mask |= ucp::UCP_OP_ATTR_FIELD_MEMH;
            param.memh = memh;
            // Recorded first: the op may complete inside the call that posts it.
            self.op_maps.insert(id, memh);
        }
        match Posted::of(post(&self.ucp.table, &param)) {
            Posted::Request(request) => {
                let mut inbox = self.inbox.borrow_mut();
                if !inbox.early.remove(&id) {
                    inbox.requests.insert(id, request);
                }
                Ok(id)
            }
            outcome => {
                // SAFETY: no callback runs for an op that did not start, nor for one done
                // at once (UCX calls none then): the argument is still ours.
                drop(unsafe { Box::from_raw(arg) });
                match outcome {
                    Posted::Failed(status) => {
                        self.retire(id);
                        Err(self.fail(operation, status))
                    }
                    _ => {
                        self.inbox.borrow_mut().events.push(Event::Completed(Completion {
                            id,
                            status: ucp::UCS_OK,
                            length: 0,
                            sender_tag: 0,
                        }));
                        Ok(id)
                    }
                }
            }
        }
    }

    /// Waits (as an op) for every operation posted on the endpoint to complete remotely.
    pub fn flush(&mut self, endpoint: u64) -> Result<u64, UcxError> {
        let ep = self.ep(endpoint)?;
        // SAFETY: a live endpoint; the param is valid for the call.
        self.post("ucp_ep_flush_nbx", on_send as *const c_void, |t, p| unsafe { (t.ucp_ep_flush_nbx)(ep, p) })
    }

    /// Sends `len` bytes at `address` with `tag`.
    ///
    /// # Safety
    /// The bytes stay valid and unchanged until the op completes.
    pub unsafe fn send(&mut self, endpoint: u64, address: u64, len: usize, tag: u64) -> Result<u64, UcxError> {
        let ep = self.ep(endpoint)?;
        // SAFETY: the caller's contract covers the op, and so the registration.
        let memh = unsafe { self.register_for_op(address, len) };
        // SAFETY: the caller's contract; a live endpoint.
        self.post_with("ucp_tag_send_nbx", RequestParam::with_callback, memh, on_send as *const c_void, |t, p| unsafe {
            (t.ucp_tag_send_nbx)(ep, address as *const c_void, len, tag, p)
        })
    }

    /// The registration a send or receive of `len` bytes at `address` brings, where it
    /// brings one (`register_ops`). None where it does not, or where the registration
    /// failed: UCX then registers the buffer itself, as it would anyway.
    ///
    /// # Safety
    /// The bytes stay allocated until the op the registration is handed to completes.
    unsafe fn register_for_op(&self, address: u64, len: usize) -> Option<ucp::MemHandle> {
        if !self.register_ops || len == 0 {
            return None;
        }
        // SAFETY: the caller's contract; the handle goes to the op, unmapped by `retire`.
        unsafe { self.mem_map(address, len) }.ok()
    }

    /// Receives a message whose tag matches `tag` under `mask` into `len` bytes at `address`.
    ///
    /// # Safety
    /// The bytes stay valid, and unused by anything else, until the op completes.
    pub unsafe fn recv(&mut self, address: u64, len: usize, tag: u64, mask: u64) -> Result<u64, UcxError> {
        let worker = self.worker;
        // SAFETY: the caller's contract covers the op, and so the registration.
        let memh = unsafe { self.register_for_op(address, len) };
        // SAFETY: the caller's contract; a live worker.
        self.post_with("ucp_tag_recv_nbx", RequestParam::with_callback, memh, on_recv as *const c_void, |t, p| unsafe {
            (t.ucp_tag_recv_nbx)(worker, address as *mut c_void, len, tag, mask, p)
        })
    }

    /// Writes `len` bytes at `address` to `remote` through a remote key.
    ///
    /// # Safety
    /// As `send`.
    pub unsafe fn put(
        &mut self,
        endpoint: u64,
        address: u64,
        len: usize,
        remote: u64,
        rkey: u64,
    ) -> Result<u64, UcxError> {
        let ep = self.ep(endpoint)?;
        let key = self.rkey(rkey)?;
        // A put may complete at once: UCX 1.16's protocols drop a put that is told not to
        // (`NO_IMM_CMPL`) without a word, its request reporting success.
        // SAFETY: the caller's contract; a live endpoint and key.
        self.post_with(
            "ucp_put_nbx",
            RequestParam::with_callback_or_at_once,
            None,
            on_send as *const c_void,
            |t, p| unsafe { (t.ucp_put_nbx)(ep, address as *const c_void, len, remote, key, p) },
        )
    }

    /// Reads `len` bytes at `remote` into `address` through a remote key.
    ///
    /// # Safety
    /// As `recv`.
    pub unsafe fn get(
        &mut self,
        endpoint: u64,
        address: u64,
        len: usize,
        remote: u64,
        rkey: u64,
    ) -> Result<u64, UcxError> {
        let ep = self.ep(endpoint)?;
        let key = self.rkey(rkey)?;
        // SAFETY: the caller's contract; a live endpoint and key.
        self.post("ucp_get_nbx", on_send as *const c_void, |t, p| unsafe {
            (t.ucp_get_nbx)(ep, address as *mut c_void, len, remote, key, p)
        })
    }

    /// Cancels an operation still in flight (a receive); its completion comes with
    /// `UCS_ERR_CANCELED`. Nothing for an op already done.
    pub fn cancel(&mut self, op: u64) {
        let request = self.inbox.borrow().requests.get(&op).copied();
        if let Some(request) = request {
            // SAFETY: a request in flight (its callback, which frees it, has not run: it
            // would have removed it); the callback may run inside this call.
            unsafe { (self.ucp.table.ucp_request_cancel)(self.worker, request) };
        }
    }

    /// Closes an endpoint: flushing first (an op that completes when it is closed), or at
    /// once (`force`, after a failure). Its operations in flight complete with errors.
    pub fn close_endpoint(&mut self, endpoint: u64, force: bool) -> Option<u64> {
        let rec = self.endpoints.remove(&endpoint)?;
        let flags = if force { ucp::UCP_EP_CLOSE_FLAG_FORCE } else { 0 };
        let ep = rec.ep;
        let result = self.post("ucp_ep_close_nbx", on_send as *const c_void, |t, p| {
            let mut param = RequestParam::with_callback(p.cb, p.user_data);
            param.op_attr_mask |= ucp::UCP_OP_ATTR_FIELD_FLAGS;
            param.flags = flags;
            // SAFETY: a live endpoint, closed once (its record is gone).
            unsafe { (t.ucp_ep_close_nbx)(ep, &param) }
        });
        // The error handler's argument must outlive the endpoint: UCX may still report a
        // failure of a closing endpoint until the close completes.
        match result {
            Ok(op) => {
                self.closing.insert(op, rec._arg);
                Some(op)
            }
            Err(_) => None,
        }
    }

    fn destroy_endpoint(&mut self, endpoint: u64, force: bool) {
        let _ = self.close_endpoint(endpoint, force);
    }

    /// Whether the endpoint is open.
    pub fn has_endpoint(&self, endpoint: u64) -> bool {
        self.endpoints.contains_key(&endpoint)
    }

    /// A registration of `len` bytes at `address` (`ucp_mem_map`), the caller's to unmap.
    ///
    /// # Safety
    /// The memory stays allocated until the handle is unmapped.
    unsafe fn mem_map(&self, address: u64, len: usize) -> Result<ucp::MemHandle, UcxError> {
        let params = ucp::MemMapParams {
            field_mask: ucp::UCP_MEM_MAP_PARAM_FIELD_ADDRESS | ucp::UCP_MEM_MAP_PARAM_FIELD_LENGTH,
            address: address as *mut c_void,
            length: len,
            flags: 0,
            prot: 0,
            memory_type: 0,
            exported_memh_buffer: ptr::null(),
        };
        let mut memh: ucp::MemHandle = ptr::null_mut();
        // SAFETY: the caller's contract; a live context.
        let status = unsafe { (self.ucp.table.ucp_mem_map)(self.context, &params, &mut memh) };
        if status != ucp::UCS_OK {
            return Err(self.fail("ucp_mem_map", status));
        }
        Ok(memh)
    }

    /// Maps (registers) `len` bytes at `address` for remote access; returns the map's id
    /// and its packed remote key.
    ///
    /// # Safety
    /// The memory stays allocated until `unmap`.
    pub unsafe fn map(&mut self, address: u64, len: usize) -> Result<(u64, Vec<u8>), UcxError> {
        // SAFETY: the caller's contract.
        let memh = unsafe { self.mem_map(address, len) }?;
        let t = &self.ucp.table;
        let mut buffer: *mut c_void = ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: a live context and the handle just made.
        let status = unsafe { (t.ucp_rkey_pack)(self.context, memh, &mut buffer, &mut size) };
        if status != ucp::UCS_OK {
            // SAFETY: unmapped once.
            unsafe { (t.ucp_mem_unmap)(self.context, memh) };
            return Err(self.fail("ucp_rkey_pack", status));
        }
        // SAFETY: UCX's buffer of `size` bytes, copied, then released once.
        let packed = unsafe { std::slice::from_raw_parts(buffer as *const u8, size) }.to_vec();
        // SAFETY: UCX's packed-key buffer, released once (copied above).
        unsafe { (t.ucp_rkey_buffer_release)(buffer) };
        let id = self.id();
        self.maps.insert(id, memh);
        Ok((id, packed))
    }

    /// Unmaps a map: remote keys of it no longer reach the memory through a transport that
    /// checks keys.
    pub fn unmap(&mut self, id: u64) {
        if let Some(memh) = self.maps.remove(&id) {
            // SAFETY: a live handle of this context, unmapped once.
            unsafe { (self.ucp.table.ucp_mem_unmap)(self.context, memh) };
        }
    }

    /// Unpacks a packed remote key for use over `endpoint`.
    pub fn unpack_rkey(&mut self, endpoint: u64, packed: &[u8]) -> Result<u64, UcxError> {
        let ep = self.ep(endpoint)?;
        let mut rkey: ucp::Rkey = ptr::null_mut();
        // SAFETY: a live endpoint and a buffer of the key's bytes (UCX checks its contents).
        let status = unsafe { (self.ucp.table.ucp_ep_rkey_unpack)(ep, packed.as_ptr() as *const c_void, &mut rkey) };
        if status != ucp::UCS_OK {
            return Err(self.fail("ucp_ep_rkey_unpack", status));
        }
        let id = self.id();
        self.rkeys.insert(id, rkey);
        Ok(id)
    }

    fn rkey(&self, id: u64) -> Result<ucp::Rkey, UcxError> {
        self.rkeys.get(&id).copied().ok_or(UcxError {
            operation: "remote key",
            status: ucp::UCS_ERR_INVALID_PARAM,
            text: "the remote key was destroyed".into(),
        })
    }

    /// Destroys an unpacked remote key.
    pub fn destroy_rkey(&mut self, id: u64) {
        if let Some(rkey) = self.rkeys.remove(&id) {
            // SAFETY: a live key, destroyed once.
            unsafe { (self.ucp.table.ucp_rkey_destroy)(rkey) };
        }
    }

    /// Operations in flight.
    pub fn in_flight(&self) -> usize {
        self.inbox.borrow().requests.len()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let t = &self.ucp.table;
        let listeners: Vec<u64> = self.listeners.keys().copied().collect();
        for id in listeners {
            self.close_listener(id);
        }
        let ops: Vec<u64> = self.inbox.borrow().requests.keys().copied().collect();
        for op in ops {
            self.cancel(op);
        }
        for (_, rkey) in self.rkeys.drain() {
            // SAFETY: live keys, destroyed once.
            unsafe { (t.ucp_rkey_destroy)(rkey) };
        }
        let endpoints: Vec<u64> = self.endpoints.keys().copied().collect();
        for id in endpoints {
            let _ = self.close_endpoint(id, true);
        }
        // Let the forced closes and cancels call back, boundedly.
        for _ in 0..1000 {
            // SAFETY: a live worker.
            if unsafe { (t.ucp_worker_progress)(self.worker) } == 0 && self.inbox.borrow().requests.is_empty() {
                break;
            }
        }
        for (_, memh) in self.maps.drain() {
            // SAFETY: live handles of this context, unmapped once.
            unsafe { (t.ucp_mem_unmap)(self.context, memh) };
        }
        // Requests still in flight are released by the worker's destruction; their
        // callbacks never run, so their arguments are leaked rather than freed twice.
        self.inbox.borrow_mut().requests.clear();
        // SAFETY: destroyed once, worker before its context; the registrations of ops
        // still in flight after the worker (which releases those ops), unmapped once.
        unsafe {
            (t.ucp_worker_destroy)(self.worker);
            for (_, memh) in self.op_maps.drain() {
                (t.ucp_mem_unmap)(self.context, memh);
            }
            (t.ucp_cleanup)(self.context);
        }
    }
}
