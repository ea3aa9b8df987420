// Shared helpers for the ava suite: the addon, the memory classes, the devices present,
// and small utilities. Every spec runs its cases on every device getDevices() lists.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { xorshiftBytes } = require('../../scripts/lib/xorshift.js');

/** The addon, loaded as a user would (through the generated index.js). */
export const addon = require('../../index.js');

// The public surface (index.d.ts, README) names the classes MemoryUSMDevice/Host/Shared. If the
// build only exports other spellings, exports.spec.mjs fails on that; the other specs
// still run against whatever class is there, so one naming bug does not hide the rest.
export const MemoryUSMDevice = addon.MemoryUSMDevice ?? addon.MemoryUsmDevice;
export const MemoryUSMHost = addon.MemoryUSMHost ?? addon.MemoryUsmHost;
export const MemoryUSMShared = addon.MemoryUSMShared ?? addon.MemoryUsmShared;

export const { SyclDevice, SyclContext, SyclQueue, asUsmMemory, getDevices } = addon;
export const { USMAllocationError, SyclQueueCreationError, SyclDeviceCreationError } = addon;

/** The three USM kinds, with dpctl's enum values. */
export const KINDS = [
  { kind: 'device', Class: MemoryUSMDevice, enumValue: 1, hostAccessible: false },
  { kind: 'shared', Class: MemoryUSMShared, enumValue: 2, hostAccessible: true },
  { kind: 'host', Class: MemoryUSMHost, enumValue: 3, hostAccessible: true },
];

export const kindOf = (name) => KINDS.find((k) => k.kind === name);

/** Every device present (may be empty where no runtime is installed). */
export const DEVICES = safeDevices();

function safeDevices() {
  try {
    return getDevices();
  } catch {
    return [];
  }
}

export const HAS_DEVICE = DEVICES.length > 0;

/** A label for test titles: `opencl:cpu:0`. */
export const label = (device) => device.filterString;

/** `[device, kind]` pairs: every kind on every device. */
export const DEVICE_KINDS = DEVICES.flatMap((device) => KINDS.map((k) => ({ device, ...k })));

/**
 * Registers `fn` for every device present; with no device at all, registers one
 * visibly skipped test instead, so a machine without a runtime shows what did not run.
 */
export function eachDevice(test, title, fn) {
  if (!HAS_DEVICE) {
    // `test` may be a skip already (ava's `test.skip` has no `.skip` of its own).
    (test.skip ?? test)(`${title} [no SYCL/CUDA device present: skipped]`, () => {});
    return;
  }
  for (const device of DEVICES) {
    test(`${title} [${label(device)}]`, (t) => fn(t, device));
  }
}

/** The same, for every kind on every device. */
export function eachDeviceKind(test, title, fn) {
  if (!HAS_DEVICE) {
    test.skip(`${title} [no SYCL/CUDA device present: skipped]`, () => {});
    return;
  }
  for (const dk of DEVICE_KINDS) {
    test(`${title} [${dk.kind} on ${label(dk.device)}]`, (t) => fn(t, dk));
  }
}

/** Registers a test that needs the default device (allocations without a queue). */
export function withDefaultDevice(test, title, fn) {
  if (!HAS_DEVICE) {
    test.skip(`${title} [no SYCL/CUDA device present: skipped]`, () => {});
    return;
  }
  test(title, fn);
}

/** A queue on `device` in the device's default context (cached per device). */
const queues = new Map();
export function queueFor(device) {
  const key = label(device);
  if (!queues.has(key)) queues.set(key, new SyclQueue(device));
  return queues.get(key);
}

/** `n` bytes of a recognisable pattern (never constant, so shifted copies are caught). */
export function pattern(n, seed = 1) {
  return xorshiftBytes(n, (seed * 2654435761) >>> 0 || 1);
}

/** The bytes of any ArrayBuffer, SharedArrayBuffer or view, as a Uint8Array over them. */
export function bytesOf(value) {
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  return new Uint8Array(value);
}

/** A minimal object exposing `__sycl_usm_array_interface__` with `fields` over `base`. */
export function exporter(base, fields = {}) {
  const iface = {
    data: [base.pointer, false],
    shape: [base.nbytes],
    strides: null,
    typestr: '|u1',
    version: 1,
    syclobj: base.syclQueue,
    ...fields,
  };
  return { __sycl_usm_array_interface__: iface };
}

/** An exporter whose interface is exactly `iface` (no defaults merged in). */
export const rawExporter = (iface) => ({ __sycl_usm_array_interface__: iface });

/** Frees every memory object given, ignoring the ones already freed. */
export function freeAll(...objects) {
  for (const o of objects) o?.free?.();
}

/** CUDA devices present (backend 'cuda'). */
export const CUDA_DEVICES = DEVICES.filter((d) => d.backend === 'cuda');

/**
 * Whether this Node makes external SharedArrayBuffers (`mem.sharedBuffer`), found as a user
 * would: by trying, not by version. Needs a host-memory device (none: false).
 */
export function nodeHasSharedBuffers() {
  if (!HAS_DEVICE) return false;
  const probe = new MemoryUSMHost(8);
  try {
    return probe.sharedBuffer instanceof SharedArrayBuffer;
  } catch (error) {
    if (error.code === addon.ErrorCode.SharedBufferUnsupported) return false;
    throw error;
  } finally {
    probe.free();
  }
}
