// @ts-check
'use strict';
// `SyclDevice`, `SyclContext`, `SyclQueue`, `getDevices`: the subset of dpctl's device
// model that memory needs, as plain JS classes over the binding's handles.
const { native, own, release, DEVICE_HANDLE, CONTEXT_HANDLE, QUEUE_HANDLE } = require('./native.js');
const { typeError, fromNative, callNative, invalidThis, CLONE_GUARD } = require('./errors.js');
const { display, typeName, stringArg, listOf, onlyOption } = require('./values.js');
const peerAccess = require('./peer.js');

const { Map, Reflect, Symbol, Array } = globalThis;
const apply = Reflect.apply;
// Called through `apply`: a replaced prototype method changes nothing.
const mapGet = Map.prototype.get;
const mapSet = Map.prototype.set;
const arrayIncludes = Array.prototype.includes;

/** Module-private: constructs a class around a handle the binding returned. */
const INTERNAL = Symbol('dpctl-memory internal');
const inspect = Symbol.for('nodejs.util.inspect.custom');

let deviceHandle;
let contextHandle;
let queueHandle;
let isDevice;
let isContext;
let isQueue;
let queueContext;

/** A SYCL device: a CPU or GPU that USM memory can live on. */
class SyclDevice {
  __dpctlMemoryCloneGuard__ = CLONE_GUARD;
  #handle;
  #facts;

  /**
   * Selects a device by SYCL filter string (`backend:type:index`, every part optional),
   * or the default device (a GPU if there is one).
   */
  constructor(filter, handle) {
    let id = handle;
    if (filter !== INTERNAL) {
      const text = filter === undefined || filter === null ? undefined : stringArg(filter, 'filter');
      id = callNative(() => native.deviceSelect(text));
    }
    this.#handle = own(this, DEVICE_HANDLE, id);
    this.#facts = factsOf(id);
  }

  static #factsOf(self, member) {
    if (typeof self !== 'object' || self === null || !(#facts in self)) {
      throw invalidThis('SyclDevice', member);
    }
    return self.#facts;
  }

  get name() {
    return SyclDevice.#factsOf(this, 'name').name;
  }
  get vendor() {
    return SyclDevice.#factsOf(this, 'vendor').vendor;
  }
  /** `'opencl'`, `'level_zero'`, `'cuda'`, ... */
  get backend() {
    return SyclDevice.#factsOf(this, 'backend').backend;
  }
  /** `'cpu'`, `'gpu'`, `'accelerator'`, `'custom'` or `'unknown'`. */
  get deviceType() {
    return SyclDevice.#factsOf(this, 'deviceType').deviceType;
  }
  /** The filter string that selects exactly this device, e.g. `'opencl:cpu:0'`. */
  get filterString() {
    return SyclDevice.#factsOf(this, 'filterString').filterString;
  }
  get driverVersion() {
    return SyclDevice.#factsOf(this, 'driverVersion').driverVersion;
  }
  get globalMemSize() {
    return SyclDevice.#factsOf(this, 'globalMemSize').globalMemSize;
  }
  get maxMemAllocSize() {
    return SyclDevice.#factsOf(this, 'maxMemAllocSize').maxMemAllocSize;
  }
  /** Bytes of work-group local memory (dpctl's `local_mem_size`): what the
   * `kernelArg.local` arguments of one submission, with the kernel's own, may take. */
  get localMemSize() {
    return SyclDevice.#factsOf(this, 'localMemSize').localMemSize;
  }
  /** The names of every aspect the device has (a new array on every read). */
  get aspects() {
    const aspects = SyclDevice.#factsOf(this, 'aspects').aspects;
    return listOf(aspects.length, (i) => aspects[i]);
  }
  hasAspect(name) {
    const facts = SyclDevice.#factsOf(this, 'hasAspect');
    return apply(arrayIncludes, facts.aspects, [stringArg(name, 'aspect name')]);
  }
  /**
   * Whether programs of `language` build for this device here (dpctl's `can_compile`):
   * `'opencl'`/`'ocl'`, `'spirv'`/`'spv'`, `'sycl'` (SYCL source: the DPC++ 2026 runtime),
   * `'ptx'` or `'cuda'` (CUDA devices; CUDA C where NVRTC is found). Another name is
   * ERR_INVALID_ARG_VALUE.
   */
  canCompile(language) {
    const handle = SyclDevice.#factsOf(this, 'canCompile') && this.#handle;
    const name = stringArg(language, 'language');
    return callNative(() => native.deviceCanCompile(handle, name));
  }
  equals(other) {
    const handle = SyclDevice.#factsOf(this, 'equals') && this.#handle;
    if (!isDevice(other)) throw typeError(`expected a SyclDevice, got ${typeName(other)}`);
    return native.deviceEquals(handle, other.#handle);
  }
  // Peer access (lib/peer.js).
  /**
   * Whether this device can be given access to `peer`'s device memory
   * (`value`: `'access_supported'`, or `'atomics_supported'` for native atomics once
   * enabled). False for a device and itself, and between backends without peer access.
   */
  canAccessPeer(peer, value = 'access_supported') {
    return peerAccess.canAccessPeer(SyclDevice.#peerHandles(this, peer, 'canAccessPeer'), peer.#handle, value);
  }
  /** Lets this device access `peer`'s device memory (enabling twice is no error). */
  enablePeerAccess(peer) {
    peerAccess.enablePeerAccess(SyclDevice.#peerHandles(this, peer, 'enablePeerAccess'), peer.#handle);
  }
  /** Ends what `enablePeerAccess(peer)` began (a pair not enabled is left as it is). */
  disablePeerAccess(peer) {
    peerAccess.disablePeerAccess(SyclDevice.#peerHandles(this, peer, 'disablePeerAccess'), peer.#handle);
  }
  /** This device's handle, once `this` and `peer` are checked (dpctl's TypeError for `peer`). */
  static #peerHandles(self, peer, member) {
    SyclDevice.#factsOf(self, member);
    if (!isDevice(peer)) throw typeError(`peer device must be a SyclDevice, got ${typeName(peer)}`);
    return self.#handle;
  }
  toString() {
    const facts = SyclDevice.#factsOf(this, 'toString');
    return `<SyclDevice ${facts.filterString} '${facts.name}'>`;
  }
  [inspect]() {
    const facts = SyclDevice.#factsOf(this, 'inspect');
    return `SyclDevice { filterString: '${facts.filterString}', name: '${facts.name}' }`;
  }
  /** `JSON.stringify` writes `toString()` (the clone guard is for structured clone only). */
  toJSON() {
    return apply(SyclDevice.prototype.toString, this, []);
  }

  static {
    isDevice = (value) => typeof value === 'object' && value !== null && #handle in value;
    deviceHandle = (device) => device.#handle;
  }
}

const { parse } = JSON;
const { freeze } = Object;

/** A device's facts, parsed from the binding's JSON (own data properties only). */
function factsOf(handle) {
  const facts = parse(native.deviceFacts(handle));
  freeze(facts.aspects);
  return freeze(facts);
}

const devicesOf = (handles) => listOf(handles.length, (i) => new SyclDevice(INTERNAL, handles[i]));

/**
 * A SyclDevice or a filter string, as the device handle the binding takes, with whether
 * the handle is the caller's to give back (a filter string's).
 */
function deviceHandleArg(value) {
  if (isDevice(value)) return { id: deviceHandle(value), temporary: false };
  if (typeof value === 'string') {
    return { id: callNative(() => native.deviceSelect(value)), temporary: true };
  }
  throw typeError(`expected a SyclDevice or a filter string, got ${display(value)}`);
}

/** The devices' filter strings, each in `quote`, joined by `, `. */
function filterList(devices, quote) {
  let text = '';
  for (let i = 0; i < devices.length; i++) text += `${i === 0 ? '' : ', '}${quote}${devices[i].filterString}${quote}`;
  return text;
}

/** A SYCL context: the scope in which USM pointers are valid. */
class SyclContext {
  __dpctlMemoryCloneGuard__ = CLONE_GUARD;
  #handle;
  #devices;

  /**
   * With no argument, the default context of the default device. With a `SyclDevice`
   * or filter string, a new context of its own for that device, as dpctl's.
   */
  constructor(device, handle) {
    if (device === INTERNAL) {
      this.#handle = own(this, CONTEXT_HANDLE, handle);
      return;
    }
    const named = device === undefined || device === null ? undefined : deviceHandleArg(device);
    try {
      const id = named === undefined ? native.contextDefault() : native.deviceCreateContext(named.id);
      this.#handle = own(this, CONTEXT_HANDLE, id);
    } catch (error) {
      throw fromNative(error);
    } finally {
      if (named?.temporary) release(DEVICE_HANDLE, named.id);
    }
  }

  static #handleOf(self, member) {
    if (typeof self !== 'object' || self === null || !(#handle in self)) {
      throw invalidThis('SyclContext', member);
    }
    return self.#handle;
  }

  /** The devices of this context (a new array on every read). */
  get devices() {
    const devices = SyclContext.#devicesOf(this, 'devices');
    return listOf(devices.length, (i) => devices[i]);
  }
  /** How many devices the context holds (dpctl's `device_count`). */
  get deviceCount() {
    return SyclContext.#devicesOf(this, 'deviceCount').length;
  }
  /** The context's devices, read from the binding once. */
  static #devicesOf(self, member) {
    const handle = SyclContext.#handleOf(self, member);
    return (self.#devices ??= devicesOf(native.contextDevices(handle)));
  }
  equals(other) {
    const handle = SyclContext.#handleOf(this, 'equals');
    if (!isContext(other)) throw typeError(`expected a SyclContext, got ${typeName(other)}`);
    return native.contextEquals(handle, other.#handle);
  }
  toString() {
    SyclContext.#handleOf(this, 'toString');
    return `<SyclContext for ${filterList(this.devices, '')}>`;
  }
  [inspect]() {
    SyclContext.#handleOf(this, 'inspect');
    return `SyclContext { devices: [${filterList(this.devices, "'")}] }`;
  }
  /** `JSON.stringify` writes `toString()` (the clone guard is for structured clone only). */
  toJSON() {
    return apply(SyclContext.prototype.toString, this, []);
  }

  static {
    isContext = (value) => typeof value === 'object' && value !== null && #handle in value;
    contextHandle = (context) => context.#handle;
  }
}

/** A SYCL queue: where copies and fills run, and what allocations are made through. */
class SyclQueue {
  __dpctlMemoryCloneGuard__ = CLONE_GUARD;
  #handle;
  #device;
  #context;

  /**
   * `new SyclQueue()`: the default device. `new SyclQueue('gpu')` or
   * `new SyclQueue(device)`: that device, in its default context.
   * `new SyclQueue(context, device?)`: in that context (on its first device if none is
   * given). Throws `SyclQueueCreationError` when no device matches or no runtime is
   * installed.
   */
  constructor(target, device, options) {
    if (target === INTERNAL) {
      this.#handle = own(this, QUEUE_HANDLE, device);
      return;
    }
    const given = (value) => value !== undefined && value !== null;
    // `{ property }` (dpctl's property=): the last argument, when it is a plain object.
    const isOptions = (value) => typeof value === 'object' && value !== null && !isDevice(value) && !isContext(value) && !isQueue(value);
    if (options === undefined && isOptions(device)) {
      options = device;
      device = undefined;
    } else if (options === undefined && device === undefined && isOptions(target)) {
      options = target;
      target = undefined;
    }
    const properties = queueProperties(options);
    let context;
    let deviceArg;
    let filter;
    if (given(target) && isContext(target)) {
      context = contextHandle(target);
      if (given(device)) {
        if (isDevice(device)) deviceArg = deviceHandle(device);
        else if (typeof device === 'string') filter = device;
        else throw typeError(`expected a SyclDevice or a filter string, got ${display(device)}`);
      }
    } else {
      if (given(device)) throw typeError('a device may follow only a SyclContext: new SyclQueue(context, device)');
      if (isDevice(target)) deviceArg = deviceHandle(target);
      else if (typeof target === 'string') filter = target;
      else if (given(target)) throw typeError(`expected a SyclDevice, a SyclContext or a filter string, got ${display(target)}`);
    }
    try {
      const id =
        properties === undefined
          ? native.queueCreate(context, deviceArg, filter)
          : native.queueCreateWith(context, deviceArg, filter, properties);
      this.#handle = own(this, QUEUE_HANDLE, id);
    } catch (error) {
      throw fromNative(error);
    }
  }

  static #handleOf(self, member) {
    if (typeof self !== 'object' || self === null || !(#handle in self)) {
      throw invalidThis('SyclQueue', member);
    }
    return self.#handle;
  }

  get syclDevice() {
    const handle = SyclQueue.#handleOf(this, 'syclDevice');
    return (this.#device ??= new SyclDevice(INTERNAL, native.queueDevice(handle)));
  }
  get syclContext() {
    const handle = SyclQueue.#handleOf(this, 'syclContext');
    return (this.#context ??= new SyclContext(INTERNAL, native.queueContext(handle)));
  }
  /** Waits for everything submitted to the queue. */
  wait() {
    const handle = SyclQueue.#handleOf(this, 'wait');
    try {
      native.queueWait(handle);
    } catch (error) {
      throw fromNative(error);
    }
  }
  equals(other) {
    const handle = SyclQueue.#handleOf(this, 'equals');
    if (!isQueue(other)) throw typeError(`expected a SyclQueue, got ${typeName(other)}`);
    return native.queueEquals(handle, other.#handle);
  }
  toString() {
    SyclQueue.#handleOf(this, 'toString');
    return `<SyclQueue on ${this.syclDevice.filterString}>`;
  }
  [inspect]() {
    SyclQueue.#handleOf(this, 'inspect');
    const device = this.syclDevice;
    return `SyclQueue { device: '${device.filterString}', name: '${device.name}' }`;
  }
  /** `JSON.stringify` writes `toString()` (the clone guard is for structured clone only). */
  toJSON() {
    return apply(SyclQueue.prototype.toString, this, []);
  }

  static {
    isQueue = (value) => typeof value === 'object' && value !== null && #handle in value;
    queueHandle = (queue) => queue.#handle;
    // The cached context object `syclContext` returns, read without the public getter.
    queueContext = (queue) => (queue.#context ??= new SyclContext(INTERNAL, native.queueContext(queue.#handle)));
  }
}

/**
 * The property names of `{ property }` (dpctl's `property=`: `'in_order'`,
 * `'enable_profiling'`, or an array of them), or `undefined` without one.
 */
function queueProperties(options) {
  const property = onlyOption(options, 'property', 'new SyclQueue()');
  if (property === undefined) return undefined;
  if (typeof property === 'string') return [property];
  if (typeName(property) !== 'array') {
    throw typeError(`property must be 'in_order', 'enable_profiling' or an array of them, not ${display(property)}`);
  }
  return listOf(property.length, (i) => {
    const name = property[i];
    if (typeof name !== 'string') throw typeError(`property must hold strings only, not ${display(name)}`);
    return name;
  });
}

/** This realm's `SyclQueue` of each device's cached queue (dpctl's cached queue). */
const cachedQueues = new Map();

/**
 * This realm's `SyclQueue` of the cached queue of `device` (a device handle; the
 * default device when undefined), one object per device.
 */
function cachedQueue(device) {
  let queueId;
  try {
    queueId = native.queueCached(device);
  } catch (error) {
    throw fromNative(error);
  }
  return cachedQueueObject(queueId);
}

/**
 * This realm's `SyclQueue` for `queueId`, a handle of a device's cached queue: the one
 * object for that device (the handle is given back if there is one already).
 */
function cachedQueueObject(queueId) {
  const deviceId = native.queueDevice(queueId);
  const key = factsOf(deviceId).filterString;
  release(DEVICE_HANDLE, deviceId);
  const existing = apply(mapGet, cachedQueues, [key]);
  if (existing !== undefined) {
    release(QUEUE_HANDLE, queueId);
    return existing;
  }
  const queue = new SyclQueue(INTERNAL, queueId);
  apply(mapSet, cachedQueues, [key, queue]);
  return queue;
}

/** Every device dpctl-memory can use, or those a filter string matches. */
function getDevices(filter) {
  const text = filter === undefined || filter === null ? undefined : stringArg(filter, 'filter');
  try {
    return devicesOf(native.deviceList(text));
  } catch (error) {
    throw fromNative(error);
  }
}

/** Whether two queues share one context (queue objects of this module). */
function sameContext(a, b) {
  try {
    return native.contextEquals(contextHandle(queueContext(a)), contextHandle(queueContext(b)));
  } catch (error) {
    throw fromNative(error);
  }
}

/** Why no device is available from each runtime that did not load (empty when all did). */
function getRuntimeDiagnostics() {
  return parse(native.runtimeDiagnostics());
}

module.exports = {
  INTERNAL,
  SyclDevice,
  SyclContext,
  SyclQueue,
  getDevices,
  getRuntimeDiagnostics,
  cachedQueue,
  cachedQueueObject,
  contextHandle: (context) => contextHandle(context),
  queueHandle: (queue) => queueHandle(queue),
  sameContext,
  deviceHandle: (device) => deviceHandle(device),
  isDevice: (value) => isDevice(value),
  isContext: (value) => isContext(value),
  isQueue: (value) => isQueue(value),
};
