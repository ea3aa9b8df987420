// @ts-check
'use strict';
// Sharing device memory with other processes (dpctl's IPC handles): `IPCMemoryHandle`,
// made of device memory that owns its allocation, and `MemoryIPCDevice`, the memory a
// handle of another process opens into. The policy lives in the binding's model
// (src/memory/ipc.rs); this file reads the arguments and makes the objects.
const { native, release, DEVICE_HANDLE, KIND } = require('./native.js');
const { ErrorCode, typeError, fromNative, invalidThis, IPC_CLONE_GUARD } = require('./errors.js');
const { display, nbytesArg, arrayState, readOptions } = require('./values.js');
const devices = require('./device.js');
const memory = require('./memory.js');

const { INTERNAL, cachedQueue, queueHandle, deviceHandle, isQueue, isDevice } = devices;
const { MemoryUSMDevice, isMemory, checkedHandle, sizeOf } = memory;
const { Uint8Array, Object, Reflect, Symbol } = globalThis;
const apply = Reflect.apply;
const inspect = Symbol.for('nodejs.util.inspect.custom');
const typedArrayTag = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag).get;
const { DEVICE } = KIND;

/** The length of every handle the runtimes make today (CUDA's `CUipcMemHandle`): one
 * export call; another length is asked again with a buffer of that length. */
const HANDLE_LENGTH = 64;

/** Where the binding writes a handle of that length: its own `ArrayBuffer`, off V8's heap
 * (a new array this small lives on the heap, and the binding reading its bytes would make
 * V8 move them off it first). */
const exportScratch = new Uint8Array(new ArrayBuffer(HANDLE_LENGTH));
const typedArraySet = Object.getPrototypeOf(Uint8Array.prototype).set;

/** Module-private: lets only `IPCMemoryHandle.open` make a `MemoryIPCDevice`. */
const OPENED = Symbol('dpctl-memory IPC mapping');

/** Whether `value` is a `Uint8Array` of any realm (a Buffer is one); no getter of it runs. */
const isUint8Array = (value) => apply(typedArrayTag, value, []) === 'Uint8Array';

/** Whether an option was given a value (`undefined` and `null` mean none). */
const given = (value) => value !== undefined && value !== null;

/** The readers of `open`'s options (`undefined`: not given). */
const OPEN_OPTIONS = Object.freeze({
  queue: (value) => {
    if (given(value) && !isQueue(value)) throw typeError(`queue must be a SyclQueue, not ${display(value)}`);
    return given(value) ? value : undefined;
  },
  device: (value) => {
    if (given(value) && !isDevice(value)) throw typeError(`device must be a SyclDevice, not ${display(value)}`);
    return given(value) ? value : undefined;
  },
  nbytes: (value) => (given(value) ? nbytesArg(value) : undefined),
});

/** `{ queue | device, nbytes }` of `open`: own enumerable properties only, unknown names refused. */
function readOpenOptions(options) {
  if (typeof options !== 'object' || options === null || arrayState(options) !== false || isQueue(options) || isDevice(options)) {
    throw typeError(`IPCMemoryHandle.open options must be a plain object such as { device, nbytes }, not ${display(options)}`);
  }
  const { queue, device, nbytes } = readOptions(
    options,
    OPEN_OPTIONS,
    (name) => `unknown option '${name}': the options of IPCMemoryHandle.open are queue, device and nbytes`,
  );
  if (queue !== undefined && device !== undefined) throw typeError('IPCMemoryHandle.open takes a queue or a device, not both');
  if (nbytes === undefined) {
    throw typeError('IPCMemoryHandle.open needs nbytes: the size the exporter sent with the handle (a handle does not carry it)');
  }
  return { queue: queue ?? cachedQueue(device === undefined ? undefined : deviceHandle(device)), nbytes };
}

/** Device memory another process exported, opened from its handle; `free()` closes the mapping. */
class MemoryIPCDevice extends MemoryUSMDevice {
  /** Not constructible: `IPCMemoryHandle.open(bytes, { device, nbytes })` makes one. */
  constructor(token, init) {
    if (token !== OPENED) {
      throw typeError('MemoryIPCDevice cannot be constructed: use IPCMemoryHandle.open(bytes, { device, nbytes })', ErrorCode.ConstructCallRequired);
    }
    super(INTERNAL, init);
  }
}

/**
 * The IPC handle of USM device memory that owns its whole allocation: bytes another
 * process of this machine opens with `IPCMemoryHandle.open`. Making one marks the
 * allocation as exported: it is freed, never pooled, when it goes.
 */
class IPCMemoryHandle {
  __dpctlMemoryCloneGuard__ = IPC_CLONE_GUARD;
  #bytes;
  #nbytes;

  /** The handle of `memory` (a `MemoryUSMDevice` that allocated its memory). */
  constructor(memory) {
    if (!isMemory(memory)) {
      throw typeError(`IPCMemoryHandle needs a MemoryUSMDevice, not ${display(memory)}`, ErrorCode.NotUsm);
    }
    const handle = checkedHandle(memory, 'memory source');
    let bytes;
    try {
      const length = native.memIpcExport(handle, exportScratch);
      bytes = new Uint8Array(length);
      if (length === HANDLE_LENGTH) {
        apply(typedArraySet, bytes, [exportScratch]);
      } else {
        native.memIpcExport(handle, bytes);
      }
    } catch (error) {
      throw fromNative(error);
    }
    this.#bytes = bytes;
    this.#nbytes = sizeOf(memory);
  }

  static #live(self, member) {
    if (typeof self !== 'object' || self === null || !(#bytes in self)) throw invalidThis('IPCMemoryHandle', member);
    return self;
  }

  /** The handle's bytes (CUDA: the driver's 64-byte `CUipcMemHandle`), a new copy on every call. */
  toBytes() {
    // The constructor copies a typed array without consulting any species.
    return new Uint8Array(IPCMemoryHandle.#live(this, 'toBytes').#bytes);
  }

  /** Bytes of the exported memory, to send with the handle (`open` needs them). */
  get nbytes() {
    return IPCMemoryHandle.#live(this, 'nbytes').#nbytes;
  }

  /**
   * Opens the handle bytes another process exported into a `MemoryIPCDevice` of
   * `nbytes` (at most the exported size), on `queue`, on `device`'s cached queue, or on
   * the default device's.
   */
  static open(bytes, options) {
    if (!isUint8Array(bytes)) throw typeError(`IPC handle bytes must be a Uint8Array (or Buffer), not ${display(bytes)}`);
    const { queue, nbytes } = readOpenOptions(options);
    let handle;
    try {
      handle = native.memIpcOpen(bytes, queueHandle(queue), nbytes);
    } catch (error) {
      throw fromNative(error);
    }
    return new MemoryIPCDevice(OPENED, { handle, queue, reference: null, facts: { nbytes, pointer: undefined, kind: DEVICE, readOnly: false } });
  }

  /** Whether memory on `device` (default: the default device) can be shared with other processes. */
  static isAvailable(device) {
    if (device !== undefined && device !== null && !isDevice(device)) {
      throw typeError(`device must be a SyclDevice, not ${display(device)}`);
    }
    if (device !== undefined && device !== null) return native.ipcAvailable(deviceHandle(device));
    let deviceId;
    try {
      deviceId = native.deviceSelect(undefined);
      return native.ipcAvailable(deviceId);
    } catch (error) {
      throw fromNative(error);
    } finally {
      if (deviceId !== undefined) release(DEVICE_HANDLE, deviceId);
    }
  }

  /** `IPCMemoryHandle(size=N)`, as dpctl's repr. */
  toString() {
    return `IPCMemoryHandle(size=${IPCMemoryHandle.#live(this, 'toString').#nbytes})`;
  }
  [inspect]() {
    return this.toString();
  }
}

module.exports = { IPCMemoryHandle, MemoryIPCDevice };
