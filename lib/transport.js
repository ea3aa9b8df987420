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
const { display, hostArg } = require('./values.js');
const memory = require('./memory.js');

const { isMemory, memorySource } = memory;
const { Object, Map, Promise, JSON, BigInt, Number, Error, setImmediate } = globalThis;
const { isArray } = Array;
const keys = Object.keys;
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
  const state = { token: 0, ops: new Map(), listeners: new Map(), endpoints: new Map(), scheduled: false, records: new Float64Array(1 + RECORD_SLOTS * RECORDS) };
  try {
    state.token = native.ucxStart(() => drain(state), SPIN_US);
  } catch (error) {
    throw fromNative(error);
  }
  worker = state;
  return state;
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
    else listener._accepted(endpoint);
  } else if (event.failed !== undefined) {
    const endpoint = state.endpoints.get(event.failed);
    if (endpoint !== undefined) endpoint._failed();
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

function optionsObject(options, what, names) {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || isArray(options)) {
    throw typeError(`${what} options must be a plain object, not ${display(options)}`);
  }
  const out = {};
  const given = keys(options);
  for (let i = 0; i < given.length; i++) {
    const name = given[i];
    if (!names.includes(name)) {
      throw typeError(`unknown option '${String(name).slice(0, 64)}': the options of ${what} are ${names.join(', ')}`);
    }
    out[name] = options[name];
  }
  return out;
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
  if (typeof value !== 'string' || value.length === 0) throw typeError(`${what} must be a non-empty string (an IP address), not ${display(value)}`);
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

/** The other side of a connection: tagged messages, remote memory access, close. */
class UcxEndpoint {
  #state;
  #id;
  #peer;
  #closed = null;

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

  /** The address this endpoint connected to ('a client' for an accepted one). */
  get peer() {
    return UcxEndpoint.#live(this, 'peer').#peer;
  }

  /** Sends `source` (a memory object, or a host buffer) as one message with `tag`. */
  send(source, options) {
    const self = UcxEndpoint.#live(this, 'send');
    try {
      const { tag } = optionsObject(options, 'send', ['tag']);
      const tagValue = tagArg(tag, 'tag', 0n);
      const id = call(native.ucxSend, self.#state.token, self.#id, fastOperand(source, 'source'), tagValue);
      return id === 0 ? Promise.resolve() : pending(self.#state, id, source);
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
    const self = UcxEndpoint.#live(this, 'recv');
    try {
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
    const self = UcxEndpoint.#live(this, 'unpackRemoteKey');
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
    const self = UcxEndpoint.#live(this, member);
    try {
      const { offset } = optionsObject(options, member, ['offset']);
      const at = offset === undefined ? 0 : offset;
      if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 0) throw rangeError(`offset must be a non-negative integer, not ${display(at)}`, ErrorCode.InvalidArgValue);
      if (!(key instanceof UcxRemoteKey)) throw typeError(`key must be a UcxRemoteKey, not ${display(key)}`);
      const [handle, host] = operandArg(buffer, write ? 'source' : 'destination');
      const rkey = key._id();
      return operation(self.#state, () => native.ucxRma(self.#state.token, write, rkey, at, handle, host), [buffer, key]);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Resolves when every operation posted on this endpoint has completed at the peer. */
  flush() {
    const self = UcxEndpoint.#live(this, 'flush');
    try {
      return operation(self.#state, () => native.ucxFlush(self.#state.token, self.#id), null);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Closes the endpoint: sends are flushed first (unless `force`); what is still pending
   * then (receives, sends the flush did not finish) rejects with ERR_UCX_ENDPOINT_CLOSED.
   * Idempotent: resolves when it is closed.
   */
  close(options) {
    const self = UcxEndpoint.#live(this, 'close');
    if (self.#closed !== null) return self.#closed;
    let force;
    try {
      force = optionsObject(options, 'close', ['force']).force === true;
    } catch (error) {
      return Promise.reject(error);
    }
    const state = self.#state;
    // A graceful close is a flush, then UCX's forced close: UCX's own flushing close can
    // leave the connection's sockets open after both sides closed.
    const flushed = force ? Promise.resolve() : self.flush().catch(() => {});
    self.#closed = flushed.then(() => {
      let id;
      try {
        id = call(native.ucxClose, state.token, self.#id, true);
      } catch {
        return undefined;
      }
      if (id < 0) return undefined;
      return new Promise((resolve) => {
        // A close completes even when the peer is gone: it never rejects.
        state.ops.set(id, { resolve: () => resolve(), reject: () => resolve(), operands: null, tag: null, exact: false });
        schedule(state);
      });
    }).then(() => {
      state.endpoints.delete(self.#id);
    });
    return self.#closed;
  }

  /** The binding saw the endpoint fail: its pending operations reject (ERR_UCX_PEER_FAILED). */
  _failed() {
    this.#state.endpoints.delete(this.#id);
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

  _accepted(endpoint) {
    if (this.#waiting.length > 0) this.#waiting.shift().resolve(endpoint);
    else this.#queue.push(endpoint);
  }

  /** Stops listening; waiting `accept()`s reject with ERR_UCX_ENDPOINT_CLOSED. Idempotent. */
  close() {
    const self = UcxListener.#live(this, 'close');
    if (!self.#open) return;
    self.#open = false;
    call(native.ucxCloseListener, self.#state.token, self.#id);
    self.#state.listeners.delete(self.#id);
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

  _id() {
    return this.#id;
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

/** Connects to `{ host, port }`; resolves with the `UcxEndpoint` once the connection is up. */
function connect(options) {
  try {
    const { host, port } = optionsObject(options, 'ucx.connect', ['host', 'port']);
    const address = hostString(host, 'host');
    if (port === undefined) throw typeError('ucx.connect needs a port');
    const wanted = portArg(port, 0);
    const state = ensureWorker();
    const [id, op] = call(native.ucxConnect, state.token, address, wanted);
    const endpoint = new UcxEndpoint(INTERNAL, state, id, `${address}:${wanted}`);
    return new Promise((resolve, reject) => {
      state.ops.set(op, { resolve: () => resolve(endpoint), reject, operands: null, tag: null, exact: false });
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
