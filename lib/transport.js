// @ts-check
'use strict';
// Memory across machines over UCX: `ucx.listen`, `ucx.connect`, `UcxEndpoint`
// (tagged send/recv, put/get through remote keys), `ucx.mapMemory` (a memory object
// registered for remote access, with the key bytes a peer unpacks). One UCX worker per
// thread, made at first use; its event fd wakes `drain` below from the event loop (no
// polling while idle). An operation UCX completes inside the call that posts it (a small
// send, a receive of a message that had come) settles at once. Each operation keeps its operands (here: the JS values; in the
// binding: the memory) until its Promise settles, so `free()` of memory in flight only
// drops the object's reference and the memory goes when UCX is done with it.
const { native } = require('./native.js');
const { ErrorCode, typeError, rangeError, makeError, fromNative, invalidThis } = require('./errors.js');
const { display, hostArg, arrayState, readOptions } = require('./values.js');
const memory = require('./memory.js');

const { isMemory, memorySource } = memory;
const { Object, Map, Set, Promise, JSON, BigInt, Number, Error, setImmediate, setTimeout, clearTimeout, setInterval, clearInterval } = globalThis;
const inspect = Symbol.for('nodejs.util.inspect.custom');
const TAG_LIMIT = (1n << 64n) - 1n;
const ALL_TAG_BITS = TAG_LIMIT;
/** Module-private: lets only this file make endpoints, listeners, maps and keys. */
const INTERNAL = Symbol('dpctl-memory ucx');

/** Whether UCX loads here: `{ available, message }` (the library, or what to install). */
function available() {
  return JSON.parse(native.ucxAvailable());
}

/** This thread's worker: ops by id, listeners and endpoints by id. */
let worker = null;

function unavailableError() {
  const { message } = available();
  return makeError('Error', message, ErrorCode.UcxUnavailable);
}

function ensureWorker() {
  if (worker !== null) return worker;
  if (!available().available) throw unavailableError();
  const state = { token: 0, ops: new Map(), listeners: new Map(), endpoints: new Map(), scheduled: false, records: new Float64Array(1 + RECORD_SLOTS * RECORDS), watchdog: null };
  try {
    state.token = native.ucxStart(() => drain(state), SPIN_US, rmaEnabled());
  } catch (error) {
    throw fromNative(error);
  }
  worker = state;
  return state;
}

// One-sided access (mapMemory, put/get) is opt-in: over software transports (TCP, shared
// memory) UCX writes wherever a peer's request says, so a worker made with it lets any
// connected peer read and write this whole process. Read when the thread's worker is made.
function rmaEnabled() {
  return process.env.DPCTL_MEMORY_UCX_RMA === '1';
}

/** Calls the binding, turning its errors into this realm's. */
function call(fn, ...args) {
  try {
    return fn(...args);
  } catch (error) {
    throw fromNative(error);
  }
}

/** Progress soon (after an op is posted: UCX completes some ops only in progress). */
function schedule(state) {
  if (state.scheduled) return;
  state.scheduled = true;
  setImmediate(() => {
    state.scheduled = false;
    drain(state);
  });
}

// While operations are in flight and the worker has done something lately, the binding
// keeps progressing it (`ucxProgress` spins up to a slice, then the loop takes a turn and
// the drain asks again) instead of sleeping on its event fd: a wake-up through the fd costs
// tens of microseconds, which a ping-pong pays on every message. Once nothing has happened
// for the window, or nothing is in flight, the fd is armed and the loop sleeps on it. The
// spin yields the core between polls, so a peer or another process waiting for this core
// gets it (on a machine of few cores, or a loaded one). DPCTL_MEMORY_UCX_SPIN_US sets the
// window (0: the fd only).
const DEFAULT_SPIN_US = 200;
const SPIN_US = spinMicroseconds(process.env.DPCTL_MEMORY_UCX_SPIN_US);

function spinMicroseconds(given) {
  const us = given === undefined || given === '' ? DEFAULT_SPIN_US : Number(given);
  return Number.isFinite(us) && us >= 0 ? us : DEFAULT_SPIN_US;
}

// What `ucxProgress` writes into `state.records`: the count, then records of
// RECORD_SLOTS numbers, [kind, op, length, tagHi, tagLo]. RECORD_DONE: an operation that
// succeeded; RECORD_EVENT: anything else, whose object `ucxNextEvent` returns (a failed
// operation, an accepted connection, a failed endpoint). No JSON on the way of a message.
const RECORD_SLOTS = 5;
const RECORDS = 256;
const RECORD_DONE = 1;

// While a listener is open, the worker is also progressed every LISTEN_POLL_MS: UCX's async thread, which accepts connections, drops a handler it
// could not run while this thread was inside UCX (a progress, a close) into a "missed"
// queue that only a progress empties, and neither arming the event fd nor anything else
// wakes the loop for it: an idle listener slept through such a connection request until
// something else made its worker progress. The poll bounds that wait; it is unref'd (the
// listener keeps the loop alive itself) and costs one empty progress per period.
const LISTEN_POLL_MS = 50;

function watchdog(state) {
  const wanted = state.listeners.size > 0;
  if (wanted && state.watchdog === null) {
    state.watchdog = setInterval(() => drain(state), LISTEN_POLL_MS);
    state.watchdog.unref();
  } else if (!wanted && state.watchdog !== null) {
    clearInterval(state.watchdog);
    state.watchdog = null;
  }
}

/** Progresses the worker and settles what completed. */
function drain(state) {
  const records = state.records;
  let next;
  do {
    // 0: the fd is armed; 1: the binding spins (progress again on the next turn); 2: more
    // happened than the records hold (progress again now).
    next = call(native.ucxProgress, state.token, records);
    const count = records[0];
    for (let i = 0, at = 1; i < count; i++, at += RECORD_SLOTS) {
      if (records[at] === RECORD_DONE) settle(state, records[at + 1], records[at + 2], records[at + 3], records[at + 4]);
      else handle(state, JSON.parse(call(native.ucxNextEvent, state.token)));
    }
  } while (next === 2);
  if (next === 1) schedule(state);
}

/** Resolves op `id`, which succeeded: a receive with `{ nbytes, tag }`, any other op with undefined. */
function settle(state, id, length, tagHi, tagLo) {
  const op = state.ops.get(id);
  if (op === undefined) return;
  state.ops.delete(id);
  if (op.tag === null) op.resolve(undefined);
  // Under a full mask the sender's tag is the one asked for.
  else op.resolve({ nbytes: length, tag: op.exact ? op.tag : (BigInt(tagHi) << 32n) | BigInt(tagLo) });
}

/** What the binding reports besides successes: a failed op, an accepted connection, a failed endpoint. */
function handle(state, event) {
  if (event === null) return;
  if (event.op !== undefined) {
    const op = state.ops.get(event.op);
    if (op === undefined) return;
    state.ops.delete(event.op);
    op.reject(makeError(event.error.errorClass, event.error.message, event.error.code));
  } else if (event.accepted !== undefined) {
    const listener = state.listeners.get(event.listener);
    const endpoint = new UcxEndpoint(INTERNAL, state, event.accepted, 'a client');
    if (listener === undefined) endpoint.close({ force: true }).catch(() => {});
    else deliverAccepted(listener, endpoint);
  } else if (event.failed !== undefined) {
    // The binding saw the endpoint fail: its pending operations reject (ERR_UCX_PEER_FAILED).
    state.endpoints.delete(event.failed);
  }
}

/**
 * The Promise of op `id` in flight, holding `operands` until it settles. It resolves with
 * undefined, or for a receive (`tag` not null: the tag asked for, `exact`: under a full
 * mask) with `{ nbytes, tag }`.
 */
function pending(state, id, operands, tag = null, exact = false) {
  return new Promise((resolve, reject) => {
    state.ops.set(id, { resolve, reject, operands, tag, exact });
    schedule(state);
  });
}

/** Starts an op (`post` returns its id, or 0 when it completed at once) and returns its Promise. */
function operation(state, post, operands) {
  const id = call(post);
  return id === 0 ? Promise.resolve() : pending(state, id, operands);
}

const asGiven = (value) => value;

/** The options `names` of `what` (a plain object; a revoked Proxy or an array is refused). */
function optionsObject(options, what, names) {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || arrayState(options) !== false) {
    throw typeError(`${what} options must be a plain object, not ${display(options)}`);
  }
  const readers = { __proto__: null };
  for (let i = 0; i < names.length; i++) readers[names[i]] = asGiven;
  return readOptions(options, readers, (name) => `unknown option '${name}': the options of ${what} are ${names.join(', ')}`);
}

/** A 64-bit tag: a bigint or a non-negative safe integer. */
function tagArg(value, what, fallback) {
  if (value === undefined) return fallback;
  let tag;
  if (typeof value === 'bigint') tag = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) tag = BigInt(value);
  else throw typeError(`${what} must be a bigint or an integer, not ${display(value)}`);
  if (tag < 0n || tag > TAG_LIMIT) throw rangeError(`${what} must be 0 .. 2^64 - 1, got ${tag}`, ErrorCode.InvalidArgValue);
  return tag;
}

const hi = (tag) => Number(tag >> 32n);
const lo = (tag) => Number(tag & 0xffffffffn);

function hostString(value, what) {
  if (typeof value !== 'string' || value.length === 0) throw typeError(`${what} must be a non-empty string (an IP address, or localhost), not ${display(value)}`);
  return value;
}

function portArg(value, fallback) {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 65535) {
    throw rangeError(`port must be an integer 0 .. 65535, not ${display(value)}`, ErrorCode.InvalidArgValue);
  }
  return value;
}

/**
 * `[memoryHandle, hostBuffer]` of an operand: a memory object or a host buffer.
 * @returns {[number, ArrayBuffer | ArrayBufferView | undefined]}
 */
function operandArg(value, what) {
  if (isMemory(value)) return [memorySource(value).handle, undefined];
  return [0, hostArg(value, what)];
}

/** An operand as the fast calls take it: a memory object's handle (a number) or a host buffer. */
function fastOperand(value, what) {
  return isMemory(value) ? memorySource(value).handle : hostArg(value, what);
}

// Module-private (set in the classes' static blocks): what one class of this file asks
// of another's private state, out of reach of other code.
/** Hands an accepted endpoint to its listener's next `accept()`. */
let deliverAccepted;
/** The binding's id of a remote key of this module, or undefined for anything else. */
let remoteKeyId;

/** The other side of a connection: tagged messages, remote memory access, close. */
class UcxEndpoint {
  #state;
  #id;
  #peer;
  #closed = null;
  /** Whether the close is forced (or a graceful one was made forced meanwhile). */
  #forced = false;
  /** The Promise of the binding's close, once asked for. */
  #closing = null;
  /** Sends, puts and gets in flight: a graceful close waits for them. */
  #outgoing = new Set();

  /** Not constructible: `ucx.connect()` and `UcxListener#accept()` make endpoints. */
  constructor(token, state, id, peer) {
    if (token !== INTERNAL) {
      throw typeError('UcxEndpoint cannot be constructed: use ucx.connect() or listener.accept()', ErrorCode.ConstructCallRequired);
    }
    this.#state = state;
    this.#id = id;
    this.#peer = peer;
    state.endpoints.set(id, this);
  }

  static #live(self, member) {
    if (typeof self !== 'object' || self === null || !(#id in self)) throw invalidThis('UcxEndpoint', member);
    return self;
  }

  /** An operation on an endpoint whose close() was called is refused. */
  static #open(self, member) {
    UcxEndpoint.#live(self, member);
    if (self.#closed !== null) throw makeError('Error', 'this endpoint is closed', ErrorCode.UcxEndpointClosed);
    return self;
  }

  /** Records an outgoing op's Promise until it settles (a graceful close waits for it). */
  #track(promise) {
    const outgoing = this.#outgoing;
    outgoing.add(promise);
    const done = () => outgoing.delete(promise);
    promise.then(done, done);
    return promise;
  }

  /** The address this endpoint connected to ('a client' for an accepted one). */
  get peer() {
    return UcxEndpoint.#live(this, 'peer').#peer;
  }

  /** Sends `source` (a memory object, or a host buffer) as one message with `tag`. */
  send(source, options) {
    try {
      const self = UcxEndpoint.#open(this, 'send');
      const { tag } = optionsObject(options, 'send', ['tag']);
      const tagValue = tagArg(tag, 'tag', 0n);
      const id = call(native.ucxSend, self.#state.token, self.#id, fastOperand(source, 'source'), tagValue);
      return id === 0 ? Promise.resolve() : self.#track(pending(self.#state, id, source));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Receives into `destination` a message whose tag matches `tag` under `tagMask`; resolves
   * with `{ nbytes, tag }` (the size and the sender's tag). Tags are matched across every
   * endpoint of the thread's worker, as in UCX.
   */
  recv(destination, options) {
    try {
      const self = UcxEndpoint.#open(this, 'recv');
      const { tag, tagMask } = optionsObject(options, 'recv', ['tag', 'tagMask']);
      const tagValue = tagArg(tag, 'tag', 0n);
      const mask = tagArg(tagMask, 'tagMask', ALL_TAG_BITS);
      const exact = mask === ALL_TAG_BITS;
      let id;
      if (exact) id = call(native.ucxRecv, self.#state.token, self.#id, fastOperand(destination, 'destination'), tagValue);
      else {
        const [handle, host] = operandArg(destination, 'destination');
        id = call(native.ucxRecvMasked, self.#state.token, self.#id, handle, host, hi(tagValue), lo(tagValue), hi(mask), lo(mask));
      }
      // Negative: the message had come and the receive completed at once (-1 - its length).
      return id < 0 ? Promise.resolve({ nbytes: -1 - id, tag: tagValue }) : pending(self.#state, id, destination, tagValue, exact);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** A peer's remote key (the bytes of its `UcxMemoryMap#remoteKey`), for put/get over this endpoint. */
  unpackRemoteKey(bytes) {
    const self = UcxEndpoint.#open(this, 'unpackRemoteKey');
    const [id, nbytes] = call(native.ucxUnpack, self.#state.token, self.#id, hostArg(bytes, 'remote key'));
    return new UcxRemoteKey(INTERNAL, self.#state, id, nbytes);
  }

  /** Writes `source` at `offset` into the peer's memory that `key` covers; resolves once `source` may be reused (`flush()` for remote completion). */
  put(source, key, options) {
    return this.#rma('put', true, source, key, options);
  }

  /** Reads the peer's memory at `offset` (that `key` covers) into `destination`. */
  get(destination, key, options) {
    return this.#rma('get', false, destination, key, options);
  }

  #rma(member, write, buffer, key, options) {
    try {
      const self = UcxEndpoint.#open(this, member);
      const { offset } = optionsObject(options, member, ['offset']);
      const at = offset === undefined ? 0 : offset;
      if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 0) throw rangeError(`offset must be a non-negative integer, not ${display(at)}`, ErrorCode.InvalidArgValue);
      const rkey = remoteKeyId(key);
      if (rkey === undefined) throw typeError(`key must be a UcxRemoteKey, not ${display(key)}`);
      const [handle, host] = operandArg(buffer, write ? 'source' : 'destination');
      return self.#track(operation(self.#state, () => native.ucxRma(self.#state.token, write, rkey, at, handle, host), [buffer, key]));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Resolves when every operation posted on this endpoint has completed at the peer. */
  flush() {
    try {
      return UcxEndpoint.#open(this, 'flush').#flushNow();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #flushNow() {
    try {
      return operation(this.#state, () => native.ucxFlush(this.#state.token, this.#id), null);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Closes the endpoint. Unless `force`, what was sent completes first: the sends, puts
   * and gets in flight (a send completes once the peer took it: a graceful close waits
   * for the peer's receive), then a flush; later operations are refused at once. What is
   * still pending then (receives) rejects with ERR_UCX_ENDPOINT_CLOSED. `force` (also
   * while a graceful close waits) closes at once, and what was in flight rejects.
   * Idempotent: resolves when it is closed; never rejects.
   */
  close(options) {
    const self = UcxEndpoint.#live(this, 'close');
    let force;
    try {
      force = optionsObject(options, 'close', ['force']).force === true;
    } catch (error) {
      return Promise.reject(error);
    }
    if (self.#closed !== null) {
      if (force && !self.#forced) {
        self.#forced = true;
        self.#closeNow();
      }
      return self.#closed;
    }
    self.#forced = force;
    const state = self.#state;
    // A graceful close waits for what was sent (UCX's flush completes RMA, not a
    // rendezvous send still waiting for the peer's receive, and a close cancels those),
    // then flushes, then closes with UCX's forced close: UCX's own flushing close can
    // leave the connection's sockets open after both sides closed.
    const done = () => {};
    const sent = force ? Promise.resolve() : Promise.all([...self.#outgoing].map((p) => p.then(done, done)));
    const flushed = sent.then(() => (self.#forced ? undefined : self.#flushNow().catch(done)));
    self.#closed = flushed.then(() => self.#closeNow()).then(() => {
      state.endpoints.delete(self.#id);
    });
    return self.#closed;
  }

  /** The binding's close (forced: what is pending on it rejects), once. */
  #closeNow() {
    if (this.#closing !== null) return this.#closing;
    const state = this.#state;
    let id;
    try {
      id = call(native.ucxClose, state.token, this.#id, true);
    } catch {
      id = -1;
    }
    this.#closing = id < 0 ? Promise.resolve() : new Promise((resolve) => {
      // A close completes even when the peer is gone: it never rejects.
      state.ops.set(id, { resolve: () => resolve(), reject: () => resolve(), operands: null, tag: null, exact: false });
      schedule(state);
    });
    return this.#closing;
  }

  toString() {
    return `<UcxEndpoint to ${UcxEndpoint.#live(this, 'toString').#peer}>`;
  }

  [inspect]() {
    return this.toString();
  }
}

/** A listening socket address; `accept()` resolves with the next connection's endpoint. */
class UcxListener {
  #state;
  #id;
  #port;
  #host;
  #queue = [];
  #waiting = [];
  #open = true;

  /** Not constructible: `ucx.listen()` makes listeners. */
  constructor(token, state, id, host, port) {
    if (token !== INTERNAL) throw typeError('UcxListener cannot be constructed: use ucx.listen()', ErrorCode.ConstructCallRequired);
    this.#state = state;
    this.#id = id;
    this.#host = host;
    this.#port = port;
    state.listeners.set(id, this);
    watchdog(state);
  }

  static #live(self, member) {
    if (typeof self !== 'object' || self === null || !(#id in self)) throw invalidThis('UcxListener', member);
    return self;
  }

  /** The port it listens on (the one chosen when 0 was asked for). */
  get port() {
    return UcxListener.#live(this, 'port').#port;
  }

  /** The address it listens on. */
  get host() {
    return UcxListener.#live(this, 'host').#host;
  }

  /** The endpoint of the next connection (queued when none waits). */
  accept() {
    const self = UcxListener.#live(this, 'accept');
    if (self.#queue.length > 0) return Promise.resolve(self.#queue.shift());
    if (!self.#open) return Promise.reject(makeError('Error', 'this listener is closed', ErrorCode.UcxEndpointClosed));
    return new Promise((resolve, reject) => self.#waiting.push({ resolve, reject }));
  }

  static {
    deliverAccepted = (listener, endpoint) => {
      if (listener.#waiting.length > 0) listener.#waiting.shift().resolve(endpoint);
      else listener.#queue.push(endpoint);
    };
  }

  /** Stops listening; waiting `accept()`s reject with ERR_UCX_ENDPOINT_CLOSED. Idempotent. */
  close() {
    const self = UcxListener.#live(this, 'close');
    if (!self.#open) return;
    self.#open = false;
    call(native.ucxCloseListener, self.#state.token, self.#id);
    self.#state.listeners.delete(self.#id);
    watchdog(self.#state);
    const waiting = self.#waiting.splice(0);
    for (let i = 0; i < waiting.length; i++) waiting[i].reject(makeError('Error', 'this listener is closed', ErrorCode.UcxEndpointClosed));
  }

  toString() {
    const self = UcxListener.#live(this, 'toString');
    return `<UcxListener on ${self.#host}:${self.#port}>`;
  }

  [inspect]() {
    return this.toString();
  }
}

/** A memory object registered for remote access; `remoteKey` is what a peer unpacks. */
class UcxMemoryMap {
  #state;
  #id;
  #memory;
  #key;

  /** Not constructible: `ucx.mapMemory(memory)` makes one. */
  constructor(token, state, id, mem) {
    if (token !== INTERNAL) throw typeError('UcxMemoryMap cannot be constructed: use ucx.mapMemory(memory)', ErrorCode.ConstructCallRequired);
    this.#state = state;
    this.#id = id;
    this.#memory = mem;
    const bytes = call(native.ucxMapKey, state.token, id);
    this.#key = new Uint8Array(bytes.length);
    this.#key.set(bytes);
  }

  static #live(self, member) {
    if (typeof self !== 'object' || self === null || !(#id in self)) throw invalidThis('UcxMemoryMap', member);
    if (self.#memory === null) throw makeError('Error', 'this memory map was unmapped', ErrorCode.UcxEndpointClosed);
    return self;
  }

  /** The remote key's bytes (a copy) to send to a peer. */
  get remoteKey() {
    return UcxMemoryMap.#live(this, 'remoteKey').#key.slice();
  }

  /** The memory object mapped. */
  get memory() {
    return UcxMemoryMap.#live(this, 'memory').#memory;
  }

  /** Unmaps the memory (it is held while mapped). Idempotent. */
  unmap() {
    if (typeof this !== 'object' || this === null || !(#id in this)) throw invalidThis('UcxMemoryMap', 'unmap');
    if (this.#memory === null) return;
    this.#memory = null;
    call(native.ucxUnmap, this.#state.token, this.#id);
  }
}

/** A peer's remote key, unpacked for one endpoint. */
class UcxRemoteKey {
  #state;
  #id;
  #nbytes;
  #destroyed = false;

  /** Not constructible: `endpoint.unpackRemoteKey(bytes)` makes one. */
  constructor(token, state, id, nbytes) {
    if (token !== INTERNAL) throw typeError('UcxRemoteKey cannot be constructed: use endpoint.unpackRemoteKey(bytes)', ErrorCode.ConstructCallRequired);
    this.#state = state;
    this.#id = id;
    this.#nbytes = nbytes;
  }

  /** The bytes of remote memory the key covers. */
  get nbytes() {
    if (typeof this !== 'object' || this === null || !(#id in this)) throw invalidThis('UcxRemoteKey', 'nbytes');
    return this.#nbytes;
  }

  static {
    // `#id in` never runs a Proxy's traps (a revoked one is simply not a key).
    remoteKeyId = (key) => (typeof key === 'object' && key !== null && #id in key ? key.#id : undefined);
  }

  /** Destroys the key: later put/get through it reject with ERR_UCX_RKEY_INVALID. Idempotent. */
  destroy() {
    if (typeof this !== 'object' || this === null || !(#id in this)) throw invalidThis('UcxRemoteKey', 'destroy');
    if (this.#destroyed) return;
    this.#destroyed = true;
    call(native.ucxDestroyRkey, this.#state.token, this.#id);
  }
}

/** Listens on `{ host = '0.0.0.0', port = 0 }`; returns the `UcxListener` at once. */
function listen(options) {
  const { host, port } = optionsObject(options, 'ucx.listen', ['host', 'port']);
  const address = host === undefined ? '0.0.0.0' : hostString(host, 'host');
  const wanted = portArg(port, 0);
  const state = ensureWorker();
  const [id, bound] = call(native.ucxListen, state.token, address, wanted);
  return new UcxListener(INTERNAL, state, id, address, bound);
}

/** How long `ucx.connect` waits for the connection by default (ms). */
const CONNECT_TIMEOUT_MS = 30000;

function timeoutArg(value) {
  if (value === undefined) return CONNECT_TIMEOUT_MS;
  if (typeof value !== 'number' || !(value > 0) || value > 2 ** 31 - 1) {
    throw rangeError(`timeout must be a number of milliseconds 1 .. 2^31 - 1, not ${display(value)}`, ErrorCode.InvalidArgValue);
  }
  return value;
}

/**
 * Connects to `{ host, port, timeout }`; resolves with the `UcxEndpoint` once the
 * connection is up, or rejects with ERR_UCX_CONNECT_TIMEOUT after `timeout` ms (30 s by
 * default; the endpoint is then closed).
 */
function connect(options) {
  try {
    const { host, port, timeout } = optionsObject(options, 'ucx.connect', ['host', 'port', 'timeout']);
    const address = hostString(host, 'host');
    if (port === undefined) throw typeError('ucx.connect needs a port');
    const wanted = portArg(port, 0);
    const ms = timeoutArg(timeout);
    const state = ensureWorker();
    const [id, op] = call(native.ucxConnect, state.token, address, wanted);
    const endpoint = new UcxEndpoint(INTERNAL, state, id, `${address}:${wanted}`);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (!state.ops.has(op)) return;
        state.ops.delete(op);
        endpoint.close({ force: true }).catch(() => {});
        reject(makeError('Error', `cannot connect to ${address}:${wanted}: no connection within ${ms} ms (the timeout option of ucx.connect)`, ErrorCode.UcxConnectTimeout));
      }, ms);
      const settled = (then) => (value) => {
        clearTimeout(timer);
        then(value);
      };
      state.ops.set(op, { resolve: settled(() => resolve(endpoint)), reject: settled(reject), operands: null, tag: null, exact: false });
      schedule(state);
    });
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Registers a memory object for remote access (put/get by peers through its `remoteKey`). */
function mapMemory(mem) {
  if (!isMemory(mem)) throw typeError(`ucx.mapMemory needs a memory object, not ${display(mem)}`, ErrorCode.NotUsm);
  const state = ensureWorker();
  const id = call(native.ucxMapMemory, state.token, memorySource(mem).handle);
  return new UcxMemoryMap(INTERNAL, state, id, mem);
}

/** This thread's worker: the library in use and what is open (for leak checks). */
function info() {
  const state = ensureWorker();
  return JSON.parse(call(native.ucxInfo, state.token));
}

/** The worker's token (tests of the wrong-thread check use it). */
function workerToken() {
  return ensureWorker().token;
}

const ucx = Object.freeze({ available, listen, connect, mapMemory, info, _workerToken: workerToken });

module.exports = { ucx, UcxEndpoint, UcxListener, UcxMemoryMap, UcxRemoteKey };
