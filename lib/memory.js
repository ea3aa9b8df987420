// @ts-check
'use strict';
// `_Memory` and its subclasses `MemoryUSMDevice`, `MemoryUSMHost`, `MemoryUSMShared`,
// and `asUsmMemory`: plain JS classes over the binding's memory handles. Facts that
// never change (nbytes, kind, pointer, the zero-copy buffer once made) are fields;
// options and `__sycl_usm_array_interface__` dictionaries are read here, before the
// binding is called, so no user code runs while the binding holds a raw pointer.
const { native, own, MEMORY_HANDLE, KIND, KIND_NAMES } = require('./native.js');
const { ErrorCode, makeError, typeError, rangeError, fromNative, settle, invalidThis, MEMORY_CLONE_GUARD, BINDING, fillMessage } = require('./errors.js');
const { isHostBuffer, display, typeName, nbytesArg, alignmentArg, fillValueArg, boolArg, hostArg, isArray, isRevoked, listOf, readOptions: readNamed } = require('./values.js');
const devices = require('./device.js');
const { prefetchArgs, adviseArgs, runHint } = require('./hints.js');
const { shareToken, openToken } = require('./share.js');
const observe = require('./observe.js');

const { INTERNAL, SyclQueue, cachedQueue, cachedQueueObject, queueHandle, contextHandle, isQueue, isContext, isDevice } = devices;
const { ArrayBuffer, Uint8Array, Object, WeakMap, Symbol, Reflect, BigInt, Array } = globalThis;
const apply = Reflect.apply;
const setPrototypeOf = Object.setPrototypeOf;
const getPrototypeOf = Object.getPrototypeOf;
const isPrototypeOf = Object.prototype.isPrototypeOf;
// Methods of collections, called through `apply`: a replaced prototype method changes nothing.
const weakMapSet = WeakMap.prototype.set;
const bigintToString = BigInt.prototype.toString;
const { allocUnsafeSlow } = require('node:buffer').Buffer;

const SUAI = '__sycl_usm_array_interface__';
const { DEVICE, SHARED, HOST } = KIND;
const MAX_BUFFER_LENGTH = native.maxBufferLength();
// Longest interface list the binding reads (a longer one is refused: only its length is copied).
const MAX_LIST = BINDING.maxList;
const inspect = Symbol.for('nodejs.util.inspect.custom');
const dispose = Symbol.dispose ?? Symbol.for('nodejs.dispose');

/** Keeps an exporter alive as long as the zero-copy buffer over its memory. */
const bufferOwners = new WeakMap();

/** `_Memory.#live` for the subclasses' own methods (set in `_Memory`'s static block). */
let checkedHandle;
/** `nbytes` of a memory object, read from its own field (no getter of a subclass runs). */
let sizeOf;

let defaultQueueObject;
const defaultQueue = () => (defaultQueueObject ??= cachedQueue(undefined));

const freedError = () => makeError('Error', BINDING.messages.freed, ErrorCode.UsmFreed);
const tooLarge = (nbytes) =>
  rangeError(fillMessage(BINDING.messages.bufferTooLarge, { nbytes, max_len: MAX_BUFFER_LENGTH }), ErrorCode.HostBufferTooLarge);
const notUsm = (value) => typeError(`Argument ${display(value)} does not expose \`${SUAI}\`.`, ErrorCode.NotUsm);

/** A constructor given host data: memory is allocated by size, then filled. */
const CLASS_NAMES = [undefined, 'MemoryUSMDevice', 'MemoryUSMShared', 'MemoryUSMHost'];
const hostDataSource = (kind) =>
  typeError(
    `The argument is host memory (an ArrayBuffer, SharedArrayBuffer or view), not USM memory: it does not expose ` +
      `\`${SUAI}\`. Memory is allocated by size and then filled: ` +
      `\`const m = new ${CLASS_NAMES[kind]}(src.byteLength); m.copyFromHost(src)\`.`,
    ErrorCode.NotUsm,
  );

/** What an async method without a result resolves to. */
const noValue = () => undefined;

const NO_OPTIONS = Object.freeze({ alignment: 0, queue: undefined, copy: false });

/** Whether an option was given a value (`undefined` and `null` mean the default). */
const given = (value) => value !== undefined && value !== null;

/** The readers of the memory constructors' options (`undefined`: the default). */
const MEMORY_OPTIONS = Object.freeze({
  alignment: (value) => (given(value) ? alignmentArg(value) : undefined),
  queue: (value) => {
    if (given(value) && !isQueue(value)) throw typeError(`queue must be a SyclQueue, not ${display(value)}`);
    return given(value) ? value : undefined;
  },
  copy: (value) => (given(value) ? boolArg(value, 'copy') : undefined),
});

/** `{ alignment?, queue?, copy? }`: own enumerable properties only, unknown names refused. */
function readOptions(options) {
  if (options === undefined || options === null) return NO_OPTIONS;
  if (typeof options === 'number' || typeof options === 'bigint') {
    // dpctl's positional form, MemoryUSMShared(nbytes, alignment).
    throw typeError(`options must be an object, not ${typeName(options)}: for an alignment, pass { alignment: ${display(options)} }`);
  }
  if (typeof options !== 'object') throw typeError(`options must be an object, not ${typeName(options)}`);
  if (isRevoked(options)) throw typeError('options must be a plain object, not a revoked Proxy');
  if (isArray(options)) throw typeError('options must be a plain object, not an array');
  if (isQueue(options) || isContext(options) || isDevice(options) || isMemory(options)) {
    throw typeError('options must be a plain object such as { queue }, not a SyclQueue, SyclContext, SyclDevice or memory object');
  }
  const read = readNamed(options, MEMORY_OPTIONS, (name) => `unknown option '${name}': the options are alignment, queue and copy`);
  return { alignment: read.alignment ?? 0, queue: read.queue, copy: read.copy ?? false };
}

/** A plain copy of an interface field the binding can read without running user code. */
function plainField(value, depth = 0) {
  if (typeof value === 'function') return plainFunction;
  if (typeof value !== 'object' || value === null) return value;
  if (!isArray(value)) return plainObject;
  if (depth > 0) return plainArray;
  const length = value.length;
  // Only the length of a list this long matters (the binding refuses it).
  if (length > MAX_LIST) return new Array(length);
  return listOf(length, (i) => plainField(value[i], 1));
}
const plainFunction = () => {};
const plainObject = {};
const plainArray = [];

/** The memory an exporter's interface describes: a new handle, with its queue object. */
function consumeInterface(exporter) {
  const iface = exporter[SUAI];
  if (typeof iface !== 'object' || iface === null || isArray(iface) || isRevoked(iface)) {
    throw typeError(`Argument ${display(exporter)} does not correctly expose \`${SUAI}\`: it must be an object.`, ErrorCode.SuaiMalformed);
  }
  const syclobj = iface.syclobj;
  const offset = plainField(iface.offset);
  const version = plainField(iface.version);
  const data = plainField(iface.data);
  const shape = plainField(iface.shape);
  const typestr = plainField(iface.typestr);
  const strides = plainField(iface.strides);
  const queue = isQueue(syclobj) ? queueHandle(syclobj) : undefined;
  const context = isContext(syclobj) ? contextHandle(syclobj) : undefined;
  const filter = typeof syclobj === 'string' ? syclobj : undefined;
  let handle;
  try {
    const shown = queue !== undefined ? 'a SyclQueue' : context !== undefined ? 'a SyclContext' : display(syclobj);
    handle = native.memConsume({ offset, version, data, shape, typestr, strides }, { present: syclobj !== undefined, queue, context, filter, shown });
  } catch (error) {
    throw fromNative(error);
  }
  let queueObject;
  if (queue !== undefined) {
    queueObject = syclobj;
  } else if (filter !== undefined) {
    // The binding resolved the filter to the device's cached queue.
    queueObject = cachedQueueObject(native.memQueue(handle));
  } else {
    queueObject = new SyclQueue(INTERNAL, native.memQueue(handle));
  }
  return { handle, queue: queueObject, reference: exporter, facts: factsOf(handle), temporary: true };
}

/**
 * `{ nbytes, pointer, kind, readOnly }` of a memory handle (the binding's `memFacts` is
 * `[nbytes, kind, readOnly]`). `pointer` may be `undefined`: the memory object made from
 * the facts reads it (`memPointer`) when it is first asked.
 * @typedef {{ nbytes: number, pointer: bigint | undefined, kind: number, readOnly: boolean }} MemoryFacts
 * @returns {MemoryFacts}
 */
function factsOf(handle) {
  const facts = native.memFacts(handle);
  return { nbytes: facts[0], pointer: undefined, kind: facts[1], readOnly: facts[2] === 1 };
}

/**
 * Memory objects whose handle is not yet tied to the FinalizationRegistry (the GC
 * fallback). Registering costs about as much as a pooled allocation itself, and an object
 * freed before the next microtask, or before 64 more allocations, never needs it. Until
 * it is tied, this list holds the object, so it cannot be collected unregistered.
 */
const UNTIED_MAX = 64;
// Own slots made at load: writing them later consults no prototype setter.
const untied = listOf(UNTIED_MAX, () => null);
let untiedCount = 0;
let tieScheduled = false;
// A bare vm context has no queueMicrotask: a resolved Promise runs the same turn.
const resolved = globalThis.Promise.resolve();
const queueMicrotask = typeof globalThis.queueMicrotask === 'function' ? globalThis.queueMicrotask : (task) => resolved.then(task);

function tieLater(object) {
  untied[untiedCount++] = object;
  if (untiedCount === UNTIED_MAX) {
    tieAll();
  } else if (!tieScheduled) {
    tieScheduled = true;
    queueMicrotask(tieAll);
  }
}

function tieAll() {
  tieScheduled = false;
  for (let i = 0; i < untiedCount; i++) {
    const object = untied[i];
    untied[i] = null;
    const handle = liveHandle(object);
    if (handle !== null) own(object, MEMORY_HANDLE, handle);
  }
  untiedCount = 0;
}

/**
 * The memory behind a memory object or an interface: its handle, queue, what keeps it
 * alive, its facts, and whether the handle was made for this one use.
 * @typedef {{ handle: number, queue: object, reference: unknown, facts: MemoryFacts, temporary: boolean }} MemorySource
 * @type {(value: any) => MemorySource}
 */
let memorySource;
let isMemory;
let liveHandle;

/** What all three memory classes share (dpctl's `_Memory`); not constructible itself. */
class _Memory {
  __dpctlMemoryCloneGuard__ = MEMORY_CLONE_GUARD;
  #handle = null;
  #kind = 0;
  #nbytes = 0;
  #pointer;
  #readOnly = false;
  #queue;
  #reference = null;
  #buffer;
  #sharedBuffer;

  // `stack`: the allocating call's JS stack, captured by the class's constructor
  // (`observe.entryStack`) while a history records stacks.
  constructor(kind, source, options, stack) {
    if (new.target === _Memory) {
      throw typeError('_Memory cannot be constructed: use MemoryUSMDevice, MemoryUSMHost or MemoryUSMShared', ErrorCode.ConstructCallRequired);
    }
    this.#kind = kind;
    // The package's own construction (`INTERNAL`, a token only this package holds) names
    // the class of the kind itself: it skips the check below.
    if (source === INTERNAL) {
      this.#adopt(options);
      return;
    }
    // `Reflect.construct(_Memory, [kind, ...], NewTarget)` (or a subclass constructed with
    // another class's new.target) would make an object whose class says one kind while
    // it holds another: the object must inherit from its kind's class, and from no other.
    if (!ofKindClass(this, kind)) {
      throw typeError(
        'a memory object must be constructed as the class of its kind (new.target is not MemoryUSMDevice, MemoryUSMHost or MemoryUSMShared, or not the one of this kind)',
        ErrorCode.ConstructCallRequired,
      );
    }
    const opts = readOptions(options);
    if (typeof source === 'number' || typeof source === 'bigint') {
      const nbytes = nbytesArg(source);
      const queue = opts.queue ?? defaultQueue();
      if (observe.watching()) {
        const queueId = queueHandle(queue);
        this.#handle = observe.allocation(null, kind, nbytes, queue, new.target, stack, queueId, opts.alignment);
        tieLater(this);
      } else {
        try {
          this.#handle = native.memAllocate(queueHandle(queue), kind, nbytes, opts.alignment);
          tieLater(this);
        } catch (error) {
          throw fromNative(error);
        }
      }
      this.#nbytes = nbytes;
      this.#queue = queue;
      return;
    }
    if ((typeof source !== 'object' || source === null) && typeof source !== 'function') {
      throw typeError(
        `expected a byte count (number or bigint) or an object exposing ${SUAI}, got ${typeName(source)}`,
      );
    }
    if (isHostBuffer(source)) throw hostDataSource(kind);
    const from = memorySource(source);
    const queue = opts.queue ?? defaultQueue();
    let handle;
    try {
      if (opts.copy && from.facts.kind !== kind && observe.watching()) {
        // A conversion allocates.
        const queueId = queueHandle(queue);
        handle = observe.allocation(() => native.memAdopt(from.handle, kind, true, queueId), kind, from.facts.nbytes, queue, new.target, undefined);
      } else {
        handle = native.memAdopt(from.handle, kind, opts.copy, queueHandle(queue));
      }
    } catch (error) {
      throw observe.isConverted(error) ? error : fromNative(error);
    } finally {
      release(from);
    }
    // The binding copies exactly when the kinds differ.
    const copied = from.facts.kind !== kind;
    this.#adopt({
      handle,
      queue: copied ? queue : from.queue,
      reference: copied ? null : from.reference,
      facts: copied ? factsOf(handle) : from.facts,
    });
  }

  #adopt({ handle, queue, reference, facts }) {
    this.#handle = handle;
    tieLater(this);
    this.#queue = queue;
    this.#reference = reference;
    this.#nbytes = facts.nbytes;
    this.#pointer = facts.pointer;
    this.#readOnly = facts.readOnly;
  }

  /** The live handle, after checking `self` is a memory object that is not freed. */
  static {
    checkedHandle = (self, member) => _Memory.#live(self, member);
    sizeOf = (memory) => memory.#nbytes;
  }

  static #live(self, member) {
    if (typeof self !== 'object' || self === null || !(#handle in self)) throw invalidThis('_Memory', member);
    const handle = self.#handle;
    if (handle === null) throw freedError();
    return handle;
  }

  /** Extent of this USM buffer in bytes. */
  get nbytes() {
    _Memory.#live(this, 'nbytes');
    return this.#nbytes;
  }
  /** Extent of this USM buffer in bytes (same as `nbytes`). */
  get size() {
    _Memory.#live(this, 'size');
    return this.#nbytes;
  }
  /** The USM address as a bigint. */
  get pointer() {
    const handle = _Memory.#live(this, 'pointer');
    return (this.#pointer ??= native.memPointer(handle));
  }
  /** The object that keeps this memory alive (the exporter it was made from), or `null`. */
  get referenceObj() {
    _Memory.#live(this, 'referenceObj');
    return this.#reference;
  }
  get syclQueue() {
    _Memory.#live(this, 'syclQueue');
    return this.#queue;
  }
  get syclContext() {
    _Memory.#live(this, 'syclContext');
    return this.#queue.syclContext;
  }
  get syclDevice() {
    _Memory.#live(this, 'syclDevice');
    return this.#queue.syclDevice;
  }

  /**
   * The zero-copy `ArrayBuffer` over host or shared memory: the same object on every
   * read, detached by `free()`. Throws for device memory.
   */
  get buffer() {
    const handle = _Memory.#live(this, 'buffer');
    if (this.#buffer !== undefined) return this.#buffer;
    let buffer;
    try {
      buffer = native.memBuffer(handle);
    } catch (error) {
      throw fromNative(error);
    }
    // The binding made the buffer in its own realm: give it this realm's prototype, so
    // that `instanceof ArrayBuffer` holds wherever the package was loaded (vm contexts).
    // Read first: setting a prototype it already has still costs a map change.
    if (getPrototypeOf(buffer) !== ArrayBuffer.prototype) setPrototypeOf(buffer, ArrayBuffer.prototype);
    if (this.#reference !== null) apply(weakMapSet, bufferOwners, [buffer, this.#reference]);
    this.#buffer = buffer;
    return buffer;
  }

  /**
   * A `SharedArrayBuffer` over host or shared memory, the same object on every read: post
   * it to workers (`postMessage`), view it with any TypedArray there, use `Atomics` on it.
   * `free()` cannot take it back from other threads: the memory stays until every thread
   * has dropped it. Throws for device memory, for memory another library owns, and on a
   * Node without external SharedArrayBuffers (`ERR_SHARED_BUFFER_UNSUPPORTED`).
   */
  get sharedBuffer() {
    const handle = _Memory.#live(this, 'sharedBuffer');
    if (this.#sharedBuffer !== undefined) return this.#sharedBuffer;
    let buffer;
    try {
      buffer = native.memSharedBuffer(handle);
    } catch (error) {
      throw fromNative(error);
    }
    // As for `buffer`: this realm's prototype wherever the package was loaded.
    if (getPrototypeOf(buffer) !== SharedArrayBuffer.prototype) setPrototypeOf(buffer, SharedArrayBuffer.prototype);
    this.#sharedBuffer = buffer;
    return buffer;
  }

  /** `'device'`, `'shared'`, `'host'` or `'unknown'`, in the context of `syclobj` or its own. */
  getUsmType(syclobj) {
    return KIND_NAMES[_Memory.#usmKind(this, syclobj, 'getUsmType')];
  }
  /** dpctl's enum value of `getUsmType()`: unknown 0, device 1, shared 2, host 3. */
  getUsmTypeEnum(syclobj) {
    return _Memory.#usmKind(this, syclobj, 'getUsmTypeEnum');
  }
  static #usmKind(self, syclobj, member) {
    const handle = _Memory.#live(self, member);
    let context;
    if (isQueue(syclobj)) context = contextHandle(syclobj.syclContext);
    else if (isContext(syclobj)) context = contextHandle(syclobj);
    else if (syclobj !== undefined && syclobj !== null) {
      throw typeError('syclobj keyword can be either None, or an instance of SyclContext or SyclQueue', ErrorCode.InvalidSyclobj);
    }
    if (context === undefined) return self.#kind;
    return native.memKind(handle, context);
  }

  /** Copies the memory into `dst` (at least `nbytes` long) and returns it; else into a new `Uint8Array`. */
  copyToHost(dst) {
    const handle = _Memory.#live(this, 'copyToHost');
    const target = this.#destination(dst);
    const bytes = hostArg(target, 'dst');
    try {
      if (observe.subscribed(observe.channels.copy)) observe.traceCopy('copyToHost', this, this.#nbytes, () => native.memCopyToHost(handle, bytes));
      else native.memCopyToHost(handle, bytes);
    } catch (error) {
      throw fromNative(error);
    }
    return target;
  }
  #destination(dst) {
    if (dst !== undefined && dst !== null) return dst;
    if (this.#nbytes > MAX_BUFFER_LENGTH) throw tooLarge(this.#nbytes);
    return new Uint8Array(this.#nbytes);
  }
  /** Writes all of `src` (at most `nbytes` long) at offset 0. */
  copyFromHost(src) {
    const handle = _Memory.#live(this, 'copyFromHost');
    const bytes = hostArg(src, 'src');
    try {
      if (observe.subscribed(observe.channels.copy)) observe.traceCopy('copyFromHost', this, bytes.byteLength, () => native.memCopyFromHost(handle, bytes));
      else native.memCopyFromHost(handle, bytes);
    } catch (error) {
      throw fromNative(error);
    }
  }
  /** Copies all of `src` (a memory object or any exporter) to offset 0. */
  copyFromDevice(src) {
    const handle = _Memory.#live(this, 'copyFromDevice');
    // One of ours is copied by its handle: no interface to read, nothing to release.
    const own = isMemory(src);
    const from = own ? undefined : deviceSource(src);
    const source = own ? _Memory.#live(src, 'memory source') : from.handle;
    try {
      if (observe.subscribed(observe.channels.copy)) observe.traceCopy('copyFromDevice', this, own ? src.#nbytes : from.facts.nbytes, () => native.memCopyFromDevice(handle, source));
      else native.memCopyFromDevice(handle, source);
    } catch (error) {
      throw fromNative(error);
    } finally {
      if (from !== undefined) release(from);
    }
  }
  /** Fills the memory with the byte `value` (an integer 0..255, default 0). */
  memset(value) {
    const handle = _Memory.#live(this, 'memset');
    const byte = fillValueArg(value);
    try {
      if (observe.subscribed(observe.channels.copy)) observe.traceCopy('memset', this, this.#nbytes, () => native.memMemset(handle, byte));
      else native.memMemset(handle, byte);
    } catch (error) {
      throw fromNative(error);
    }
  }

  /**
   * `copyToHost` off the main thread: resolves to `dst` (or a new `Uint8Array`). The
   * memory and `dst` stay alive until then, even if this object is freed meanwhile.
   */
  copyToHostAsync(dst) {
    const handle = _Memory.#live(this, 'copyToHostAsync');
    const target = this.#destination(dst);
    const bytes = hostArg(target, 'dst');
    if (observe.subscribed(observe.channels.copy)) {
      return observe.tracePromise('copyToHostAsync', this, this.#nbytes, () => settle(() => native.memCopyToHostAsync(handle, bytes), () => target, [this, target]));
    }
    return settle(() => native.memCopyToHostAsync(handle, bytes), () => target, [this, target]);
  }
  /** `copyFromHost` off the main thread; `src` stays alive until it settles. */
  copyFromHostAsync(src) {
    const handle = _Memory.#live(this, 'copyFromHostAsync');
    const bytes = hostArg(src, 'src');
    if (observe.subscribed(observe.channels.copy)) {
      return observe.tracePromise('copyFromHostAsync', this, bytes.byteLength, () => settle(() => native.memCopyFromHostAsync(handle, bytes), noValue, [this, src]));
    }
    return settle(() => native.memCopyFromHostAsync(handle, bytes), noValue, [this, src]);
  }
  /** `copyFromDevice` off the main thread; both memories stay alive until it settles. */
  copyFromDeviceAsync(src) {
    const handle = _Memory.#live(this, 'copyFromDeviceAsync');
    const from = deviceSource(src);
    try {
      if (observe.subscribed(observe.channels.copy)) {
        return observe.tracePromise('copyFromDeviceAsync', this, from.facts.nbytes, () => settle(() => native.memCopyFromDeviceAsync(handle, from.handle), noValue, [this, src]));
      }
      return settle(() => native.memCopyFromDeviceAsync(handle, from.handle), noValue, [this, src]);
    } finally {
      // The task holds the source memory itself.
      release(from);
    }
  }
  /** `memset` off the main thread. */
  memsetAsync(value) {
    const handle = _Memory.#live(this, 'memsetAsync');
    const byte = fillValueArg(value);
    if (observe.subscribed(observe.channels.copy)) {
      return observe.tracePromise('memsetAsync', this, this.#nbytes, () => settle(() => native.memMemsetAsync(handle, byte), noValue, [this]));
    }
    return settle(() => native.memMemsetAsync(handle, byte), noValue, [this]);
  }

  /**
   * A copy of the memory as a `Buffer` of its own: `bytes.buffer` is exactly `nbytes`
   * long (never a slice of Node's shared pool, which `Buffer.allocUnsafe` gives for small
   * sizes), as `copyToHost()`'s `Uint8Array` is.
   */
  toBytes() {
    const handle = _Memory.#live(this, 'toBytes');
    if (this.#nbytes > MAX_BUFFER_LENGTH) throw tooLarge(this.#nbytes);
    // Every byte is written by the copy before the Buffer is returned.
    const bytes = allocUnsafeSlow(this.#nbytes);
    try {
      native.memCopyToHost(handle, bytes);
    } catch (error) {
      throw fromNative(error);
    }
    return bytes;
  }

  /** `{ data: [pointer, readOnly], shape: [nbytes], strides: null, typestr: '|u1', version: 1, syclobj }`, new on every read. */
  get [SUAI]() {
    _Memory.#live(this, SUAI);
    return { data: [this.pointer, this.#readOnly], shape: [this.#nbytes], strides: null, typestr: '|u1', version: 1, syclobj: this.#queue };
  }

  /**
   * A token that another thread (or this one) opens with `openShared(token)` into a
   * memory object of its own over the same allocation: a frozen plain object, which
   * `postMessage` carries. It holds the allocation until it is opened, revoked
   * (`revokeShared`) or its `timeout` (ms, default 30 s) passes; it opens once.
   */
  share(options) {
    const handle = _Memory.#live(this, 'share');
    return shareToken(handle, KIND_NAMES[this.#kind], this.#nbytes, options);
  }

  /**
   * Releases this object's reference to the memory now, and detaches its `buffer` so
   * no TypedArray can touch the memory again. Idempotent; every later use throws
   * `ERR_USM_FREED`. Views made from this object keep the memory alive until they are
   * freed too.
   */
  free() {
    if (typeof this !== 'object' || this === null || !(#handle in this)) throw invalidThis('_Memory', 'free');
    const handle = this.#handle;
    if (handle === null) return;
    if (observe.subscribed(observe.channels.free)) observe.traceFree(this, this.#kind, this.#nbytes, handle);
    else native.memFree(handle);
    this.#handle = null;
    this.#buffer = undefined;
    this.#sharedBuffer = undefined;
    this.#queue = undefined;
    this.#reference = null;
  }
  /** Same as `free()`, for `using` declarations. */
  [dispose]() {
    if (typeof this !== 'object' || this === null || !(#handle in this)) throw invalidThis('_Memory', 'Symbol.dispose');
    this.free();
  }

  /** `<SYCL(TM) USM-device allocation of 16 bytes at 0x…>`, as dpctl's repr. */
  toString() {
    if (typeof this !== 'object' || this === null || !(#handle in this)) throw invalidThis('_Memory', 'toString');
    const kind = KIND_NAMES[this.#kind];
    if (this.#handle === null) return `<SYCL(TM) USM-${kind} allocation (freed)>`;
    return `<SYCL(TM) USM-${kind} allocation of ${this.#nbytes} bytes at 0x${apply(bigintToString, this.pointer, [16])}>`;
  }
  [inspect]() {
    return this.toString();
  }
  /** `JSON.stringify` writes the repr (the clone guard is for structured clone only). */
  toJSON() {
    return apply(_Memory.prototype.toString, this, []);
  }

  static {
    liveHandle = (memory) => memory.#handle;
    isMemory = (value) => typeof value === 'object' && value !== null && #handle in value;
    memorySource = (value) => {
      if (isMemory(value)) {
        const handle = _Memory.#live(value, 'memory source');
        const facts = { nbytes: value.#nbytes, pointer: value.#pointer, kind: value.#kind, readOnly: value.#readOnly };
        return { handle, queue: value.#queue, reference: value.#reference, facts, temporary: false };
      }
      if (isRevoked(value) || !(SUAI in value)) throw notUsm(value);
      return consumeInterface(value);
    };
  }
}

/**
 * Lets go of the handle a consumed interface gave at once, so that only the objects
 * made from it hold the memory (not a handle waiting for GC).
 */
function release(from) {
  if (from.temporary) native.memFree(from.handle);
}

/** The source of `copyFromDevice[Async]`, with `copy_from_device`'s own argument check. */
function deviceSource(src) {
  const object = (typeof src === 'object' && src !== null) || typeof src === 'function';
  if (!object || (!isMemory(src) && (isRevoked(src) || !(SUAI in src)))) {
    throw typeError(`Object does not implement \`${SUAI}\` protocol`, ErrorCode.NotUsm);
  }
  return memorySource(src);
}

/** USM device memory: reachable from the host only through copies. */
class MemoryUSMDevice extends _Memory {
  /**
   * `new MemoryUSMDevice(nbytes, { alignment?, queue? })` allocates; `new
   * MemoryUSMDevice(usmObj, { copy?, queue? })` views `usmObj`'s memory when it is of
   * this kind, or copies it with `copy: true`.
   */
  constructor(source, options) {
    super(DEVICE, source, options, observe.sendsStacks() && (typeof source === 'number' || typeof source === 'bigint') ? observe.entryStack(new.target) : undefined);
  }
}

/** USM host memory: host memory the device can reach; `buffer` views it with no copy. */
class MemoryUSMHost extends _Memory {
  /** As `MemoryUSMDevice`, for USM host memory. */
  constructor(source, options) {
    super(HOST, source, options, observe.sendsStacks() && (typeof source === 'number' || typeof source === 'bigint') ? observe.entryStack(new.target) : undefined);
  }
}

/** USM shared memory: migrates between host and device; `buffer` views it with no copy. */
class MemoryUSMShared extends _Memory {
  /** As `MemoryUSMDevice`, for USM shared memory. */
  constructor(source, options) {
    super(SHARED, source, options, observe.sendsStacks() && (typeof source === 'number' || typeof source === 'bigint') ? observe.entryStack(new.target) : undefined);
  }
  /**
   * Migrates the memory to the device (`to: 'device'`, the default) or the host, and
   * resolves to `{ applied }`: whether the runtime acted on it (`false` where it does
   * nothing, as on the OpenCL CPU device).
   */
  prefetch(options) {
    const handle = checkedHandle(this, 'prefetch');
    const toHost = prefetchArgs(options);
    return runHint(() => native.memPrefetch(handle, toHost), this);
  }
  /** A usage hint (`'read-mostly'`, `'preferred-location'`, `'accessed-by'` and their `unset-` forms); resolves to `{ applied }`. */
  memAdvise(advice, options) {
    const handle = checkedHandle(this, 'memAdvise');
    const args = adviseArgs(advice, options);
    const name = args[0];
    const toHost = args[1];
    return runHint(() => native.memAdvise(handle, name, toHost), this);
  }
}

const CLASS_OF_KIND = [undefined, MemoryUSMDevice, MemoryUSMShared, MemoryUSMHost];
const PROTOTYPE_OF_KIND = [undefined, MemoryUSMDevice.prototype, MemoryUSMShared.prototype, MemoryUSMHost.prototype];

/** Whether `object` inherits from the class of USM kind `kind` and from no other kind's class. */
function ofKindClass(object, kind) {
  if (kind !== DEVICE && kind !== SHARED && kind !== HOST) return false;
  for (let k = DEVICE; k <= HOST; k++) {
    // A Proxy in the prototype chain runs a trap here: its errors are refusals too.
    let inherits;
    try {
      inherits = apply(isPrototypeOf, PROTOTYPE_OF_KIND[k], [object]);
    } catch {
      return false;
    }
    if (inherits !== (k === kind)) return false;
  }
  return true;
}

/** The memory `obj` exposes, in the class of its USM kind, without copying. */
function asUsmMemory(obj) {
  if ((typeof obj !== 'object' || obj === null) && typeof obj !== 'function') throw notUsm(obj);
  const from = memorySource(obj);
  const kind = from.facts.kind;
  const Class = CLASS_OF_KIND[kind];
  if (Class === undefined) {
    throw makeError('Error', `Could not determine the type USM allocation represented by argument ${display(obj)}`, ErrorCode.UnknownUsmType);
  }
  const handle = isMemory(obj) ? native.memView(from.handle) : from.handle;
  return new Class(INTERNAL, { handle, queue: from.queue, reference: from.reference, facts: from.facts });
}

/**
 * Opens a token of `mem.share()` (from any thread of this process) into a memory object
 * of its kind over the same allocation, with a `buffer` of its own for host and shared
 * memory. The new object holds the allocation until it is freed (or collected, or its
 * thread exits). A token opens once.
 */
function openShared(token) {
  const opened = openToken(token);
  return new CLASS_OF_KIND[opened.kind](INTERNAL, opened);
}

module.exports = {
  _Memory,
  MemoryUSMDevice,
  MemoryUSMHost,
  MemoryUSMShared,
  asUsmMemory,
  openShared,
  isMemory: (value) => isMemory(value),
  memorySource: (value) => memorySource(value),
  checkedHandle: (self, member) => checkedHandle(self, member),
  sizeOf: (memory) => sizeOf(memory),
};
