//! The UCX transport's binding: one worker per JS thread (`provider::ucx::Worker`), its
//! event fd watched in the thread's loop (`js::uv`), and the functions `lib/transport.js`
//! calls. Operations return op ids at once, or say they completed inside the call (a small
//! send, a receive of a message that had come): those settle at once, without a turn of
//! the loop. The others' completions come out of `ucxProgress`, which the JS drain calls
//! when the fd wakes it, after posting, and on each turn of the loop while it spins
//! (`ucxProgress`). Each op holds its operands here (`memory::transport::InFlightBook`)
//! until UCX has completed it: memory objects by their allocation, `SharedArrayBuffer`s
//! and USM-backed views directly, plain `ArrayBuffer`s (which JS may detach or transfer
//! meanwhile) through a bounce buffer of the op's own, copied out when a receive completes.
//!
//! Wrong thread: every call names its worker by a token; a token of another thread's
//! worker is `ERR_UCX_WRONG_THREAD`.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use napi::bindgen_prelude::{Buffer, Float64Array, Unknown};
use napi::Env;
use napi_derive::napi;

use crate::error::MemoryError;
use crate::host::Scratch;
use crate::js::async_ops::HostSide;
use crate::js::errors::OrThrow;
use crate::js::ffi::{self, HostBytes, TaskRef};
use crate::js::json;
use crate::js::uv::FdWatch;
use crate::memory::transport::{self as policy, InFlight, InFlightBook, OpKind, RemoteKey};
use crate::memory::usm::UsmMemory;
use crate::provider::ucx::{self, Event, UcxError, Worker};
use crate::runtime::ReadBytes;

/// What an operation holds until it completes (only to keep it: the fields are never read).
#[allow(dead_code)]
enum Held {
    /// Memory of ours: its allocation.
    Memory(UsmMemory),
    /// JS memory UCX may use directly (`HostSide` holds what keeps it: the
    /// `SharedArrayBuffer`, or the allocation under a USM-backed view).
    Direct(HostSide),
    /// A receive into a plain `ArrayBuffer`: the op's own buffer, copied into the JS
    /// value when the receive completes.
    BounceIn(Scratch, TaskRef),
    /// A send or put from a plain `ArrayBuffer`: the op's own copy of its bytes.
    BounceOut(Scratch),
    /// Nothing (connect, flush, close).
    Nothing,
}

struct EndpointInfo {
    peer: String,
    /// The status UCX reported the endpoint failed with.
    failed: Option<i32>,
    /// Closed by this side (`close()`), or after a failure.
    closed: bool,
    /// JS closed it after a failure had: the record goes with the close UCX completes.
    released: bool,
}

struct State {
    token: u64,
    // Dropped before the worker: the fd is the worker's.
    watch: FdWatch,
    worker: Worker,
    book: InFlightBook<Held>,
    endpoints: HashMap<u64, EndpointInfo>,
    rkeys: HashMap<u64, (u64, RemoteKey)>,
    /// Memory mapped for remote access, held until unmapped.
    maps: HashMap<u64, (UsmMemory, Vec<u8>)>,
    /// Memory unmapped while endpoints were open, held (neither freed nor reused) until
    /// each of them has closed: a peer that had the key may still write it meanwhile
    /// (UCX's software transports check no key), and the memory must not be another
    /// allocation's by then. Dropped after the worker, so nothing writes it as it goes.
    unmapped: Vec<(UsmMemory, Vec<u64>)>,
    listeners: HashSet<u64>,
    /// The spin window: while operations are in flight and the worker did something this
    /// recently, `ucxProgress` keeps progressing instead of arming the fd (zero: never).
    spin: Duration,
    /// When the worker last did something (an operation posted or completed).
    busy_at: Instant,
    /// What happened and is not handed to JS yet (more than its records array holds).
    backlog: VecDeque<Record>,
    /// The objects of the `Event` records handed to JS, for `ucxNextEvent`, in order.
    events: VecDeque<String>,
}

/// One thing that happened, as `ucxProgress` hands it to JS.
enum Record {
    /// An operation that completed successfully: its op id, length and the sender's tag.
    Done { op: u64, length: u64, tag: u64 },
    /// Anything else (a failed operation, an accepted connection, a failed endpoint), as
    /// the JSON object `ucxNextEvent` returns.
    Event(String),
}

/// The slots of one record in the array `ucxProgress` fills: `[kind, op, length, tagHi,
/// tagLo]`, kind `RECORD_DONE` or `RECORD_EVENT` (its object from `ucxNextEvent`; the
/// other slots unused).
const RECORD_SLOTS: usize = 5;
const RECORD_DONE: f64 = 1.0;
const RECORD_EVENT: f64 = 2.0;

/// The longest one `ucxProgress` spins before it lets the event loop take a turn (and
/// JS asks again): what the spin may delay other work of the loop by.
const SPIN_SLICE: Duration = Duration::from_micros(50);

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
}

/// Tokens of the live workers of every thread.
static TOKENS: Mutex<Vec<u64>> = Mutex::new(Vec::new());
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

fn ucx_error(err: &UcxError) -> MemoryError {
    MemoryError::Ucx { operation: err.operation.into(), message: err.text.clone() }
}

/// Runs `f` over this thread's state for `token`.
fn with_state<R>(env: &Env, token: f64, f: impl FnOnce(&mut State) -> Result<R, MemoryError>) -> napi::Result<R> {
    let result = STATE.with(|cell| {
        let Ok(mut guard) = cell.try_borrow_mut() else { return Err(MemoryError::Busy) };
        match guard.as_mut() {
            Some(state) if state.token as f64 == token => f(state),
            _ => {
                let live = TOKENS.lock().map(|tokens| tokens.iter().any(|t| *t as f64 == token)).unwrap_or(false);
                Err(if live {
                    MemoryError::UcxWrongThread { what: "worker".into() }
                } else {
                    MemoryError::UcxEndpointClosed { what: "worker".into() }
                })
            }
        }
    });
    result.or_throw(env)
}

impl State {
    /// One-sided access is opt-in (`Worker::rma`).
    fn rma(&self) -> Result<(), MemoryError> {
        if self.worker.rma() {
            Ok(())
        } else {
            Err(MemoryError::UcxRmaDisabled)
        }
    }

    fn endpoint(&self, id: u64) -> Result<&EndpointInfo, MemoryError> {
        match self.endpoints.get(&id) {
            Some(info) if !info.closed && self.worker.has_endpoint(id) => Ok(info),
            Some(info) if info.failed.is_some() => Err(MemoryError::UcxPeerFailed {
                operation: format!("an operation with {}", info.peer),
                message: "the endpoint failed earlier".into(),
            }),
            _ => Err(MemoryError::UcxEndpointClosed { what: "endpoint".into() }),
        }
    }

    fn start(&mut self, id: u64, kind: OpKind, endpoint: u64, nbytes: u64, held: Held) -> u64 {
        self.book.start(id, InFlight { kind, endpoint, nbytes, held });
        self.watch.set_active(true);
        self.busy_at = Instant::now();
        id
    }

    /// The op just posted, if UCX completed it inside the call (a small send, a receive of
    /// a message that had come, a put): taken out of the book, with its length and what
    /// it held, so that the caller settles it at once instead of through `ucxProgress`.
    fn completed_at_once(&mut self, op: u64) -> Option<(u64, Held)> {
        let done = self.worker.take_completed(op)?;
        let rec = self.book.finish(op)?;
        self.update_activity();
        Some((if rec.kind == OpKind::Recv { done.length } else { rec.nbytes }, rec.held))
    }

    /// Lets go of unmapped memory whose endpoints have all closed (their close completed).
    fn release_unmapped(&mut self) {
        if self.unmapped.is_empty() {
            return;
        }
        let (worker, book) = (&self.worker, &self.book);
        for (_, endpoints) in self.unmapped.iter_mut() {
            endpoints.retain(|ep| worker.has_endpoint(*ep) || !book.of_endpoint(*ep, OpKind::Close).is_empty());
        }
        self.unmapped.retain(|(_, endpoints)| !endpoints.is_empty());
    }

    /// Keeps the loop alive while anything is pending or a listener is open.
    fn update_activity(&mut self) {
        let active = !self.book.is_empty() || !self.listeners.is_empty();
        self.watch.set_active(active);
    }

    /// An endpoint that failed: its receives are cancelled (they complete with the failure).
    /// A failure UCX reports once this side closed it is the close's doing (a forced close
    /// reports one): what it ends is `ERR_UCX_ENDPOINT_CLOSED`, not a peer's failure.
    fn fail_endpoint(&mut self, endpoint: u64, status: i32) {
        let Some(info) = self.endpoints.get_mut(&endpoint) else { return };
        if info.failed.is_none() && !info.closed {
            info.failed = Some(status);
        }
        for op in self.book.of_endpoint(endpoint, OpKind::Recv) {
            self.worker.cancel(op);
        }
        if !info.closed {
            info.closed = true;
            if let Some(op) = self.worker.close_endpoint(endpoint, true) {
                self.book.start(op, InFlight { kind: OpKind::Close, endpoint, nbytes: 0, held: Held::Nothing });
            }
        }
    }
}

/// `{ available, message }`: whether UCX loads here, and from where (or what to install).
#[napi]
pub fn ucx_available() -> String {
    let (available, message) = match ucx::available() {
        Ok(m) => (true, m),
        Err(m) => (false, m),
    };
    json::object(&[("available", available.to_string()), ("message", json::string(&message))])
}

/// Starts this thread's worker (once) with `drain`, the JS function the fd wakes, the
/// spin window in microseconds (0: the fd alone), and whether one-sided access is on
/// (`DPCTL_MEMORY_UCX_RMA`, read by lib/); returns the worker's token.
#[napi]
pub fn ucx_start(env: &Env, drain: Unknown, spin_us: f64, rma: bool) -> napi::Result<f64> {
    let existing = STATE.with(|cell| cell.try_borrow().ok().and_then(|s| s.as_ref().map(|s| s.token)));
    if let Some(token) = existing {
        return Ok(token as f64);
    }
    // Once UCX loaded, a worker it will not make is its configuration's doing.
    let worker = Worker::new(rma)
        .map_err(|message| match ucx::available() {
            Ok(_) => MemoryError::UcxConfig { message },
            Err(_) => MemoryError::UcxUnavailable { message },
        })
        .or_throw(env)?;
    let watch = FdWatch::new(env, worker.event_fd(), &drain)
        .map_err(|message| MemoryError::Ucx { operation: "watching the worker's event fd".into(), message })
        .or_throw(env)?;
    let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut tokens) = TOKENS.lock() {
        tokens.push(token);
    }
    STATE.with(|cell| {
        *cell.borrow_mut() = Some(State {
            token,
            watch,
            worker,
            book: InFlightBook::default(),
            endpoints: HashMap::new(),
            rkeys: HashMap::new(),
            maps: HashMap::new(),
            unmapped: Vec::new(),
            listeners: HashSet::new(),
            spin: Duration::from_nanos((spin_us.clamp(0.0, 1e6) * 1e3) as u64),
            busy_at: Instant::now(),
            backlog: VecDeque::new(),
            events: VecDeque::new(),
        })
    });
    // The worker goes with the environment (a worker thread that ends).
    env.add_env_cleanup_hook(token, |token| {
        STATE.with(|cell| {
            if let Ok(mut state) = cell.try_borrow_mut() {
                drop(state.take());
            }
        });
        if let Ok(mut tokens) = TOKENS.lock() {
            tokens.retain(|t| *t != token);
        }
    })?;
    Ok(token as f64)
}

/// What the worker's library is, whether it moves CUDA memory, whether one-sided access
/// is on, and its counts: `{ library, cudaMemory, rma, inFlight, endpoints, listeners,
/// maps, rkeys }`.
#[napi]
pub fn ucx_info(env: &Env, token: f64) -> napi::Result<String> {
    with_state(env, token, |s| {
        let open = s.endpoints.values().filter(|e| !e.closed).count();
        Ok(json::object(&[
            ("library", json::string(&s.worker.describe_library())),
            ("cudaMemory", s.worker.supports_cuda_memory().to_string()),
            ("rma", s.worker.rma().to_string()),
            ("inFlight", s.book.len().to_string()),
            ("ucxRequests", s.worker.in_flight().to_string()),
            ("endpoints", open.to_string()),
            ("listeners", s.listeners.len().to_string()),
            ("maps", s.maps.len().to_string()),
            ("unmappedHeld", s.unmapped.len().to_string()),
            ("rkeys", s.rkeys.len().to_string()),
        ]))
    })
}

fn error_json(err: &MemoryError) -> String {
    json::object(&[
        ("code", json::string(err.code())),
        ("message", json::string(&err.to_string())),
        ("errorClass", json::string(err.class().js_name())),
    ])
}

/// Progresses the worker and writes what happened into `records` (a `Float64Array`):
/// `records[0]` is the count, then that many records of `RECORD_SLOTS` (see there; tags as
/// two 32-bit halves). Returns when to call again: 0 never (the fd is armed: it wakes the
/// loop at the next event), 1 on the loop's next turn (operations are in flight and the
/// worker was busy within the spin window; the fd is left unarmed, and with nothing come
/// yet this call kept progressing for up to `SPIN_SLICE` first), 2 at once (more happened
/// than `records` holds).
fn ucx_progress(env: &Env, token: f64, records: &Unknown) -> napi::Result<f64> {
    let target = ffi::host_bytes(env, records)?
        .filter(|b| b.byte_length() >= (1 + RECORD_SLOTS) * 8)
        .ok_or_else(|| MemoryError::NotHostBuffer { what: "records".into() })
        .or_throw(env)?;
    let capacity = (target.byte_length() / 8 - 1) / RECORD_SLOTS;
    let mut copies = Vec::new();
    let mut next = 0;
    let mut slots = vec![0.0f64];
    with_state(env, token, |s| {
        let started = Instant::now();
        // What an earlier call could not hand out goes first.
        while s.backlog.is_empty() {
            let events = s.worker.progress_events();
            let came = !events.is_empty();
            if came {
                s.busy_at = Instant::now();
                s.settle(events, &mut copies);
            }
            let now = Instant::now();
            let open = !s.book.is_empty() && now.duration_since(s.busy_at) < s.spin;
            if !open {
                if s.worker.arm() {
                    break;
                }
                continue;
            }
            if came || !s.backlog.is_empty() || now.duration_since(started) >= SPIN_SLICE {
                next = 1;
                break;
            }
            // A peer on this core (a loaded machine) gets it meanwhile.
            std::thread::yield_now();
        }
        let count = s.backlog.len().min(capacity);
        for record in s.backlog.drain(..count) {
            match record {
                Record::Done { op, length, tag } => slots.extend([
                    RECORD_DONE,
                    op as f64,
                    length as f64,
                    (tag >> 32) as f64,
                    (tag & 0xffff_ffff) as f64,
                ]),
                Record::Event(event) => {
                    s.events.push_back(event);
                    slots.extend([RECORD_EVENT, 0.0, 0.0, 0.0, 0.0]);
                }
            }
        }
        slots[0] = count as f64;
        if !s.backlog.is_empty() {
            next = 2;
        }
        s.release_unmapped();
        s.update_activity();
        Ok(())
    })?;
    // Receives into plain ArrayBuffers: copied now, into the buffer as it is now.
    for (scratch, target, length) in copies {
        copy_in(env, &scratch, &target, length)?;
    }
    let bytes: Vec<u8> = slots.iter().flat_map(|slot| slot.to_ne_bytes()).collect();
    target.with_bytes(|dst| crate::host::host_memcpy(dst, ReadBytes::of_slice(&bytes)));
    Ok(f64::from(next))
}

/// The object of the next `Event` record `ucxProgress` handed out, as JSON: `{ op, error }`
/// (a failed operation), `{ accepted: endpoint, listener }`, `{ acceptFailed: listener,
/// error }` or `{ failed: endpoint }`; `null` when there is none.
#[napi]
pub fn ucx_next_event(env: &Env, token: f64) -> napi::Result<String> {
    with_state(env, token, |s| Ok(s.events.pop_front().unwrap_or_else(|| "null".into())))
}

fn fast_ucx_progress(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    let next = ucx_progress(env, ffi::f64_arg(env, &args[0])?, &args[1])?;
    ffi::js_f64(env, next)
}

/// Puts this file's fast calls on `exports` (as `memory::define_fast_calls` does its own):
/// the calls on a message's way (progress, send, an exact receive), where napi-rs's per-call
/// machinery would cost as much as the call's own work.
pub fn define_fast_calls(env: &Env, exports: &mut napi::bindgen_prelude::Object) -> napi::Result<()> {
    let calls: [(&str, ffi::FastFn); 3] =
        [("ucxProgress", fast_ucx_progress), ("ucxSend", fast_ucx_send), ("ucxRecv", fast_ucx_recv)];
    for (name, function) in calls {
        ffi::define_fast(env, exports, name, function)?;
    }
    Ok(())
}

/// Copies what a receive into a plain `ArrayBuffer` got into the buffer as it is now.
fn copy_in(env: &Env, scratch: &Scratch, target: &TaskRef, length: u64) -> napi::Result<()> {
    let value = target.get(env)?;
    let len = (length as usize).min(scratch.len());
    if let Some(bytes) = ffi::host_bytes(env, &value)?.filter(|b| b.byte_length() >= len) {
        bytes.with_bytes(|dst| crate::host::host_memcpy(dst, ReadBytes::of_slice(&scratch[..len])));
    }
    Ok(())
}

impl State {
    /// Turns what `progress_events` reported into records (`backlog`), releasing what the
    /// completed ops held, except receives into plain `ArrayBuffer`s (`copies`, to copy
    /// out once the state is let go).
    fn settle(&mut self, events: Vec<Event>, copies: &mut Vec<(Scratch, TaskRef, u64)>) {
        let s = self;
        // Failures first: the receives they cancel come out of the next round.
        let mut again = false;
        for event in &events {
            if let Event::EndpointFailed { endpoint, status } = event {
                s.fail_endpoint(*endpoint, i32::from(*status));
                again = true;
            }
        }
        let mut events = events;
        if again {
            events.extend(s.worker.progress_events());
        }
        for event in events {
            match event {
                Event::Completed(done) => {
                    let Some(op) = s.book.finish(done.id) else { continue };
                    let info = s.endpoints.get(&op.endpoint);
                    let failed = info.and_then(|i| i.failed);
                    // No record: this side closed it (a failed endpoint's record stays
                    // until JS closes it), and its close completed first.
                    let closed = info.is_none_or(|i| i.closed);
                    let released = info.is_some_and(|i| i.released);
                    let mut error = None;
                    if done.status != ucx::ucp::UCS_OK {
                        let peer = info.map(|i| i.peer.clone()).unwrap_or_default();
                        let status = i32::from(done.status);
                        let text = failed
                            .filter(|_| done.status == ucx::ucp::UCS_ERR_CANCELED)
                            .map(|f| s.worker_text(f))
                            .unwrap_or_else(|| s.worker_text(status));
                        error =
                            Some(policy::op_error(op.kind, status, &text, op.nbytes, &peer, failed.is_some(), closed));
                    }
                    if op.kind == OpKind::Connect && error.is_some() {
                        if let Some(info) = s.endpoints.get_mut(&op.endpoint) {
                            info.closed = true;
                        }
                        if s.worker.has_endpoint(op.endpoint) {
                            if let Some(close) = s.worker.close_endpoint(op.endpoint, true) {
                                s.book.start(
                                    close,
                                    InFlight {
                                        kind: OpKind::Close,
                                        endpoint: op.endpoint,
                                        nbytes: 0,
                                        held: Held::Nothing,
                                    },
                                );
                            }
                        }
                    }
                    if op.kind == OpKind::Close {
                        // A failed endpoint's record stays until JS closes it, so that its
                        // later operations say it failed.
                        if failed.is_none() || released {
                            s.endpoints.remove(&op.endpoint);
                        }
                        s.rkeys.retain(|_, (ep, _)| *ep != op.endpoint);
                    }
                    // A receive has the length that came; a get, its whole buffer.
                    let length = if op.kind == OpKind::Recv { done.length } else { op.nbytes };
                    if let (None, Held::BounceIn(scratch, target)) = (&error, op.held) {
                        copies.push((scratch, target, length));
                    }
                    s.backlog.push_back(match &error {
                        Some(e) => {
                            Record::Event(json::object(&[("op", done.id.to_string()), ("error", error_json(e))]))
                        }
                        None => Record::Done { op: done.id, length: done.length, tag: done.sender_tag },
                    });
                }
                Event::Accepted { listener, endpoint } => {
                    if !s.listeners.contains(&listener) {
                        let _ = s.worker.close_endpoint(endpoint, true);
                        continue;
                    }
                    s.endpoints.insert(
                        endpoint,
                        EndpointInfo { peer: "a client".into(), failed: None, closed: false, released: false },
                    );
                    s.backlog.push_back(Record::Event(json::object(&[
                        ("accepted", endpoint.to_string()),
                        ("listener", listener.to_string()),
                    ])));
                }
                Event::AcceptFailed { listener, error } => {
                    s.backlog.push_back(Record::Event(json::object(&[
                        ("acceptFailed", listener.to_string()),
                        ("error", error_json(&ucx_error(&error))),
                    ])));
                }
                Event::EndpointFailed { endpoint, .. } => {
                    s.backlog.push_back(Record::Event(json::object(&[("failed", endpoint.to_string())])));
                }
            }
        }
    }
}

impl State {
    fn worker_text(&self, status: i32) -> String {
        let status = ucx::ucp::Status::try_from(status).unwrap_or(i8::MIN);
        ucx::ucp::ucp().map(|u| u.describe(status)).unwrap_or_default()
    }
}

/// Listens on `host`:`port`; returns `[listenerId, port]`.
#[napi]
pub fn ucx_listen(env: &Env, token: f64, host: String, port: u32) -> napi::Result<Float64Array> {
    let addr = policy::parse_address(&host, port).or_throw(env)?;
    with_state(env, token, |s| {
        let (id, bound) = s
            .worker
            .listen(addr)
            .map_err(|e| policy::call_error("listen", i32::from(e.status), &e.text, &addr.to_string()))?;
        s.listeners.insert(id);
        s.update_activity();
        Ok(Float64Array::new(vec![id as f64, f64::from(bound.port())]))
    })
}

/// Stops a listener.
#[napi]
pub fn ucx_close_listener(env: &Env, token: f64, id: f64) -> napi::Result<()> {
    with_state(env, token, |s| {
        s.listeners.remove(&(id as u64));
        s.worker.close_listener(id as u64);
        s.update_activity();
        Ok(())
    })
}

/// Connects to `host`:`port`; returns `[endpointId, opId]` (the op completes when the
/// connection is up).
#[napi]
pub fn ucx_connect(env: &Env, token: f64, host: String, port: u32) -> napi::Result<Float64Array> {
    let addr = policy::parse_address(&host, port).or_throw(env)?;
    with_state(env, token, |s| {
        let (endpoint, op) = s
            .worker
            .connect(addr)
            .map_err(|e| policy::call_error("connect", i32::from(e.status), &e.text, &addr.to_string()))?;
        s.endpoints
            .insert(endpoint, EndpointInfo { peer: addr.to_string(), failed: None, closed: false, released: false });
        s.start(op, OpKind::Connect, endpoint, 0, Held::Nothing);
        Ok(Float64Array::new(vec![endpoint as f64, op as f64]))
    })
}

/// Closes an endpoint (flushing unless `force`); returns the op that completes when it is
/// closed: a new one, or the close a failure started (so that `close()` settles when the
/// endpoint is gone, not while UCX still closes it); -1 when it is closed already.
#[napi]
pub fn ucx_close(env: &Env, token: f64, endpoint: f64, force: bool) -> napi::Result<f64> {
    let endpoint = endpoint as u64;
    with_state(env, token, |s| {
        let Some(info) = s.endpoints.get_mut(&endpoint) else { return Ok(-1.0) };
        if info.closed {
            if let Some(&closing) = s.book.of_endpoint(endpoint, OpKind::Close).first() {
                info.released = true;
                return Ok(closing as f64);
            }
            if info.failed.is_some() && !s.worker.has_endpoint(endpoint) {
                s.endpoints.remove(&endpoint);
            }
            return Ok(-1.0);
        }
        info.closed = true;
        for op in s.book.of_endpoint(endpoint, OpKind::Recv) {
            s.worker.cancel(op);
        }
        match s.worker.close_endpoint(endpoint, force) {
            Some(op) => Ok(s.start(op, OpKind::Close, endpoint, 0, Held::Nothing) as f64),
            None => {
                s.endpoints.remove(&endpoint);
                Ok(-1.0)
            }
        }
    })
}

/// Flushes an endpoint; returns the op that completes when every earlier operation on it has.
#[napi]
pub fn ucx_flush(env: &Env, token: f64, endpoint: f64) -> napi::Result<f64> {
    let endpoint = endpoint as u64;
    with_state(env, token, |s| {
        s.endpoint(endpoint)?;
        let op = s.worker.flush(endpoint).map_err(|e| ucx_error(&e))?;
        Ok(s.start(op, OpKind::Flush, endpoint, 0, Held::Nothing) as f64)
    })
}

fn memory(env: &Env, memory_id: f64) -> napi::Result<UsmMemory> {
    crate::js::lookup::lookup(env, |h| h.memory(memory_id))
}

/// Where an op's bytes are, and what holds them: a memory object, or a host buffer.
fn operand(env: &Env, memory_id: f64, host: Option<Unknown>, writes: bool) -> napi::Result<(u64, u64, Held)> {
    if let Some(value) = host {
        let bytes: HostBytes = ffi::host_bytes(env, &value)?
            .ok_or_else(|| MemoryError::NotHostBuffer { what: "buffer".into() })
            .or_throw(env)?;
        let len = bytes.byte_length() as u64;
        let side = if writes { HostSide::destination(env, &bytes)? } else { HostSide::source(env, &bytes)? };
        return Ok(match side {
            HostSide::Direct { .. } => (bytes.address(), len, Held::Direct(side)),
            HostSide::Bounce(Some(copy)) => (copy.as_ptr() as u64, len, Held::BounceOut(copy)),
            HostSide::Bounce(None) => {
                let mut scratch =
                    Scratch::for_copy(&crate::js::state::process().host_copies().scratch, len).or_throw(env)?;
                (scratch.as_mut_ptr() as u64, len, Held::BounceIn(scratch, TaskRef::new(&value)?))
            }
        });
    }
    let memory = memory(env, memory_id)?;
    if writes && memory.read_only() {
        return Err(MemoryError::ReadOnlyWrite { address: memory.address() }).or_throw(env);
    }
    if memory.usm_type(None) == crate::runtime::UsmKind::Device && memory.queue().device().info().backend == "cuda" {
        // A UCX without CUDA transports would read a device pointer as host memory.
        let supported =
            STATE.with(|cell| cell.try_borrow().ok().and_then(|s| s.as_ref().map(|s| s.worker.supports_cuda_memory())));
        if supported == Some(false) {
            return Err(MemoryError::Ucx {
                operation: "a transfer of CUDA device memory".into(),
                message: "this UCX has no CUDA transports (ucx_info -d lists no cuda_copy): use a UCX built with CUDA, \
                          e.g. the libucx-cu12 wheel's (DPCTL_MEMORY_UCX_ROOT=<cache>/ucx-1.22.0/libucx), or copy to host memory first"
                    .into(),
            })
            .or_throw(env);
        }
    }
    Ok((memory.address(), memory.nbytes(), Held::Memory(memory)))
}

fn tag_of(hi: u32, lo: u32) -> u64 {
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Sends a memory object (`memoryId`) or a host buffer with `tag`; returns the op, or 0
/// when the send completed at once (its source may be reused).
fn ucx_send(
    env: &Env,
    token: f64,
    endpoint: f64,
    memory_id: f64,
    host: Option<Unknown>,
    tag: u64,
) -> napi::Result<f64> {
    let posted =
        tagged(env, token, endpoint, memory_id, host, OpKind::Send, true, |worker, endpoint, address, len| {
            // SAFETY: `held` (kept with the op by `tagged`) keeps the bytes alive and in place
            // until the op completes.
            unsafe { worker.send(endpoint, address, len, tag) }
        })?;
    Ok(match posted {
        Posted::Pending(op) => op as f64,
        Posted::Done(..) => 0.0,
    })
}

/// Receives into a memory object or a host buffer a message whose tag matches `tag` under
/// `mask`; returns the op, or, when the message had come and the mask is every bit (so
/// that the sender's tag is the one asked for), `-1 - length`: the receive completed at once.
fn ucx_recv(
    env: &Env,
    token: f64,
    endpoint: f64,
    memory_id: f64,
    host: Option<Unknown>,
    tag: u64,
    mask: u64,
) -> napi::Result<f64> {
    // Under a narrower mask the sender's tag may differ from the one asked for: that
    // completion goes through `ucxProgress`, which reports it.
    let at_once = mask == u64::MAX;
    let posted = tagged(env, token, endpoint, memory_id, host, OpKind::Recv, at_once, |worker, _, address, len| {
        // SAFETY: as `ucx_send`; nothing else writes the op's bytes through us meanwhile.
        unsafe { worker.recv(address, len, tag, mask) }
    })?;
    settled_or_pending(env, posted, |length| -1.0 - length as f64)
}

/// `ucx_recv` under a mask of fewer bits (tag and mask as 32-bit halves).
#[napi]
#[allow(clippy::too_many_arguments)]
pub fn ucx_recv_masked(
    env: &Env,
    token: f64,
    endpoint: f64,
    memory_id: f64,
    host: Option<Unknown>,
    tag_hi: u32,
    tag_lo: u32,
    mask_hi: u32,
    mask_lo: u32,
) -> napi::Result<f64> {
    ucx_recv(env, token, endpoint, memory_id, host, tag_of(tag_hi, tag_lo), tag_of(mask_hi, mask_lo))
}

/// A memory object's handle (a number) or a host buffer, as the fast calls take an operand.
fn operand_arg<'env>(env: &Env, value: Unknown<'env>) -> napi::Result<(f64, Option<Unknown<'env>>)> {
    Ok(if ffi::is_number(env, &value)? { (ffi::f64_arg(env, &value)?, None) } else { (0.0, Some(value)) })
}

/// `ucxSend(token, endpoint, operand, tag)`: the operand a memory handle or a host buffer,
/// the tag a bigint.
fn fast_ucx_send(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    let (memory_id, host) = operand_arg(env, args[2])?;
    let tag = ffi::u64_bigint_arg(env, &args[3])?;
    let op = ucx_send(env, ffi::f64_arg(env, &args[0])?, ffi::f64_arg(env, &args[1])?, memory_id, host, tag)?;
    ffi::js_f64(env, op)
}

/// `ucxRecv(token, endpoint, operand, tag)`: `ucx_recv` of exactly `tag` (every mask bit).
fn fast_ucx_recv(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    let (memory_id, host) = operand_arg(env, args[2])?;
    let tag = ffi::u64_bigint_arg(env, &args[3])?;
    let op = ucx_recv(env, ffi::f64_arg(env, &args[0])?, ffi::f64_arg(env, &args[1])?, memory_id, host, tag, u64::MAX)?;
    ffi::js_f64(env, op)
}

/// An operation just posted: in flight (its op id), or completed at once (its length and
/// what it held).
enum Posted {
    Pending(u64),
    Done(u64, Held),
}

/// What the binding returns for a posted op: its id while in flight, else `done(length)`,
/// after the bytes of a receive or get into a plain ArrayBuffer (in the op's own buffer)
/// are copied into it.
fn settled_or_pending(env: &Env, posted: Posted, done: impl FnOnce(u64) -> f64) -> napi::Result<f64> {
    match posted {
        Posted::Pending(op) => Ok(op as f64),
        Posted::Done(length, held) => {
            if let Held::BounceIn(scratch, target) = held {
                copy_in(env, &scratch, &target, length)?;
            }
            Ok(done(length))
        }
    }
}

/// Posts a tagged send or receive (`post`, given the worker, the endpoint and the bytes)
/// of a memory object or a host buffer, which the op holds until it completes; `at_once`:
/// whether an op UCX completed inside the call is settled by the caller.
#[allow(clippy::too_many_arguments)]
fn tagged(
    env: &Env,
    token: f64,
    endpoint: f64,
    memory_id: f64,
    host: Option<Unknown>,
    kind: OpKind,
    at_once: bool,
    post: impl FnOnce(&mut Worker, u64, u64, usize) -> Result<u64, UcxError>,
) -> napi::Result<Posted> {
    let (address, nbytes, held) = operand(env, memory_id, host, kind == OpKind::Recv)?;
    let endpoint = endpoint as u64;
    with_state(env, token, |s| {
        s.endpoint(endpoint)?;
        let op = post(&mut s.worker, endpoint, address, nbytes as usize).map_err(|e| ucx_error(&e))?;
        s.start(op, kind, endpoint, nbytes, held);
        Ok(match if at_once { s.completed_at_once(op) } else { None } {
            Some((length, held)) => Posted::Done(length, held),
            None => Posted::Pending(op),
        })
    })
}

/// Maps a memory object for remote access; returns the map's id (its key's bytes come
/// from `ucxMapKey`).
#[napi]
pub fn ucx_map_memory(env: &Env, token: f64, memory_id: f64) -> napi::Result<f64> {
    let memory = memory(env, memory_id)?;
    with_state(env, token, |s| {
        s.rma()?;
        // SAFETY: `maps` holds the memory until it is unmapped.
        let (id, packed) =
            unsafe { s.worker.map(memory.address(), memory.nbytes() as usize) }.map_err(|e| ucx_error(&e))?;
        let key = RemoteKey { base: memory.address(), nbytes: memory.nbytes(), packed };
        s.maps.insert(id, (memory, key.to_bytes()));
        Ok(id as f64)
    })
}

/// The remote key bytes of a map, for a peer's `ucxUnpack`.
#[napi]
pub fn ucx_map_key(env: &Env, token: f64, map_id: f64) -> napi::Result<Buffer> {
    with_state(env, token, |s| {
        let (_, key) =
            s.maps.get(&(map_id as u64)).ok_or(MemoryError::UcxEndpointClosed { what: "memory map".into() })?;
        Ok(Buffer::from(key.clone()))
    })
}

/// Unmaps a map: its registration goes at once (transports that check keys refuse later
/// accesses), its memory once every endpoint open now has closed (see `State::unmapped`).
#[napi]
pub fn ucx_unmap(env: &Env, token: f64, map_id: f64) -> napi::Result<()> {
    with_state(env, token, |s| {
        s.worker.unmap(map_id as u64);
        if let Some((memory, _)) = s.maps.remove(&(map_id as u64)) {
            let open: Vec<u64> = s.endpoints.keys().copied().filter(|ep| s.worker.has_endpoint(*ep)).collect();
            s.unmapped.push((memory, open));
            s.release_unmapped();
        }
        Ok(())
    })
}

/// Unpacks a remote key's bytes for an endpoint; returns `[rkeyId, nbytes]`.
#[napi]
pub fn ucx_unpack(env: &Env, token: f64, endpoint: f64, bytes: Unknown) -> napi::Result<Float64Array> {
    let endpoint = endpoint as u64;
    let host =
        ffi::host_bytes(env, &bytes)?.ok_or_else(|| MemoryError::NotHostBuffer { what: "key".into() }).or_throw(env)?;
    let mut copy = vec![0u8; host.byte_length()];
    host.with_bytes(|src| crate::host::host_memcpy(crate::runtime::WriteBytes::of_slice(&mut copy), src.as_read()));
    let key = RemoteKey::from_bytes(&copy).or_throw(env)?;
    with_state(env, token, |s| {
        s.rma()?;
        s.endpoint(endpoint)?;
        let id = s.worker.unpack_rkey(endpoint, &key.packed).map_err(|e| MemoryError::UcxRkeyInvalid {
            message: format!("UCX cannot unpack this remote key: {}", e.text),
        })?;
        let nbytes = key.nbytes as f64;
        s.rkeys.insert(id, (endpoint, key));
        Ok(Float64Array::new(vec![id as f64, nbytes]))
    })
}

/// Destroys an unpacked remote key.
#[napi]
pub fn ucx_destroy_rkey(env: &Env, token: f64, rkey: f64) -> napi::Result<()> {
    with_state(env, token, |s| {
        s.worker.destroy_rkey(rkey as u64);
        s.rkeys.remove(&(rkey as u64));
        Ok(())
    })
}

/// `put` (`write`) or `get` of a memory object or host buffer at `offset` into a remote
/// key's range; returns the op, or 0 when it completed at once.
#[napi]
#[allow(clippy::too_many_arguments)]
pub fn ucx_rma(
    env: &Env,
    token: f64,
    write: bool,
    rkey: f64,
    offset: f64,
    memory_id: f64,
    host: Option<Unknown>,
) -> napi::Result<f64> {
    let (address, nbytes, held) = operand(env, memory_id, host, !write)?;
    let done = with_state(env, token, |s| {
        let Some((endpoint, key)) = s.rkeys.get(&(rkey as u64)) else {
            return Err(MemoryError::UcxRkeyInvalid {
                message: "this remote key was destroyed (or its endpoint closed)".into(),
            });
        };
        let endpoint = *endpoint;
        let remote = key.address_of(offset as u64, nbytes)?;
        s.endpoint(endpoint)?;
        // SAFETY: as `ucx_send` / `ucx_recv`.
        let op = unsafe {
            if write {
                s.worker.put(endpoint, address, nbytes as usize, remote, rkey as u64)
            } else {
                s.worker.get(endpoint, address, nbytes as usize, remote, rkey as u64)
            }
        }
        .map_err(|e| ucx_error(&e))?;
        let kind = if write { OpKind::Put } else { OpKind::Get };
        s.start(op, kind, endpoint, nbytes, held);
        Ok(match s.completed_at_once(op) {
            Some(done) => Posted::Done(done.0, done.1),
            None => Posted::Pending(op),
        })
    })?;
    settled_or_pending(env, done, |_| 0.0)
}
