// The model of the fuzz program (__test__/fuzz.spec.mjs, scripts/fuzz.js).
//
// A case is plain data (fast-check shrinks and replays it): a few base allocations of
// every kind and a list of steps. `runCase` plays it against the addon and against a
// model of its contract (README, index.d.ts), step by step:
//
// * a registry of every block this process allocated (address, requested bytes, the
//   pool's size class, kind, context, live/cached) and a shadow copy of every
//   allocation's bytes;
// * for each memory object: the allocation under it, its offset and length there, its
//   read-only flag, queue and referenceObj;
// * an independent reading of `__sycl_usm_array_interface__` in dpctl's order (offset,
//   version, data, syclobj, shape, typestr, strides, extent) followed by the bounds and
//   ownership rules of this port (a view lies in the requested bytes of a live
//   allocation; the slack past the end of a block and freed blocks are refused).
//
// Each step either does exactly what the model predicts (pointer, nbytes, bytes,
// read-only, queue, referenceObj, kind, lifetime) or throws an Error of the predicted
// class with the predicted `code`. A user's own exception (a throwing getter) must come
// out unchanged. Anything else fails the case with the step and what differed. Every new
// allocation is checked against every live block (no aliasing), every case ends with
// every block back in the pool (`inUseBytes` 0: nothing leaks, nothing is held).
import fc from 'fast-check';
import v8 from 'node:v8';
import vm from 'node:vm';
import { createRequire } from 'node:module';

const { xorshift32, xorshiftBytes } = createRequire(import.meta.url)('../../scripts/lib/xorshift.js');

/** A full garbage collection, with or without --expose-gc. */
const gc = (() => {
  if (typeof globalThis.gc === 'function') return globalThis.gc;
  try {
    v8.setFlagsFromString('--expose-gc');
    return vm.runInNewContext('gc');
  } catch {
    return null;
  }
})();
const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

// ---------------------------------------------------------------------------------------
// Defects with a property of their own (checkDefect1, defect2Arb). While one is open, its
// number goes in KNOWN_DEFECTS: the main property then leaves its sub-cases out and the
// spec runs its own property as test.failing; remove the number once it is fixed.
//   1: copyToHost/copyFromHost (and Async) given non-buffer array-likes (a Proxy of a
//      Uint8Array, { length: 2**33 }, { length: 1e8 }) must throw ERR_INVALID_ARG_TYPE at
//      once (it was an uncoded TypeError/RangeError, or 6 s of copying). Fixed in ffbf5bf.
//   2: after `globalThis.RangeError = function () { return 7 }` (or TypeError, Error
//      replaced) errors must still be real errors of that class with codes (they were
//      plain objects with code GenericFailure). Fixed in ffbf5bf.
// FUZZ_KNOWN_DEFECTS=1,2 marks them open again (e.g. to bisect).
// ---------------------------------------------------------------------------------------
export const KNOWN_DEFECTS = new Set(
  (process.env.FUZZ_KNOWN_DEFECTS ?? '').split(',').map((s) => Number(s.trim())).filter((n) => n > 0),
);

// The built-in classes as they were when this module loaded (a step may replace the
// globals for a moment).
const Builtin = { Error, TypeError, RangeError };
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;
const U64 = 2n ** 64n;
const MAX_LIST = 1024;
const SMALL_LIMIT = 4096;
const MAX_POOLED_ALIGNMENT = 256;
const MAX_BLOCK = 256 * 2 ** 20;

/** The pool's size class (src/memory/pool.rs): multiples of 512 up to 4 KiB, then 4 per power of two. */
export function sizeClass(n) {
  n = Math.max(1, n);
  const up = (x, step) => Math.ceil(x / step) * step;
  if (n <= SMALL_LIMIT) return up(n, 512);
  const top = 31 - Math.clz32(n - 1) + (n - 1 >= 2 ** 32 ? 32 : 0);
  return up(n, 2 ** (top - 2));
}

const hex = (p) => `0x${BigInt(p).toString(16)}`;

/** A short description of any value for messages (never runs user code, never throws). */
function show(value, depth = 0) {
  try {
    switch (typeof value) {
      case 'bigint':
        return `${value}n`;
      case 'string':
        return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
      case 'symbol':
        return value.toString();
      case 'function':
        return '[function]';
      case 'undefined':
        return 'undefined';
      case 'number':
      case 'boolean':
        return Object.is(value, -0) ? '-0' : String(value);
      default:
    }
    if (value === null) return 'null';
    if (PROXIES.has(value)) return '[Proxy]';
    if (ArrayBuffer.isView(value)) return `${value.constructor.name}(${value.length ?? value.byteLength})`;
    if (value instanceof ArrayBuffer) return `ArrayBuffer(${value.byteLength})`;
    if (value instanceof SharedArrayBuffer) return `SharedArrayBuffer(${value.byteLength})`;
    const proto = Object.getPrototypeOf(value);
    if (Array.isArray(value)) {
      if (depth > 2 || value.length > 8) return `[array of ${value.length}]`;
      return `[${Array.from(value, (v) => show(v, depth + 1)).join(', ')}]`;
    }
    if (proto !== Object.prototype && proto !== null) return `[${proto?.constructor?.name ?? 'object'}]`;
    if (depth > 2) return '{...}';
    const parts = Object.keys(value).map((k) => {
      const d = Object.getOwnPropertyDescriptor(value, k);
      return `${k}: ${d.get ? '[getter]' : show(d.value, depth + 1)}`;
    });
    return `{ ${parts.join(', ')} }`;
  } catch {
    return '[unprintable]';
  }
}

/** xorshift32 bytes: deterministic contents from a seed. */
function patternBytes(n, seed) {
  return xorshiftBytes(n, (seed >>> 0) ^ 0x9e3779b9 || 1);
}

function firstDifference(a, b) {
  if (a.length !== b.length) return `length ${a.length}, expected ${b.length}`;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return `byte ${i} is ${a[i]}, expected ${b[i]}`;
  return null;
}

const u8of = (v) => (ArrayBuffer.isView(v) ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : new Uint8Array(v));

/** Objects the model built as Proxies: a Proxy of an array is not an array to Node-API. */
const PROXIES = new WeakSet();
function proxy(target, handler = {}) {
  const p = new Proxy(target, handler);
  PROXIES.add(p);
  return p;
}

/** A failure of the property: what the step did against what the model said. */
export class FuzzFailure extends Error {
  constructor(message) {
    super(message);
    this.name = 'FuzzFailure';
  }
}

// ---------------------------------------------------------------------------------------
// Expected errors
// ---------------------------------------------------------------------------------------

/** The class of every code that has one class (the SUAI field codes have two). */
const CODE_CLASS = {
  ERR_INVALID_ARG_TYPE: 'TypeError',
  ERR_INVALID_SIZE: 'RangeError',
  ERR_INVALID_ALIGNMENT: 'RangeError',
  ERR_INVALID_FILL_VALUE: 'RangeError',
  ERR_USM_ALLOCATION: 'USMAllocationError',
  ERR_USM_FREED: 'Error',
  ERR_NOT_USM: 'TypeError',
  ERR_SUAI_FOREIGN_POINTER: 'Error',
  ERR_SUAI_OUT_OF_BOUNDS: 'RangeError',
  ERR_USM_KIND_MISMATCH: 'Error',
  ERR_UNKNOWN_USM_TYPE: 'Error',
  ERR_DESTINATION_TOO_SMALL: 'RangeError',
  ERR_SOURCE_TOO_LARGE: 'RangeError',
  ERR_NOT_HOST_ACCESSIBLE: 'Error',
  ERR_READ_ONLY: 'Error',
  ERR_INVALID_SYCLOBJ: 'TypeError',
  ERR_INVALID_FILTER: 'TypeError',
  ERR_DEVICE_NOT_FOUND: 'SyclDeviceCreationError',
  ERR_QUEUE_CREATION: 'SyclQueueCreationError',
  ERR_HOST_BUFFER_TOO_LARGE: 'RangeError',
  ERR_CONSTRUCT_CALL_REQUIRED: 'TypeError',
  ERR_USM_BUSY: 'Error',
};

/** An expected error: `codes` (any of them), each with its class. */
function E(code, cls) {
  return { error: [{ code, cls: cls ?? CODE_CLASS[code] }] };
}
function anyOf(...expectations) {
  return { error: expectations.flatMap((e) => e.error) };
}
/** The user's own exception, which must come out unchanged. */
const Throws = (value) => ({ throws: value });
const isExpectedError = (x) => typeof x === 'object' && x !== null && (x.error !== undefined || 'throws' in x);

function describeExpectation(x) {
  if (x.error) return x.error.map((e) => `${e.cls} ${e.code}`).join(' or ');
  if ('throws' in x) return `the user's exception ${show(x.throws)}`;
  return 'success';
}

function describeThrown(e) {
  if (e instanceof Builtin.Error) return `${e.constructor?.name} code=${e.code} "${String(e.message).slice(0, 160)}"`;
  return `a non-error ${show(e)}`;
}

// ---------------------------------------------------------------------------------------
// The world: the device, queues in two contexts, the registry of blocks
// ---------------------------------------------------------------------------------------

const GOOD_FILTERS = ['cpu', 'opencl:cpu:0', 'opencl:cpu', 'opencl', 'cpu:0', '*', 'CPU', '0'];
const BAD_FILTERS = ['foo:bar', '', ':cpu', 'opencl::0'];
const NO_MATCH_FILTERS = ['gpu', 'opencl:gpu:99', 'cuda', 'opencl:cpu:1', 'level_zero:gpu'];

export function createWorld(addon) {
  const device = addon.getDevices()[0];
  if (!device) return null;
  const { SyclQueue, SyclContext, SyclDevice } = addon;
  const classes = { device: addon.MemoryUSMDevice, shared: addon.MemoryUSMShared, host: addon.MemoryUSMHost };
  const queueA = new SyclQueue(device);
  const queueA2 = new SyclQueue(device);
  const ctxBObj = new SyclContext(device);
  const queueB = new SyclQueue(ctxBObj, device);
  const SubQueue = class extends SyclQueue {};
  const subQueue = new SubQueue(device);
  const probe = new addon.MemoryUSMShared(8);
  const defaultQueue = probe.syclQueue;
  const ctxAObj = queueA.syclContext;
  // Weak: queues the library makes for context syclobjs are registered as they are seen.
  const queueCtx = new WeakMap([[queueA, 'A'], [queueA2, 'A'], [defaultQueue, 'A'], [subQueue, 'A'], [queueB, 'B']]);
  const contextCtx = new WeakMap([[ctxAObj, 'A'], [ctxBObj, 'B'], [defaultQueue.syclContext, 'A']]);
  // Filter strings that select exactly this device (others would name another device).
  const goodFilters = [device.filterString, ...GOOD_FILTERS].filter((f, i, all) => {
    if (all.indexOf(f) !== i) return false;
    try {
      return new SyclDevice(f).equals(device);
    } catch {
      return false;
    }
  });
  const noMatch = NO_MATCH_FILTERS.filter((f) => addon.getDevices().every((d) => {
    try { return !new SyclDevice(f).equals(d); } catch { return true; }
  }));
  const stats = addon.poolStats();
  const world = {
    addon,
    device,
    // OpenCL's CPU device reports exact allocation sizes; CUDA rounds them up.
    runtimeRounds: device.backend === 'cuda',
    classes,
    queueA,
    queueA2,
    queueB,
    subQueue,
    defaultQueue,
    ctxObj: { A: ctxAObj, B: ctxBObj },
    queueCtx,
    contextCtx,
    goodFilters,
    noMatch,
    poolEnabled: stats.enabled,
    evictions: { device: stats.device.evictions, host: stats.host.evictions, shared: stats.shared.evictions },
    /** address (string) -> block */
    blocks: new Map(),
    /** filter string -> outcome, for strings outside the fixed lists */
    filters: new Map(),
    /** step and outcome -> count */
    coverage: new Map(),
    nextId: 1,
    cases: 0,
  };
  // Every allocation of this process must be in the registry (else a pointer into it
  // could not be predicted): the probe too.
  const token = {};
  const block = newBlock(world, probe.pointer, 8, 'shared', 'A', 0);
  addRef(block, token);
  probe.free();
  dropRef(world, block, token);
  return world;
}

/** Registers an allocation made outside a case (the defect properties); returns a release function. */
export function track(world, obj, kind, ctx = 'A', align = 0) {
  const block = newBlock(world, obj.pointer, obj.nbytes, kind, ctx, align);
  const token = {};
  addRef(block, token);
  return () => {
    obj.free();
    dropRef(world, block, token);
  };
}

function newBlock(world, ptr, nbytes, kind, ctx, align) {
  const pooled = world.poolEnabled && align <= MAX_POOLED_ALIGNMENT && nbytes <= MAX_BLOCK;
  const size = pooled ? sizeClass(nbytes) : nbytes;
  const end = ptr + BigInt(size);
  for (const [key, b] of world.blocks) {
    const bEnd = b.addr + BigInt(b.size);
    if (ptr >= bEnd || b.addr >= end) continue;
    if (b.state === 'live') {
      throw new FuzzFailure(
        `a new ${kind} allocation of ${nbytes} bytes at ${hex(ptr)} overlaps the live ${b.kind} allocation of ${b.nbytes} bytes at ${hex(b.addr)} (held by ${b.refs.size} reference(s)): an alias`,
      );
    }
    if (b.state === 'cached' && !(b.addr === ptr && b.size === size && b.kind === kind && b.ctx === ctx)) {
      throw new FuzzFailure(
        `a new ${kind} allocation of ${nbytes} bytes (class ${size}) at ${hex(ptr)} overlaps the cached ${b.kind} block of class ${b.size} at ${hex(b.addr)} in context ${b.ctx}`,
      );
    }
    world.blocks.delete(key);
  }
  const block = { id: world.nextId++, addr: ptr, nbytes, size, kind, ctx, pooled, state: 'live', refs: new Set(), shadow: new Uint8Array(nbytes) };
  world.blocks.set(String(ptr), block);
  return block;
}

function addRef(block, token) {
  block.refs.add(token);
}

function dropRef(world, block, token) {
  block.refs.delete(token);
  if (block.refs.size === 0 && block.state === 'live') {
    if (block.pooled) block.state = 'cached';
    else world.blocks.delete(String(block.addr));
  }
}

/** The most a runtime that rounds allocations up (CUDA) may add past one. */
const RUNTIME_ROUNDING = 2n * 1024n * 1024n;

/** Whether `p` lies in the possible rounding just past a block the model knows. */
function roundedTail(world, p) {
  for (const b of world.blocks.values()) {
    const end = b.addr + BigInt(b.size);
    if (p >= end && p < end + RUNTIME_ROUNDING) return true;
  }
  return false;
}

/** What this process knows of address `p`. */
function classify(world, p) {
  for (const b of world.blocks.values()) {
    if (p >= b.addr && p < b.addr + BigInt(b.size)) {
      if (b.state === 'live' && p < b.addr + BigInt(b.nbytes)) return { where: 'owned', block: b };
      if (b.state === 'uncertain') return { where: 'uncertain', block: b };
      return { where: 'unowned', block: b };
    }
  }
  return { where: 'foreign' };
}

/**
 * Blocks leave the pool without the model seeing it: evictions beyond the cap, and the
 * trim of the whole pool when the runtime refuses an allocation (README). When the pool
 * holds none of a kind, the model's cached blocks of that kind are gone; when it holds
 * fewer or evicted some, the model no longer knows which are still cached.
 */
function syncCached(world) {
  const stats = world.addon.poolStats();
  for (const kind of ['device', 'host', 'shared']) {
    let cached = 0;
    for (const b of world.blocks.values()) if (b.kind === kind && b.state === 'cached') cached++;
    const evicted = stats[kind].evictions !== world.evictions[kind];
    world.evictions[kind] = stats[kind].evictions;
    if (stats[kind].cachedBlocks === 0) {
      for (const [key, b] of world.blocks) if (b.kind === kind && (b.state === 'cached' || b.state === 'uncertain')) world.blocks.delete(key);
    } else if (evicted || stats[kind].cachedBlocks < cached) {
      for (const b of world.blocks.values()) if (b.kind === kind && b.state === 'cached') b.state = 'uncertain';
    }
  }
  return stats;
}

// ---------------------------------------------------------------------------------------
// Reading JS values as the interface consumer must (README: integers are safe-integer
// numbers or bigints; shape and strides are arrays; missing typestr is an error)
// ---------------------------------------------------------------------------------------

function ifv(v, depth = 0) {
  if (v === undefined) return { t: 'missing' };
  if (v === null) return { t: 'null' };
  switch (typeof v) {
    case 'boolean':
      return { t: 'bool', v };
    case 'number':
      return { t: 'num', v };
    case 'bigint':
      return { t: 'big', v };
    case 'string':
      return { t: 'str', v };
    case 'object':
      if (Array.isArray(v) && !PROXIES.has(v)) {
        if (depth > 0 || v.length > MAX_LIST) return { t: 'other' };
        const items = [];
        for (let i = 0; i < v.length; i++) items.push(ifv(v[i], depth + 1));
        return { t: 'list', items };
      }
      return { t: 'other' };
    default:
      return { t: 'other' };
  }
}

/** An integer (safe-integer number or bigint): { v } | { bad: 'type' | 'range' }. */
function readInt(x) {
  if (x.t === 'big') return { v: x.v };
  if (x.t === 'num' && Number.isFinite(x.v) && Number.isInteger(x.v)) {
    return Math.abs(x.v) <= Number.MAX_SAFE_INTEGER ? { v: BigInt(x.v) } : { bad: 'range' };
  }
  return { bad: 'type' };
}

function readSsize(x) {
  const r = readInt(x);
  if (r.bad) return r;
  return r.v < I64_MIN || r.v > I64_MAX ? { bad: 'range' } : r;
}

const fieldError = (code, bad) => E(code, bad === 'range' ? 'RangeError' : 'TypeError');

const TYPESTR_BODIES = { '?': 1, b1: 1, i1: 1, u1: 1, i2: 2, u2: 2, f2: 2, i4: 4, u4: 4, f4: 4, i8: 8, u8: 8, f8: 8, c8: 8, c16: 16 };
export const VALID_TYPESTRS = ['', '<', '>', '|', '='].flatMap((o) => Object.keys(TYPESTR_BODIES).map((b) => o + b));
export const INVALID_TYPESTRS = ['O', '|O', '|S1', '<U4', '', 'invalid', '<f16', '<i3', ' <f8', '<f8 ', 'F8', '<<f8', '|V8', '<M8', 'f', 'float64', '|b', '<c32', '??', '&f8'];

function itemsizeOf(s) {
  const body = /^[<>|=]/.test(s) ? s.slice(1) : s;
  return Object.hasOwn(TYPESTR_BODIES, body) ? BigInt(TYPESTR_BODIES[body]) : null;
}

/** dpctl's extent: { minDisp (elements), nbytes } or an expected error. */
function extent(shape, strides, offset, itemsize) {
  if (shape.some((s) => s < 0n)) return E('ERR_SUAI_SHAPE', 'RangeError');
  let minDisp;
  let items;
  if (shape.length === 0 || shape.includes(0n)) return { minDisp: offset, nbytes: itemsize };
  if (strides === null) {
    minDisp = offset;
    items = shape.reduce((a, b) => a * b, 1n);
  } else {
    let lo = offset;
    let hi = offset;
    shape.forEach((sh, i) => {
      const span = strides[i] * (sh - 1n);
      if (strides[i] > 0n) hi += span;
      else lo += span;
    });
    minDisp = lo;
    items = hi - lo + 1n;
  }
  const nbytes = items * itemsize;
  if (nbytes >= U64) return E('ERR_SUAI_MALFORMED', 'RangeError');
  return { minDisp, nbytes };
}

function filterOutcome(world, text) {
  if (!world.filters.has(text)) {
    let outcome;
    try {
      outcome = new world.addon.SyclDevice(text).equals(world.device) ? 'device' : null;
    } catch (e) {
      outcome = e.code === 'ERR_INVALID_FILTER' || e.code === 'ERR_DEVICE_NOT_FOUND' ? E('ERR_QUEUE_CREATION') : null;
    }
    if (outcome === null) throw new Error(`the model has no outcome for the filter string ${show(text)}`);
    world.filters.set(text, outcome);
  }
  return world.filters.get(text);
}

/** The queue an interface's syclobj names, for pointer `p`: { ctx, queue } or an error. */
function resolveSyclobj(world, syclobj, p) {
  let ctx;
  let queue;
  if (world.queueCtx.has(syclobj)) {
    ctx = world.queueCtx.get(syclobj);
    queue = { same: syclobj };
  } else if (world.contextCtx.has(syclobj)) {
    ctx = world.contextCtx.get(syclobj);
    queue = { newIn: ctx };
  } else if (typeof syclobj === 'string') {
    if (world.goodFilters.includes(syclobj)) {
      ctx = 'A';
      queue = { cached: true };
    } else if (BAD_FILTERS.includes(syclobj)) {
      // As dpctl: SyclQueue(str) raises SyclQueueCreationError for a string it cannot parse.
      return E('ERR_QUEUE_CREATION');
    } else if (world.noMatch.includes(syclobj)) {
      return E('ERR_QUEUE_CREATION');
    } else {
      // Another string (junk in the field): syclobj must read it as SyclDevice reads it.
      const outcome = filterOutcome(world, syclobj);
      if (outcome !== 'device') return outcome;
      ctx = 'A';
      queue = { cached: true };
    }
  } else {
    return E('ERR_SUAI_SYCLOBJ', 'TypeError');
  }
  const where = classify(world, p);
  // A block the pool may have evicted: still cached (refused as unowned) or given back
  // to the runtime (foreign to it), both at this step.
  if (where.where === 'uncertain') return anyOf(E('ERR_SUAI_OUT_OF_BOUNDS'), E('ERR_SUAI_FOREIGN_POINTER'));
  // Memory of ours that no live allocation owns (slack, cached) is refused at this step,
  // before the runtime is asked, on every device.
  if (where.where === 'unowned') return E('ERR_SUAI_OUT_OF_BOUNDS');
  if (where.where === 'foreign' && world.runtimeRounds && roundedTail(world, p)) {
    // Just past an allocation the runtime may have rounded up (CUDA): refused as the
    // rounding of ours, or as memory the runtime does not know, both at this step.
    return anyOf(E('ERR_SUAI_OUT_OF_BOUNDS'), E('ERR_SUAI_FOREIGN_POINTER'));
  }
  if (where.where === 'foreign' || where.block.ctx !== ctx) return E('ERR_SUAI_FOREIGN_POINTER');
  return { ctx, queue, where };
}

/**
 * The model of the consumer: what `iface` (the JS value an exporter exposes) gives.
 * Returns an expected error, or { view: { block, off, nbytes, ro, ctx, queue } }.
 */
export function predictInterface(world, iface) {
  if (iface === null || typeof iface !== 'object' || (Array.isArray(iface) && !PROXIES.has(iface))) {
    return E('ERR_SUAI_MALFORMED', 'TypeError');
  }
  const get = (k) => ifv(iface[k]);
  const offsetV = get('offset');
  let offset = 0n;
  if (offsetV.t !== 'missing') {
    const r = readSsize(offsetV);
    if (r.bad) return fieldError('ERR_SUAI_OFFSET', r.bad);
    offset = r.v;
  }
  const version = get('version');
  if (version.t === 'num' && Number.isFinite(version.v) && Number.isInteger(version.v)) {
    if (version.v !== 1) return E('ERR_SUAI_VERSION', 'RangeError');
  } else if (version.t === 'big') {
    if (version.v !== 1n) return E('ERR_SUAI_VERSION', 'RangeError');
  } else {
    return E('ERR_SUAI_VERSION', 'TypeError');
  }
  const data = get('data');
  if (data.t !== 'list') return E('ERR_SUAI_DATA', 'TypeError');
  if (data.items.length !== 2) return E('ERR_SUAI_DATA', 'RangeError');
  const [pv, fv] = data.items;
  let p;
  if (pv.t === 'num' && Number.isFinite(pv.v) && Number.isInteger(pv.v)) {
    if (pv.v < 0 || pv.v > Number.MAX_SAFE_INTEGER) return E('ERR_SUAI_DATA', 'RangeError');
    p = BigInt(pv.v);
  } else if (pv.t === 'big') {
    if (pv.v < 0n || pv.v >= U64) return E('ERR_SUAI_DATA', 'RangeError');
    p = pv.v;
  } else {
    return E('ERR_SUAI_DATA', 'TypeError');
  }
  let ro;
  if (fv.t === 'bool') ro = fv.v;
  else if (fv.t === 'num') ro = fv.v !== 0 && !Number.isNaN(fv.v);
  else if (fv.t === 'big') ro = fv.v !== 0n;
  else return E('ERR_SUAI_DATA', 'TypeError');
  const syclobj = iface.syclobj;
  if (syclobj === undefined) return E('ERR_SUAI_SYCLOBJ', 'TypeError');
  const resolved = resolveSyclobj(world, syclobj, p);
  if (isExpectedError(resolved)) return resolved;
  const shapeV = get('shape');
  if (shapeV.t !== 'list') return E('ERR_SUAI_SHAPE', 'TypeError');
  const shape = [];
  for (const item of shapeV.items) {
    const r = readSsize(item);
    if (r.bad) return fieldError('ERR_SUAI_SHAPE', r.bad);
    shape.push(r.v);
  }
  const typestrV = get('typestr');
  if (typestrV.t !== 'str') return E('ERR_SUAI_TYPESTR', 'TypeError');
  const itemsize = itemsizeOf(typestrV.v);
  if (itemsize === null) return E('ERR_SUAI_TYPESTR', 'RangeError');
  const stridesV = get('strides');
  let strides = null;
  if (stridesV.t === 'list') {
    if (stridesV.items.length !== shape.length) return E('ERR_SUAI_STRIDES', 'RangeError');
    strides = [];
    for (const item of stridesV.items) {
      const r = readSsize(item);
      if (r.bad) return fieldError('ERR_SUAI_STRIDES', r.bad);
      strides.push(r.v);
    }
  } else if (stridesV.t !== 'missing' && stridesV.t !== 'null') {
    return E('ERR_SUAI_STRIDES', 'TypeError');
  }
  const ext = extent(shape, strides, offset, itemsize);
  if (isExpectedError(ext)) return ext;
  const ptr = p + ext.minDisp * itemsize;
  if (ptr < 0n || ptr >= U64 || ptr + ext.nbytes > U64) return E('ERR_SUAI_MALFORMED', 'RangeError');
  if (resolved.uncertain) return anyOf(E('ERR_SUAI_FOREIGN_POINTER'), E('ERR_SUAI_OUT_OF_BOUNDS'));
  const { where } = resolved;
  if (where.where !== 'owned') return E('ERR_SUAI_OUT_OF_BOUNDS');
  const b = where.block;
  if (ptr < b.addr || ptr + ext.nbytes > b.addr + BigInt(b.nbytes)) return E('ERR_SUAI_OUT_OF_BOUNDS');
  return { view: { block: b, off: Number(ptr - b.addr), nbytes: Number(ext.nbytes), ro, ctx: resolved.ctx, queue: resolved.queue } };
}

// ---------------------------------------------------------------------------------------
// Options and constructor arguments
// ---------------------------------------------------------------------------------------

/** { alignment, queue (object or null), copy, hugeAlignment } or an expected error / Throws. */
function predictOptions(world, opts, records) {
  const none = { alignment: 0n, queue: null, copy: false };
  if (opts === undefined || opts === null) return none;
  if (typeof opts !== 'object') return E('ERR_INVALID_ARG_TYPE');
  if (Array.isArray(opts)) return E('ERR_INVALID_ARG_TYPE');
  const keys = Object.keys(opts);
  if (keys.length === 0) {
    const misplaced = world.queueCtx.has(opts) || world.contextCtx.has(opts) || opts === world.device || records.some((r) => r.obj === opts);
    if (misplaced) return E('ERR_INVALID_ARG_TYPE');
  }
  // Every own enumerable property is read first: a throwing getter wins.
  const values = {};
  for (const k of keys) {
    const d = Object.getOwnPropertyDescriptor(opts, k);
    if (d.get && d.get[THROWS]) return Throws(d.get[THROWS]);
    values[k] = d.get ? d.get() : d.value;
  }
  const errors = [];
  if (keys.some((k) => !['alignment', 'queue', 'copy'].includes(k))) return E('ERR_INVALID_ARG_TYPE');
  const out = { ...none };
  const a = values.alignment;
  if (a !== undefined && a !== null) {
    if (typeof a !== 'number' && typeof a !== 'bigint') errors.push(E('ERR_INVALID_ARG_TYPE'));
    else {
      const r = readInt(typeof a === 'number' ? { t: 'num', v: a } : { t: 'big', v: a });
      if (r.bad || r.v < 0n || r.v >= U64 || (r.v !== 0n && (r.v & (r.v - 1n)) !== 0n)) errors.push(E('ERR_INVALID_ALIGNMENT'));
      else out.alignment = r.v;
    }
  }
  const q = values.queue;
  if (q !== undefined && q !== null) {
    if (!world.queueCtx.has(q)) errors.push(E('ERR_INVALID_ARG_TYPE'));
    else out.queue = q;
  }
  const c = values.copy;
  if (c !== undefined && c !== null) {
    if (typeof c !== 'boolean') errors.push(E('ERR_INVALID_ARG_TYPE'));
    else out.copy = c;
  }
  // The order between two bad options is not part of the contract: either code will do.
  if (errors.length) return anyOf(...errors);
  return out;
}

const THROWS = Symbol('throws');
/** A getter that throws `sentinel` (the model recognises it). */
function throwingGetter(sentinel) {
  const get = () => {
    throw sentinel;
  };
  get[THROWS] = sentinel;
  return get;
}

/** What `new Class(arg, opts)` must do for a non-memory, non-exporter `arg`: an error or { alloc: n }. */
function predictSizeArg(arg) {
  if (typeof arg === 'number') {
    if (!Number.isFinite(arg) || !Number.isInteger(arg) || Math.abs(arg) > Number.MAX_SAFE_INTEGER || arg <= 0) return E('ERR_INVALID_SIZE');
    return arg >= 2 ** 50 ? E('ERR_USM_ALLOCATION') : { alloc: arg };
  }
  if (typeof arg === 'bigint') {
    if (arg <= 0n || arg >= U64) return E('ERR_INVALID_SIZE');
    return arg >= 2n ** 50n ? E('ERR_USM_ALLOCATION') : { alloc: Number(arg) };
  }
  if ((typeof arg === 'object' && arg !== null) || typeof arg === 'function') return E('ERR_NOT_USM');
  return E('ERR_INVALID_ARG_TYPE');
}

// ---------------------------------------------------------------------------------------
// Junk
// ---------------------------------------------------------------------------------------

/** Values for any interface field (the model reads each through `ifv`). */
const FIELD_JUNK = [
  () => undefined,
  () => null,
  () => true,
  () => false,
  () => 0,
  () => -1,
  () => 1.5,
  () => NaN,
  () => Infinity,
  () => -Infinity,
  () => -0,
  () => 2 ** 53,
  () => -(2 ** 53),
  () => 2n ** 64n,
  () => -1n,
  () => 2n ** 63n,
  () => -(2n ** 63n) - 1n,
  () => 1n,
  () => 1,
  () => '',
  () => '1',
  () => 'x',
  () => '<f8',
  () => [],
  () => [1],
  () => [1, 2, 3],
  () => [[1]],
  () => [1n, false],
  () => [1, , 2], // eslint-disable-line no-sparse-arrays
  () => ({}),
  () => ({ length: 2, 0: 1, 1: 2 }),
  () => new Uint32Array([4]),
  () => Symbol('junk'),
  () => function junk() {},
  () => new Date(0),
  // (No Proxy of an array: whether one counts as an array is not part of the contract.)
  () => new Array(MAX_LIST + 1).fill(1),
  () => new Array(MAX_LIST).fill(0),
  () => Object.create(null),
  () => [2n ** 62n, 2n ** 62n],
  () => [-1],
  () => [2 ** 31, 2 ** 31, 2 ** 31],
];

const IFACE_FIELDS = ['data', 'shape', 'strides', 'typestr', 'version', 'offset', 'syclobj'];

/** syclobj forms: [label, (world, records) => value]. */
const SYCLOBJ_FORMS = [
  ['own queue', (w, r) => r?.queueObj ?? w.queueA],
  ['own queue', (w, r) => r?.queueObj ?? w.queueA],
  ['own queue', (w, r) => r?.queueObj ?? w.queueA],
  ['queueA', (w) => w.queueA],
  ['queueA2', (w) => w.queueA2],
  ['default queue', (w) => w.defaultQueue],
  ['subclass queue', (w) => w.subQueue],
  ['queueB', (w) => w.queueB],
  ['own context', (w, r) => w.ctxObj[r?.block.ctx ?? 'A']],
  ['contextA', (w) => w.ctxObj.A],
  ['contextB', (w) => w.ctxObj.B],
  ['good filter', (w, r, n) => w.goodFilters[n % w.goodFilters.length]],
  ['bad filter', (w, r, n) => BAD_FILTERS[n % BAD_FILTERS.length]],
  ['no-match filter', (w, r, n) => (w.noMatch.length ? w.noMatch[n % w.noMatch.length] : 42)],
  ['missing', () => undefined],
  ['null', () => null],
  ['42', () => 42],
  ['{}', () => ({})],
  ['a device', (w) => w.device],
  ['a memory object', (w, r) => r?.obj ?? {}],
  ['a function', () => () => {}],
  ['a borrowed queue prototype', (w) => Object.create(Object.getPrototypeOf(w.queueA))],
  ['a symbol', () => Symbol('q')],
];

/** getUsmType arguments: [value factory, context of the query or 'own' or 'junk']. */
const USM_TYPE_ARGS = [
  [() => undefined, 'own'],
  [() => null, 'own'],
  [(w) => w.queueA, 'A'],
  [(w) => w.ctxObj.A, 'A'],
  [(w) => w.defaultQueue, 'A'],
  [(w) => w.subQueue, 'A'],
  [(w) => w.queueB, 'B'],
  [(w) => w.ctxObj.B, 'B'],
  [() => 5, 'junk'],
  [() => 'cpu', 'junk'],
  [() => ({}), 'junk'],
  [(w) => w.device, 'junk'],
  [() => [], 'junk'],
  [() => true, 'junk'],
  [() => Symbol('s'), 'junk'],
  [(w, r) => r.obj, 'junk'],
  [(w) => Object.create(Object.getPrototypeOf(w.queueA)), 'junk'],
];

/** memset values: [value, expected byte or an expected error]. */
const FILL_VALUES = [
  [undefined, 0],
  [null, 0],
  [0, 0],
  [1, 1],
  [255, 255],
  [-0, 0],
  [0x5a, 0x5a],
  [7n, 7],
  [255n, 255],
  [256, E('ERR_INVALID_FILL_VALUE')],
  [-1, E('ERR_INVALID_FILL_VALUE')],
  [1.5, E('ERR_INVALID_FILL_VALUE')],
  [NaN, E('ERR_INVALID_FILL_VALUE')],
  [Infinity, E('ERR_INVALID_FILL_VALUE')],
  [2 ** 53, E('ERR_INVALID_FILL_VALUE')],
  [65535, E('ERR_INVALID_FILL_VALUE')],
  [256n, E('ERR_INVALID_FILL_VALUE')],
  [-1n, E('ERR_INVALID_FILL_VALUE')],
  [2n ** 200n, E('ERR_INVALID_FILL_VALUE')],
  ['1', E('ERR_INVALID_ARG_TYPE')],
  [true, E('ERR_INVALID_ARG_TYPE')],
  [{}, E('ERR_INVALID_ARG_TYPE')],
  [[1], E('ERR_INVALID_ARG_TYPE')],
];

/** Constructor first arguments that are neither memory objects nor exporters. */
const CTOR_ARGS = [
  () => 0,
  () => -1,
  () => -0,
  () => 1.5,
  () => NaN,
  () => Infinity,
  () => -Infinity,
  () => 2 ** 53,
  () => 2 ** 53 + 2,
  () => 2 ** 50,
  () => 0n,
  () => -5n,
  () => 2n ** 64n,
  () => 2n ** 64n - 1n,
  () => 2n ** 60n,
  () => 2n ** 200n,
  () => -(2n ** 200n),
  () => undefined,
  () => null,
  () => true,
  () => 'x',
  () => '16',
  () => Symbol('n'),
  () => ({}),
  () => [],
  () => [16],
  () => () => {},
  () => new Date(),
  () => Object.create(null),
  () => new Uint8Array(4),
  () => new ArrayBuffer(4),
  (w) => w.queueA,
  (w) => w.ctxObj.A,
  (w) => w.device,
  () => ({ __sycl_usm_array_interfac__: {} }),
];

/** Options objects, valid and not. */
function makeOptions(world, sel, records, sentinel) {
  const r0 = records[sel % Math.max(1, records.length)]?.obj;
  const nonEnumerable = {};
  Object.defineProperty(nonEnumerable, 'alignment', { value: 3, enumerable: false });
  const table = [
    () => undefined,
    () => null,
    () => ({}),
    () => ({ queue: world.queueA }),
    () => ({ queue: world.queueB }),
    () => ({ queue: world.subQueue }),
    () => ({ queue: undefined, alignment: null, copy: null }),
    () => ({ alignment: 64, queue: world.queueA }),
    () => ({ alignment: 0n }),
    () => ({ copy: false }),
    () => ({ copy: true }),
    () => ({ copy: true, queue: world.queueB }),
    () => 5,
    () => 'x',
    () => true,
    () => [],
    () => [world.queueA],
    () => () => {},
    () => world.queueA,
    () => world.ctxObj.A,
    () => world.device,
    () => r0 ?? {},
    () => new Date(),
    () => ({ foo: 1 }),
    () => ({ queue: world.queueA, Queue: 1 }),
    () => ({ alignment: 3 }),
    () => ({ alignment: -1 }),
    () => ({ alignment: 1.5 }),
    () => ({ alignment: '8' }),
    () => ({ alignment: NaN }),
    () => ({ alignment: 2n ** 70n }),
    () => ({ queue: 'cpu' }),
    () => ({ queue: world.ctxObj.A }),
    () => ({ queue: {} }),
    () => ({ copy: 1 }),
    () => ({ copy: 'yes' }),
    () => Object.create({ alignment: 3 }),
    () => nonEnumerable,
    () => ({ [Symbol('s')]: 1 }),
    () => ({ get alignment() { return 16; } }),
    () => Object.defineProperty({}, 'alignment', { enumerable: true, get: throwingGetter(sentinel) }),
  ];
  return table[sel % table.length]();
}

// ---------------------------------------------------------------------------------------
// Host arguments (copyToHost / copyFromHost)
// ---------------------------------------------------------------------------------------

const TYPED = {
  u8: Uint8Array,
  i8: Int8Array,
  u8c: Uint8ClampedArray,
  i16: Int16Array,
  u16: Uint16Array,
  i32: Int32Array,
  f32: Float32Array,
  f64: Float64Array,
  bi64: BigInt64Array,
  bu64: BigUint64Array,
};

/** Non-buffer host arguments that must be ERR_INVALID_ARG_TYPE (they work today). */
const HOST_JUNK = [
  () => 5,
  () => 'abcd',
  () => [1, 2],
  () => ({}),
  () => ({ byteLength: 8 }),
  () => ({ length: 4 }),
  () => Symbol('h'),
  () => () => {},
  () => new Date(),
  () => true,
  () => 5n,
];

/**
 * known defect 1: non-buffer array-likes that must be ERR_INVALID_ARG_TYPE at once,
 * without their contents being read. Each factory returns [value, reads] where
 * reads() counts the reads of its contents (length, indices, iterator).
 */
export const DEFECT1_ARGS = [
  ['a Proxy of a Uint8Array', (n) => counted(new Uint8Array(n))],
  ['a Proxy of an ArrayBuffer', (n) => counted(new ArrayBuffer(n))],
  ['{ length: 2**33 }', () => lengthGetter(2 ** 33)],
  ['{ length: 1e8 }', () => lengthGetter(1e8)],
  ['{ length: n }', (n) => lengthGetter(n)],
  ['Object.create(Uint8Array.prototype)', () => [Object.create(Uint8Array.prototype), () => 0]],
];

function counted(target) {
  let reads = 0;
  const p = proxy(target, {
    get(t, key) {
      if (key === 'length' || key === 'byteLength' || key === Symbol.iterator || /^\d+$/.test(String(key))) reads++;
      const v = Reflect.get(t, key, t);
      return typeof v === 'function' ? v.bind(t) : v;
    },
  });
  return [p, () => reads];
}

function lengthGetter(length) {
  let reads = 0;
  const o = {
    get length() {
      reads++;
      return length;
    },
  };
  return [o, () => reads];
}

/**
 * Builds a host argument for memory of `n` bytes: { value, bytes (the view of the bytes
 * a copy uses, or null), byteLength, alias: { record, off } | null, junk }.
 */
function makeHostArg(world, spec, n, records, rng) {
  const lenFor = () => {
    switch (spec.lenMode) {
      case 'exact':
        return n;
      case 'less':
        return n === 0 ? 0 : Math.max(0, n - 1 - (spec.rand % n));
      case 'more':
        return n + 1 + (spec.rand % 64);
      case 'zero':
        return 0;
      default:
        return spec.rand % (n + 64);
    }
  };
  if (spec.form === 'junk') {
    // known defect 1's array-likes too, once it is fixed.
    const junk = KNOWN_DEFECTS.has(1) ? HOST_JUNK : [...HOST_JUNK, ...DEFECT1_ARGS.map(([, make]) => () => make(n)[0])];
    return { value: junk[spec.rand % junk.length](), junk: true };
  }
  if (spec.form === 'none') return { value: undefined, none: true };
  if (spec.form === 'null') return { value: null, none: true };
  if (spec.form === 'usm') {
    const candidates = records.filter((r) => !r.freed && !r.ro && r.kind !== 'device' && r.nbytes > 0);
    if (candidates.length) {
      const u = candidates[spec.rand % candidates.length];
      const off = spec.byteOff % u.nbytes;
      const len = Math.min(lenFor(), u.nbytes - off);
      const buffer = u.obj.buffer;
      if (u.buffer && u.buffer !== buffer) throw new FuzzFailure(`${u.label}.buffer is not the same object on every read`);
      u.buffer = buffer;
      const value = new Uint8Array(buffer, off, len);
      return { value, bytes: value, byteLength: len, alias: { record: u, off } };
    }
  }
  const L = lenFor();
  const form = spec.form === 'usm' ? 'u8' : spec.form;
  const fill = (ab) => {
    const all = new Uint8Array(ab);
    all.set(patternBytes(all.length, rng()));
    return ab;
  };
  if (form === 'ab') {
    const ab = fill(new ArrayBuffer(L));
    return { value: ab, bytes: new Uint8Array(ab), byteLength: L };
  }
  if (form === 'rab') {
    const ab = fill(new ArrayBuffer(L, { maxByteLength: L + 64 }));
    return { value: ab, bytes: new Uint8Array(ab), byteLength: L };
  }
  if (form === 'sab') {
    const sab = fill(new SharedArrayBuffer(L));
    return { value: sab, bytes: new Uint8Array(sab), byteLength: L };
  }
  if (form === 'dv' || form === 'buf' || form === 'u8sab') {
    const off = spec.byteOff % 8;
    const backing = form === 'u8sab' ? new SharedArrayBuffer(off + L + 3) : new ArrayBuffer(off + L + 3);
    fill(backing);
    const value = form === 'dv' ? new DataView(backing, off, L) : form === 'buf' ? Buffer.from(backing, off, L) : new Uint8Array(backing, off, L);
    return { value, bytes: new Uint8Array(backing, off, L), byteLength: L, backing };
  }
  const T = TYPED[form] ?? Uint8Array;
  const e = T.BYTES_PER_ELEMENT;
  const count = Math.floor(L / e);
  const off = (spec.byteOff % 4) * e;
  const backing = fill(new ArrayBuffer(off + count * e + 3));
  const value = new T(backing, off, count);
  return { value, bytes: new Uint8Array(backing, off, count * e), byteLength: count * e, backing };
}

// ---------------------------------------------------------------------------------------
// The case runner
// ---------------------------------------------------------------------------------------

const KIND_NAMES = ['device', 'shared', 'host'];
const KIND_ENUM = { unknown: 0, device: 1, shared: 2, host: 3 };

class Run {
  constructor(world, c) {
    this.world = world;
    this.c = c;
    this.records = [];
    this.step = -1;
    this.stepLabel = 'setup';
    this.rng = xorshift32((c.seed >>> 0) || 7);
    this.sentinel = { sentinel: `fuzz-${c.seed}` };
    /** TypedArrays over buffers of collected objects (gcDrop), with their model tokens. */
    this.held = [];
  }

  fail(message) {
    throw new FuzzFailure(`step ${this.step} (${this.stepLabel}): ${message}`);
  }

  /** Registers a new allocation; an overlap with a live or cached block fails the step. */
  newBlock(ptr, nbytes, kind, ctx, align) {
    try {
      return newBlock(this.world, ptr, nbytes, kind, ctx, align);
    } catch (e) {
      if (e instanceof FuzzFailure) this.fail(e.message);
      throw e;
    }
  }

  /** Counts what the cases exercised (by step and outcome), for the coverage summary. */
  count(expect) {
    const outcome = !expect ? 'ok' : expect.error ? expect.error.map((e) => e.code).join('|') : 'user exception';
    const key = `${this.stepLabel.split(' ')[0]} ${outcome}`;
    this.world.coverage.set(key, (this.world.coverage.get(key) ?? 0) + 1);
  }

  /** Runs `fn` and checks it against `expect` (an expected error, or a function checking the result). */
  expectSync(what, expect, fn, onSuccess) {
    this.count(expect);
    let result;
    try {
      result = fn();
    } catch (e) {
      if (e instanceof FuzzFailure) throw e;
      this.checkThrown(what, expect, e);
      return undefined;
    }
    if (isExpectedError(expect)) this.fail(`${what} succeeded (${show(result)}), expected ${describeExpectation(expect)}`);
    if (onSuccess) onSuccess(result);
    return result;
  }

  /**
   * An async method: `callTime` errors must throw at the call, `settleTime` ones reject
   * (README: argument errors throw at the call; errors while copying reject).
   */
  async expectAsync(what, expect, fn, onSuccess) {
    this.count(expect);
    let promise;
    try {
      promise = fn();
    } catch (e) {
      if (e instanceof FuzzFailure) throw e;
      if (isExpectedError(expect) && expect.atSettle) this.fail(`${what} threw at the call (${describeThrown(e)}); ${describeExpectation(expect)} must reject the Promise`);
      this.checkThrown(what, expect, e);
      return undefined;
    }
    if (!(promise instanceof Promise)) this.fail(`${what} returned ${show(promise)}, not a Promise`);
    if (isExpectedError(expect) && !expect.atSettle) {
      promise.catch(() => {});
      this.fail(`${what} returned a Promise; ${describeExpectation(expect)} must throw at the call`);
    }
    let result;
    try {
      result = await promise;
    } catch (e) {
      if (e instanceof FuzzFailure) throw e;
      this.checkThrown(`${what} (rejected)`, expect, e);
      return undefined;
    }
    if (isExpectedError(expect)) this.fail(`${what} resolved (${show(result)}), expected ${describeExpectation(expect)}`);
    if (onSuccess) onSuccess(result);
    return result;
  }

  checkThrown(what, expect, e) {
    if (expect && 'throws' in expect) {
      if (e !== expect.throws) this.fail(`${what} threw ${describeThrown(e)}, expected the user's exception to come out unchanged`);
      return;
    }
    const codeOk = e instanceof Builtin.Error && typeof e.code === 'string' && e.code.startsWith('ERR_');
    if (!codeOk) this.fail(`${what} threw ${describeThrown(e)}: not an Error with an ERR_ code${expect && !isExpectedError(expect) ? ' (expected success)' : ''}`);
    if (!isExpectedError(expect)) this.fail(`${what} threw ${describeThrown(e)}, expected success`);
    const match = expect.error.find((x) => x.code === e.code);
    if (!match) this.fail(`${what} threw ${describeThrown(e)}, expected ${describeExpectation(expect)}`);
    const Cls = { ...Builtin, ...this.errorClasses() }[match.cls];
    if (e.constructor !== Cls) this.fail(`${what} threw ${e.constructor?.name} with ${e.code}, expected class ${match.cls}`);
    if (typeof e.message !== 'string' || e.message.length === 0) this.fail(`${what}: ${e.code} has no message`);
  }

  errorClasses() {
    const a = this.world.addon;
    return { USMAllocationError: a.USMAllocationError, SyclQueueCreationError: a.SyclQueueCreationError, SyclDeviceCreationError: a.SyclDeviceCreationError };
  }

  pick(sel, filter = () => true) {
    const list = this.records.filter(filter);
    return list.length ? list[sel % list.length] : null;
  }

  // ---- records ----

  addRecord(obj, props) {
    const r = { id: this.world.nextId++, obj, freed: false, buffer: null, ...props };
    r.label = `#${r.id}(${r.kind} ${r.nbytes}B${r.ro ? ' ro' : ''})`;
    r.token = { record: r.id };
    addRef(r.block, r.token);
    this.records.push(r);
    this.checkProps(r, 'a new memory object');
    return r;
  }

  /** Everything a live memory object reports about itself. */
  checkProps(r, what = r.label) {
    const { obj } = r;
    const Class = this.world.classes[r.kind];
    if (!(obj instanceof Class)) this.fail(`${what} is a ${obj?.constructor?.name}, expected ${Class.name}`);
    const ptr = r.block.addr + BigInt(r.off);
    if (obj.pointer !== ptr) this.fail(`${what}: pointer ${hex(obj.pointer)}, expected ${hex(ptr)} (allocation ${hex(r.block.addr)} + ${r.off})`);
    if (obj.nbytes !== r.nbytes || obj.size !== r.nbytes) this.fail(`${what}: nbytes ${obj.nbytes} / size ${obj.size}, expected ${r.nbytes}`);
    if (obj.getUsmType() !== r.kind) this.fail(`${what}: getUsmType() ${obj.getUsmType()}, expected ${r.kind}`);
    if (obj.getUsmTypeEnum() !== KIND_ENUM[r.kind]) this.fail(`${what}: getUsmTypeEnum() ${obj.getUsmTypeEnum()}`);
    const q = obj.syclQueue;
    if (r.queue.same) {
      if (q !== r.queue.same) this.fail(`${what}: syclQueue is not the queue object it was made with`);
    } else if (r.queue.cached) {
      // A filter string: the cached queue of the device, one object for every such view.
      this.world.filterQueue ??= q;
      if (q !== this.world.filterQueue) this.fail(`${what}: syclQueue of a filter-string syclobj is not the device's cached queue object`);
    } else {
      if (!(q instanceof this.world.addon.SyclQueue)) this.fail(`${what}: syclQueue is not a SyclQueue`);
      if (r.queueObj && q !== r.queueObj) this.fail(`${what}: syclQueue is not the same object on every read`);
    }
    r.queueObj = q;
    if (!this.world.queueCtx.has(q)) this.world.queueCtx.set(q, r.block.ctx);
    if (!obj.syclContext.equals(this.world.ctxObj[r.block.ctx])) this.fail(`${what}: syclContext is not context ${r.block.ctx}`);
    if (!q.syclContext.equals(this.world.ctxObj[r.block.ctx])) this.fail(`${what}: syclQueue.syclContext is not context ${r.block.ctx}`);
    if (!obj.syclDevice.equals(this.world.device)) this.fail(`${what}: syclDevice is not the device`);
    if (obj.referenceObj !== r.ref) this.fail(`${what}: referenceObj ${show(obj.referenceObj)}, expected ${r.ref === null ? 'null' : 'the exporter'}`);
    const text = `<SYCL(TM) USM-${r.kind} allocation of ${r.nbytes} bytes at ${hex(ptr)}>`;
    if (String(obj) !== text) this.fail(`${what}: toString() ${String(obj)}, expected ${text}`);
  }

  /** The bytes of a live record, through toBytes, against the shadow. */
  checkBytes(r, what) {
    const got = r.obj.toBytes();
    if (!Buffer.isBuffer(got)) this.fail(`${what}: toBytes() is not a Buffer`);
    const diff = firstDifference(got, this.expectedBytes(r));
    if (diff) this.fail(`${what}: toBytes() of ${r.label}: ${diff} (a wrong byte)`);
  }

  expectedBytes(r) {
    return r.block.shadow.subarray(r.off, r.off + r.nbytes);
  }

  write(r, off, bytes) {
    r.block.shadow.set(bytes, r.off + off);
  }

  free(r) {
    const buffer = r.buffer;
    this.expectSync(`${r.label}.free()`, undefined, () => r.obj.free());
    if (!r.freed) {
      r.freed = true;
      dropRef(this.world, r.block, r.token);
    }
    if (buffer && buffer.byteLength !== 0) this.fail(`${r.label}.free() left its buffer attached (${buffer.byteLength} bytes)`);
  }

  // ---- allocation ----

  allocate(spec) {
    const w = this.world;
    const kind = KIND_NAMES[spec.kind % 3];
    const Class = w.classes[kind];
    const queue = [w.queueA, w.queueA2, w.queueB, w.subQueue, w.queueB][spec.q % 5];
    const align = [0, 0, 0, 1, 8, 64, 256, 512, 4096][spec.align % 9];
    const n = spec.size;
    const size = spec.form === 'bigint' ? BigInt(n) : n;
    let opts;
    let q = queue;
    let a = align;
    switch (spec.optStyle % 6) {
      case 0:
        opts = undefined;
        q = w.defaultQueue;
        a = 0;
        break;
      case 1:
        opts = { queue };
        a = 0;
        break;
      case 2:
        opts = { queue, alignment: align };
        break;
      case 3:
        opts = { alignment: BigInt(align) };
        q = w.defaultQueue;
        break;
      case 4:
        opts = { alignment: align, queue, copy: false };
        break;
      default:
        opts = { queue, alignment: undefined, copy: null };
        a = 0;
    }
    const ctx = w.queueCtx.get(q);
    const obj = this.expectSync(`new ${Class.name}(${show(size)}, ${show(opts)})`, undefined, () => new Class(size, opts));
    if (a > 0 && obj.pointer % BigInt(a) !== 0n) this.fail(`an allocation with alignment ${a} is at ${hex(obj.pointer)}`);
    const block = this.newBlock(obj.pointer, n, kind, ctx, a);
    const r = this.addRecord(obj, { kind, block, off: 0, nbytes: n, ro: false, queue: { same: q }, ref: null });
    // Known contents: a pattern written through copyFromHost.
    const bytes = patternBytes(n, this.rng());
    this.expectSync(`${r.label}.copyFromHost(pattern)`, undefined, () => obj.copyFromHost(bytes));
    this.write(r, 0, bytes);
    return r;
  }

  /** A memory object made from a view prediction. */
  addView(obj, view, kind, what, ref) {
    if (view.block.kind !== kind) this.fail(`model: ${what} gave a ${kind} object over a ${view.block.kind} block`);
    return this.addRecord(obj, { kind, block: view.block, off: view.off, nbytes: view.nbytes, ro: view.ro, queue: view.queue.newIn ? { newIn: view.ctx } : view.queue, ref });
  }

  // ---- steps ----

  async run() {
    const w = this.world;
    for (const base of this.c.bases) this.allocate(base);
    for (let i = 0; i < this.c.steps.length; i++) {
      const s = this.c.steps[i];
      this.step = i;
      this.stepLabel = s.t;
      await this[`step_${s.t}`](s);
      syncCached(w);
    }
    this.step = this.c.steps.length;
    this.stepLabel = 'teardown';
    // Every live object still reads the model's bytes and reports the model's properties.
    for (const r of this.records) {
      if (r.freed) continue;
      this.checkProps(r);
      this.checkBytes(r, 'at the end');
      if (r.buffer) {
        const diff = firstDifference(new Uint8Array(r.buffer), this.expectedBytes(r));
        if (diff) this.fail(`${r.label}.buffer at the end: ${diff}`);
      }
    }
    const order = this.c.freeOrder ?? 0;
    const list = [...this.records];
    for (let k = 0; k < list.length; k++) {
      const r = list[(k * 7 + order) % list.length] ?? list[k];
      this.free(r);
    }
    for (const r of this.records) if (!r.freed) this.free(r);
    // After free(): ERR_USM_FREED everywhere, toString says so, free() again is a no-op.
    const r = this.records[order % this.records.length];
    if (r) {
      this.expectSync(`${r.label}.pointer after free()`, E('ERR_USM_FREED'), () => r.obj.pointer);
      this.expectSync(`${r.label}.copyToHost() after free()`, E('ERR_USM_FREED'), () => r.obj.copyToHost());
      this.expectSync(`${r.label}.__sycl_usm_array_interface__ after free()`, E('ERR_USM_FREED'), () => r.obj.__sycl_usm_array_interface__);
      const text = `<SYCL(TM) USM-${r.kind} allocation (freed)>`;
      if (String(r.obj) !== text) this.fail(`toString() after free(): ${String(r.obj)}`);
      this.free(r);
    }
    await this.releaseHeld();
    const stats = syncCached(w);
    for (const kind of KIND_NAMES) {
      if (stats[kind].inUseBytes !== 0) {
        this.fail(`every object is freed but poolStats().${kind}.inUseBytes is ${stats[kind].inUseBytes}: something still holds (or leaked) an allocation`);
      }
    }
    for (const b of w.blocks.values()) {
      if (b.state === 'live') this.fail(`model: block ${hex(b.addr)} still has references ${[...b.refs].map(show)}`);
    }
    w.cases++;
  }

  step_alloc(s) {
    this.allocate(s.spec);
  }

  /**
   * GC: a memory object dropped without free() while JS still holds a TypedArray over
   * its buffer. The buffer keeps the memory: after collections it still reads the
   * model's bytes, and new allocations of the same size never land on it. At the end the
   * TypedArray is dropped too and collection gives the memory back.
   */
  async step_gcDrop(s) {
    if (!gc) return;
    const r = this.pick(s.m, (x) => !x.freed && !x.ro && x.kind !== 'device' && x.nbytes > 0);
    if (!r) return;
    this.stepLabel = `gcDrop of ${r.label}`;
    const buffer = r.buffer ?? r.obj.buffer;
    const off = s.n % r.nbytes;
    const view = new Uint8Array(buffer, off, Math.min(r.nbytes - off, 1 + (s.n % 97)));
    const token = { heldBuffer: r.id };
    addRef(r.block, token);
    this.held.push({ view, block: r.block, token, at: r.off + off });
    // Drop the object (and, with s.all, every object on its allocation) without free().
    for (const x of [...this.records]) {
      if (x === r || (s.all && x.block === r.block && !x.freed)) {
        this.records.splice(this.records.indexOf(x), 1);
        if (!x.freed) dropRef(this.world, x.block, x.token);
        x.obj = null;
        x.buffer = null;
      }
    }
    for (let i = 0; i < 3; i++) {
      gc();
      await tick();
    }
    for (let k = 0; k < 2; k++) {
      const n = this.allocate({ kind: KIND_NAMES.indexOf(r.kind), size: r.block.nbytes, align: 0, q: r.block.ctx === 'B' ? 2 : 0, form: 'number', optStyle: 1 });
      n.obj.memset(0xcc);
      this.write(n, 0, new Uint8Array(n.nbytes).fill(0xcc));
    }
    for (const h of this.held) {
      const diff = firstDifference(h.view, h.block.shadow.subarray(h.at, h.at + h.view.length));
      if (diff) this.fail(`a TypedArray over the buffer of a collected memory object reads ${diff} (its memory was given away)`);
    }
    const bytes = patternBytes(view.length, this.rng());
    view.set(bytes);
    r.block.shadow.set(bytes, r.off + off);
    for (const x of this.records) if (!x.freed) this.checkBytes(x, 'after writing through a held TypedArray');
  }

  /** Drops the TypedArrays gcDrop kept; collection must give their memory back. */
  async releaseHeld() {
    if (this.held.length === 0) return;
    const held = this.held;
    this.held = [];
    for (const h of held) h.view = null;
    const inUse = () => {
      const stats = this.world.addon.poolStats();
      return KIND_NAMES.reduce((sum, k) => sum + stats[k].inUseBytes, 0);
    };
    for (let i = 0; i < 60 && inUse() > 0; i++) {
      gc();
      await tick();
    }
    for (const h of held) dropRef(this.world, h.block, h.token);
    if (inUse() > 0) this.fail(`memory reachable only from dropped TypedArrays is still in use after 60 collections (${inUse()} bytes)`);
  }

  /** A constructor with a junk first argument and/or junk options. */
  step_badCtor(s) {
    const w = this.world;
    const kind = KIND_NAMES[s.kind % 3];
    const Class = w.classes[kind];
    const arg = s.validSize ? s.validSize : CTOR_ARGS[s.arg % CTOR_ARGS.length](w);
    const opts = makeOptions(w, s.opts, this.records, this.sentinel);
    const what = `new ${Class.name}(${show(arg)}, ${show(opts)})`;
    if (s.noNew) {
      // A class called without `new`: the engine's TypeError (README's table promises
      // ERR_CONSTRUCT_CALL_REQUIRED, which a JS class cannot attach), or that code.
      const what = `${Class.name}(${show(arg)}) without new`;
      this.count(E('ERR_CONSTRUCT_CALL_REQUIRED'));
      let thrown = null;
      try {
        Class(arg, opts);
      } catch (e) {
        thrown = e;
      }
      if (!thrown) this.fail(`${what} did not throw`);
      if (thrown.constructor !== Builtin.TypeError || (thrown.code !== undefined && thrown.code !== 'ERR_CONSTRUCT_CALL_REQUIRED')) {
        this.fail(`${what} threw ${describeThrown(thrown)}, expected a TypeError`);
      }
      return;
    }
    const o = predictOptions(w, opts, this.records);
    let expect = isExpectedError(o) ? o : predictSizeArg(arg);
    if (!isExpectedError(expect) && o.alignment >= 2n ** 40n) expect = anyOf(E('ERR_USM_ALLOCATION'), E('ERR_INVALID_ALIGNMENT'));
    if (!isExpectedError(expect)) {
      // A valid size: it allocates.
      const q = o.queue ?? w.defaultQueue;
      const obj = this.expectSync(what, undefined, () => new Class(arg, opts));
      if (o.alignment > 0n && obj.pointer % o.alignment !== 0n) this.fail(`${what} is not aligned: ${hex(obj.pointer)}`);
      const block = this.newBlock(obj.pointer, expect.alloc, kind, w.queueCtx.get(q), Number(o.alignment));
      const r = this.addRecord(obj, { kind, block, off: 0, nbytes: expect.alloc, ro: false, queue: { same: q }, ref: null });
      const bytes = patternBytes(r.nbytes, this.rng());
      obj.copyFromHost(bytes);
      this.write(r, 0, bytes);
      return;
    }
    this.expectSync(what, expect, () => new Class(arg, opts));
  }

  /** Builds the exporter of an interface spec; returns { exporter, iface, expect }. */
  buildExporter(s) {
    const w = this.world;
    const r = this.pick(s.src);
    const b = r?.block;
    // The data pointer.
    let p;
    const slack = b ? b.size - b.nbytes : 0;
    switch (r ? s.where : 'foreign') {
      case 'start':
        p = b.addr + BigInt(r.off);
        break;
      case 'inside':
        p = b.addr + BigInt(r.off + Math.floor((s.frac * r.nbytes) / 1001));
        break;
      case 'end':
        p = b.addr + BigInt(b.nbytes);
        break;
      case 'slack':
        p = b.addr + BigInt(b.nbytes + (slack > 0 ? s.delta % slack : 0));
        break;
      case 'pastBlock':
        p = b.addr + BigInt(b.size + s.delta);
        break;
      default:
        p = [0n, 1n, 4096n, 0x7fff_ffff_f000n, U64 - 16n, 12345n, 0xffff_8000_0000_0000n][s.foreign % 7];
    }
    const typestr = s.badTypestr ? INVALID_TYPESTRS[s.typestr % INVALID_TYPESTRS.length] : VALID_TYPESTRS[s.typestr % VALID_TYPESTRS.length];
    const itemsize = Number(itemsizeOf(typestr) ?? 1n);
    // Shape and strides.
    let shape = s.shape.slice(0, s.nd);
    let strides = null;
    if (s.stridesMode === 'match') strides = s.strides.concat([1, 2, 3]).slice(0, shape.length);
    else if (s.stridesMode === 'random') strides = s.strides.slice();
    else if (s.stridesMode === 'empty') strides = [];
    if (s.fit && r) {
      // One dimension that ends exactly at the end of the allocation (or one item short or past).
      const startOff = Number(p - b.addr);
      shape = [Math.max(0, Math.floor((b.nbytes - startOff) / itemsize) + s.fitJitter)];
      strides = s.stridesMode === 'match' ? [1] : null;
    }
    // The offset: aimed at a point of the allocation, or random.
    let offset;
    if (s.aim === 'missing') offset = undefined;
    else if (s.aim === 'zero') offset = 0;
    else if (s.aim === 'random') offset = s.jitter * 16 + (s.frac % 64) - 32;
    else if (b && !s.fit) {
      // Aim the range at a point where it fits in the allocation when it can.
      let minD = 0n;
      let len = BigInt(itemsize);
      const valid = shape.every((x) => x >= 0) && (!strides || strides.length === shape.length);
      if (valid) {
        const ext = extent(shape.map(BigInt), strides && strides.map(BigInt), 0n, BigInt(itemsize));
        if (!isExpectedError(ext)) ({ minDisp: minD, nbytes: len } = ext);
      }
      const room = Math.max(0, b.nbytes - Number(len));
      const target = b.addr + BigInt(Math.floor((s.frac * room) / 1001 / itemsize) * itemsize);
      offset = Math.floor(Number(target - p) / itemsize) - Number(minD) + s.jitter;
    } else offset = s.fit ? 0 : s.jitter;
    const num = (v) => (s.bigints && typeof v === 'number' ? BigInt(v) : v);
    const pointer = s.ptrForm === 'num' && p <= MAX_SAFE ? Number(p) : p;
    const ro = [false, false, false, true, 0, 1, 0n, 1n, NaN, -0][s.ro % 10];
    let iface;
    if (s.wrap === 'produced' && r) {
      try {
        iface = r.obj.__sycl_usm_array_interface__;
      } catch {
        iface = null; // a freed object: use the lazy form below
      }
    }
    if (!iface) {
      iface = {
        data: [pointer, ro],
        shape: shape.map(num),
        strides: strides && strides.map(num),
        typestr,
        version: [1, 1, 1, 1n, 1, 1, 1, 1n, 0, 2, 2n, '1', 1.5, null][s.version % 14],
        syclobj: SYCLOBJ_FORMS[s.syclobj % SYCLOBJ_FORMS.length][1](w, r, s.filter),
      };
      if (offset !== undefined) iface.offset = num(offset);
      if (s.stridesMode === 'absent') delete iface.strides;
    }
    for (const j of s.junk) {
      const field = IFACE_FIELDS[j.field % IFACE_FIELDS.length];
      const value = FIELD_JUNK[j.v % FIELD_JUNK.length]();
      if (value === undefined && j.v % 2 === 0) delete iface[field];
      else iface[field] = value;
    }
    // The exporter around it.
    const sentinel = this.sentinel;
    let exporter;
    let expectOverride = null;
    switch (s.wrap) {
      case 'proxy':
        exporter = { __sycl_usm_array_interface__: proxy(iface) };
        break;
      case 'getter': {
        exporter = { get __sycl_usm_array_interface__() { return iface; } };
        break;
      }
      case 'throwIfaceGetter':
        exporter = Object.defineProperty({}, '__sycl_usm_array_interface__', { get: throwingGetter(sentinel), enumerable: true });
        expectOverride = Throws(sentinel);
        break;
      case 'throwFieldGetter': {
        const field = IFACE_FIELDS[s.frac % IFACE_FIELDS.length];
        Object.defineProperty(iface, field, { get: throwingGetter(sentinel), enumerable: true, configurable: true });
        exporter = { __sycl_usm_array_interface__: iface };
        expectOverride = Throws(sentinel);
        break;
      }
      case 'nonObject':
        iface = [5, 'x', null, [1, 2], true, () => {}, undefined, 7n][s.frac % 8];
        exporter = { __sycl_usm_array_interface__: iface };
        break;
      case 'function':
        exporter = Object.assign(() => {}, { __sycl_usm_array_interface__: iface });
        break;
      case 'produced':
        if (!r || r.freed) {
          // A getter that reads the interface of a freed object: its ERR_USM_FREED propagates.
          exporter = { get __sycl_usm_array_interface__() { return r ? r.obj.__sycl_usm_array_interface__ : iface; } };
          if (r) expectOverride = E('ERR_USM_FREED');
        } else exporter = { __sycl_usm_array_interface__: iface };
        break;
      default:
        exporter = { __sycl_usm_array_interface__: iface };
    }
    const expect = expectOverride ?? predictInterface(w, iface);
    return { exporter, iface, expect, src: r };
  }

  /** An interface view through one entry point. */
  async step_view(s) {
    const w = this.world;
    const { exporter, iface, expect } = this.buildExporter(s.iface);
    const kind = KIND_NAMES[s.kind % 3];
    const Class = w.classes[kind];
    this.stepLabel = `view ${s.entry} of ${show(iface)}`;
    await this.consume(s, exporter, expect, Class, kind);
  }

  /** Consumption of `exporter` (an exporter or a memory object) through `s.entry`. */
  async consume(s, exporter, expect, Class, kind, srcRecord = null) {
    const w = this.world;
    const ref = srcRecord ? srcRecord.ref : exporter;
    switch (s.entry) {
      case 'ctor':
      case 'ctorCopy': {
        const opts = s.entry === 'ctorCopy' ? { copy: true, ...(s.q % 3 === 1 ? { queue: w.queueB } : s.q % 3 === 2 ? { queue: w.queueA } : {}) } : makeOptions(w, s.opts, this.records, this.sentinel);
        const o = predictOptions(w, opts, this.records);
        let x = isExpectedError(o) ? o : expect;
        const what = `new ${Class.name}(exporter, ${show(opts)})`;
        if (!isExpectedError(x) && x.view.block.kind !== kind) {
          if (!o.copy) x = E('ERR_USM_KIND_MISMATCH');
          else {
            // copy: true: a new allocation of this kind on the option's queue, with the view's bytes.
            const view = x.view;
            const q = o.queue ?? w.defaultQueue;
            const bytes = view.block.shadow.slice(view.off, view.off + view.nbytes);
            const obj = this.expectSync(what, undefined, () => new Class(exporter, opts));
            const block = this.newBlock(obj.pointer, view.nbytes, kind, w.queueCtx.get(q), 0);
            block.shadow.set(bytes);
            const r = this.addRecord(obj, { kind, block, off: 0, nbytes: view.nbytes, ro: false, queue: { same: q }, ref: null });
            this.checkBytes(r, `${what} (a copy)`);
            return;
          }
        }
        if (isExpectedError(x)) {
          this.expectSync(what, x, () => new Class(exporter, opts));
          return;
        }
        const obj = this.expectSync(what, undefined, () => new Class(exporter, opts));
        const r = this.addView(obj, x.view, kind, what, ref);
        this.checkView(r, srcRecord);
        return;
      }
      case 'as': {
        const what = 'asUsmMemory(exporter)';
        if (isExpectedError(expect)) {
          this.expectSync(what, expect, () => w.addon.asUsmMemory(exporter));
          return;
        }
        const obj = this.expectSync(what, undefined, () => w.addon.asUsmMemory(exporter));
        const r = this.addView(obj, expect.view, expect.view.block.kind, what, ref);
        this.checkView(r, srcRecord);
        return;
      }
      default: {
        // copyFromDevice[Async] into another memory object.
        const d = this.pick(s.dst);
        if (!d) return;
        const async = s.entry === 'cfdAsync';
        const what = `${d.label}.copyFromDevice${async ? 'Async' : ''}(exporter)`;
        let x = d.freed ? E('ERR_USM_FREED') : expect;
        let settle = false;
        if (!isExpectedError(x)) {
          settle = true;
          if (x.view.nbytes > d.nbytes) x = E('ERR_SOURCE_TOO_LARGE');
          else if (d.ro) x = E('ERR_READ_ONLY');
        }
        if (isExpectedError(x)) {
          if (settle) x = { ...x, atSettle: true };
          if (async) await this.expectAsync(what, x, () => d.obj.copyFromDeviceAsync(exporter));
          else this.expectSync(what, x, () => d.obj.copyFromDevice(exporter));
          return;
        }
        const view = x.view;
        const bytes = view.block.shadow.slice(view.off, view.off + view.nbytes);
        if (async) await this.expectAsync(what, undefined, () => d.obj.copyFromDeviceAsync(exporter), (v) => v === undefined || this.fail(`${what} resolved to ${show(v)}`));
        else this.expectSync(what, undefined, () => d.obj.copyFromDevice(exporter), (v) => v === undefined || this.fail(`${what} returned ${show(v)}`));
        this.write(d, 0, bytes);
        this.checkBytes(d, what);
      }
    }
  }

  /** A new view: its bytes, its read-only flag, and that writes through it land in the allocation. */
  checkView(r, src) {
    this.checkBytes(r, `the new view ${r.label}`);
    const iface = r.obj.__sycl_usm_array_interface__;
    if (iface.data[1] !== r.ro) this.fail(`${r.label}: produced data[1] is ${iface.data[1]}, expected the read-only flag ${r.ro}`);
    if (r.ro) {
      this.expectSync(`${r.label}.memset(1) (read-only)`, E('ERR_READ_ONLY'), () => r.obj.memset(1));
      this.expectSync(`${r.label}.buffer (read-only)`, r.kind === 'device' ? E('ERR_NOT_HOST_ACCESSIBLE') : E('ERR_READ_ONLY'), () => r.obj.buffer);
    }
    if (src && src.queueObj && r.obj.syclQueue !== src.obj.syclQueue) this.fail(`${r.label}: a view of a memory object does not share its syclQueue object`);
  }

  /** A view of one of our memory objects itself (not through its interface). */
  async step_viewObj(s) {
    const src = this.pick(s.src);
    if (!src) return;
    const kind = KIND_NAMES[s.kind % 3];
    const Class = this.world.classes[kind];
    this.stepLabel = `viewObj ${s.entry} of ${src.label}`;
    const expect = src.freed
      ? E('ERR_USM_FREED')
      : { view: { block: src.block, off: src.off, nbytes: src.nbytes, ro: src.ro, ctx: src.block.ctx, queue: { same: src.queueObj } } };
    await this.consume(s, src.obj, expect, Class, kind, src);
  }

  /** copyFromHost[Async], memset[Async], writes through buffer, copyFromDevice[Async] of a memory object. */
  async step_write(s) {
    const r = this.pick(s.m);
    if (!r) return;
    const async = s.async;
    this.stepLabel = `write ${s.via}${async ? ' async' : ''} into ${r.label}`;
    switch (s.via) {
      case 'host': {
        const arg = makeHostArg(this.world, s.host, r.nbytes, this.records, this.rng);
        const what = `${r.label}.copyFromHost${async ? 'Async' : ''}(${show(arg.value)})`;
        let x;
        if (r.freed) x = arg.junk || arg.none ? anyOf(E('ERR_USM_FREED'), E('ERR_INVALID_ARG_TYPE')) : E('ERR_USM_FREED');
        else if (arg.junk || arg.none) x = E('ERR_INVALID_ARG_TYPE');
        else if (arg.byteLength > r.nbytes) x = { ...E('ERR_SOURCE_TOO_LARGE'), atSettle: true };
        else if (r.ro) x = { ...E('ERR_READ_ONLY'), atSettle: true };
        if (arg.alias) this.checkAlias(arg);
        const bytes = arg.bytes ? arg.bytes.slice() : null;
        if (async) await this.expectAsync(what, x, () => r.obj.copyFromHostAsync(arg.value));
        else this.expectSync(what, x, () => r.obj.copyFromHost(arg.value));
        if (!x) {
          this.write(r, 0, bytes);
          this.checkBytes(r, what);
          if (arg.alias) this.checkAlias(arg);
        }
        return;
      }
      case 'memset': {
        const [value, outcome] = FILL_VALUES[s.value % FILL_VALUES.length];
        const what = `${r.label}.memset${async ? 'Async' : ''}(${show(value)})`;
        // Freed and a bad value: the order of the two checks is not part of the contract.
        let x = isExpectedError(outcome) ? (r.freed ? anyOf(outcome, E('ERR_USM_FREED')) : outcome) : r.freed ? E('ERR_USM_FREED') : r.ro ? { ...E('ERR_READ_ONLY'), atSettle: true } : undefined;
        const call = s.omit ? () => (async ? r.obj.memsetAsync() : r.obj.memset()) : () => (async ? r.obj.memsetAsync(value) : r.obj.memset(value));
        if (s.omit) x = r.freed ? E('ERR_USM_FREED') : r.ro ? { ...E('ERR_READ_ONLY'), atSettle: true } : undefined;
        if (async) await this.expectAsync(what, x, call);
        else this.expectSync(what, x, call);
        if (!x) {
          this.write(r, 0, new Uint8Array(r.nbytes).fill(s.omit ? 0 : outcome));
          this.checkBytes(r, what);
        }
        return;
      }
      case 'buffer': {
        const what = `${r.label}.buffer`;
        const x = r.freed ? E('ERR_USM_FREED') : r.kind === 'device' ? E('ERR_NOT_HOST_ACCESSIBLE') : r.ro ? E('ERR_READ_ONLY') : undefined;
        const buffer = this.expectSync(what, x, () => r.obj.buffer);
        if (x) return;
        if (!(buffer instanceof ArrayBuffer) || buffer.byteLength !== r.nbytes) this.fail(`${what} is ${show(buffer)}, expected an ArrayBuffer of ${r.nbytes} bytes`);
        if (r.buffer && r.buffer !== buffer) this.fail(`${what} is not the same object on every read`);
        r.buffer = buffer;
        const view = new Uint8Array(buffer);
        const diff = firstDifference(view, this.expectedBytes(r));
        if (diff) this.fail(`${what} reads ${diff} (zero-copy view of the wrong bytes)`);
        const off = s.host.byteOff % r.nbytes;
        const bytes = patternBytes(Math.min(r.nbytes - off, 1 + (s.host.rand % 64)), this.rng());
        view.set(bytes, off);
        this.write(r, off, bytes);
        this.checkBytes(r, `after writing through ${what}`);
        return;
      }
      default: {
        // copyFromDevice of another memory object.
        const src = this.pick(s.src);
        const what = `${r.label}.copyFromDevice${async ? 'Async' : ''}(${src.label})`;
        let x;
        if (r.freed || src.freed) x = E('ERR_USM_FREED');
        else if (src.nbytes > r.nbytes) x = { ...E('ERR_SOURCE_TOO_LARGE'), atSettle: true };
        else if (r.ro) x = { ...E('ERR_READ_ONLY'), atSettle: true };
        const bytes = src.freed ? null : this.expectedBytes(src).slice();
        if (async) await this.expectAsync(what, x, () => r.obj.copyFromDeviceAsync(src.obj));
        else this.expectSync(what, x, () => r.obj.copyFromDevice(src.obj));
        if (!x) {
          this.write(r, 0, bytes);
          this.checkBytes(r, what);
        }
      }
    }
  }

  /** The bytes JS sees in an argument over USM memory are the model's bytes. */
  checkAlias(arg) {
    const { record, off } = arg.alias;
    const want = record.block.shadow.subarray(record.off + off, record.off + off + arg.byteLength);
    const diff = firstDifference(arg.bytes, want);
    if (diff) this.fail(`a Uint8Array over ${record.label}.buffer reads ${diff}`);
  }

  /** copyToHost[Async] (no argument, null, or a destination), toBytes. */
  async step_read(s) {
    const r = this.pick(s.m);
    if (!r) return;
    const async = s.async;
    this.stepLabel = `read ${s.via}${async ? ' async' : ''} of ${r.label}`;
    if (s.via === 'toBytes') {
      if (r.freed) this.expectSync(`${r.label}.toBytes()`, E('ERR_USM_FREED'), () => r.obj.toBytes());
      else this.checkBytes(r, 'toBytes');
      return;
    }
    if (s.via === 'props') {
      if (r.freed) {
        for (const prop of ['nbytes', 'pointer', 'syclQueue', 'syclContext', 'syclDevice', 'referenceObj', 'buffer']) {
          this.expectSync(`${r.label}.${prop} after free()`, E('ERR_USM_FREED'), () => r.obj[prop]);
        }
      } else this.checkProps(r);
      return;
    }
    const arg = makeHostArg(this.world, s.host, r.nbytes, this.records, this.rng);
    const what = `${r.label}.copyToHost${async ? 'Async' : ''}(${arg.none && arg.value === undefined && s.host.omit ? '' : show(arg.value)})`;
    let x;
    if (r.freed) x = arg.junk ? anyOf(E('ERR_USM_FREED'), E('ERR_INVALID_ARG_TYPE')) : E('ERR_USM_FREED');
    else if (arg.junk) x = E('ERR_INVALID_ARG_TYPE');
    else if (!arg.none && arg.byteLength < r.nbytes) x = { ...E('ERR_DESTINATION_TOO_SMALL'), atSettle: true };
    const expected = r.freed ? null : this.expectedBytes(r).slice();
    const before = arg.bytes ? arg.bytes.slice() : null;
    const backingBefore = arg.backing ? new Uint8Array(arg.backing).slice() : null;
    const call = s.host.omit && arg.value === undefined ? () => (async ? r.obj.copyToHostAsync() : r.obj.copyToHost()) : () => (async ? r.obj.copyToHostAsync(arg.value) : r.obj.copyToHost(arg.value));
    if (arg.alias) this.checkAlias(arg);
    const check = (result) => {
      if (arg.none) {
        if (!(result instanceof Uint8Array) || result.constructor !== Uint8Array) this.fail(`${what} returned ${show(result)}, expected a new Uint8Array`);
        const diff = firstDifference(result, expected);
        if (diff) this.fail(`${what}: ${diff} (a wrong byte)`);
        return;
      }
      if (result !== arg.value) this.fail(`${what} returned ${show(result)}, not its destination`);
      const diff = firstDifference(arg.bytes.subarray(0, r.nbytes), expected);
      if (diff) this.fail(`${what}: destination ${diff} (a wrong byte)`);
      const tail = firstDifference(arg.bytes.subarray(r.nbytes), before.subarray(r.nbytes));
      if (tail) this.fail(`${what} wrote past nbytes: ${tail}`);
      if (backingBefore) {
        const all = new Uint8Array(arg.backing);
        const start = arg.bytes.byteOffset;
        for (let i = 0; i < all.length; i++) {
          if ((i < start || i >= start + r.nbytes) && all[i] !== backingBefore[i]) this.fail(`${what} wrote outside the destination view (byte ${i} of its buffer)`);
        }
      }
      if (arg.alias) {
        // The destination is USM memory of ours: the model's bytes change there too.
        const { record, off } = arg.alias;
        record.block.shadow.set(expected, record.off + off);
      }
    };
    if (async) await this.expectAsync(what, x, call, check);
    else this.expectSync(what, x, call, check);
  }

  step_usmType(s) {
    const r = this.pick(s.m);
    if (!r) return;
    const [make, ctx] = USM_TYPE_ARGS[s.arg % USM_TYPE_ARGS.length];
    const value = make(this.world, r);
    const what = `${r.label}.getUsmType${s.enum ? 'Enum' : ''}(${show(value)})`;
    let x;
    if (ctx === 'junk') x = r.freed ? anyOf(E('ERR_INVALID_SYCLOBJ'), E('ERR_USM_FREED')) : E('ERR_INVALID_SYCLOBJ');
    else if (r.freed) x = E('ERR_USM_FREED');
    const want = ctx === 'own' || ctx === r.block.ctx ? r.kind : 'unknown';
    this.expectSync(what, x, () => (s.enum ? r.obj.getUsmTypeEnum(value) : r.obj.getUsmType(value)), (got) => {
      const expected = s.enum ? KIND_ENUM[want] : want;
      if (got !== expected) this.fail(`${what} is ${show(got)}, expected ${show(expected)}`);
    });
  }

  step_free(s) {
    const r = this.pick(s.m);
    if (r) this.free(r);
  }

  /** The produced interface, and a round trip through it. */
  step_iface(s) {
    const r = this.pick(s.m);
    if (!r) return;
    const what = `${r.label}.__sycl_usm_array_interface__`;
    if (r.freed) {
      this.expectSync(what, E('ERR_USM_FREED'), () => r.obj.__sycl_usm_array_interface__);
      return;
    }
    const a = r.obj.__sycl_usm_array_interface__;
    const b = r.obj.__sycl_usm_array_interface__;
    if (a === b || a.data === b.data) this.fail(`${what} is the same object on two reads`);
    const ptr = r.block.addr + BigInt(r.off);
    const ok =
      Array.isArray(a.data) && a.data.length === 2 && a.data[0] === ptr && a.data[1] === r.ro &&
      Array.isArray(a.shape) && a.shape.length === 1 && a.shape[0] === r.nbytes &&
      a.strides === null && a.typestr === '|u1' && a.version === 1 && a.syclobj === r.obj.syclQueue &&
      (a.offset === undefined || a.offset === 0);
    if (!ok) this.fail(`${what} is ${show(a)}: expected data [${hex(ptr)}n, ${r.ro}], shape [${r.nbytes}], strides null, typestr '|u1', version 1, syclobj its syclQueue`);
    // Mutating the produced object changes nothing.
    a.data[0] = 0n;
    a.shape[0] = 1;
    if (r.obj.pointer !== ptr || r.obj.nbytes !== r.nbytes) this.fail(`mutating ${what} changed the object`);
    const Class = this.world.classes[KIND_NAMES[s.kind % 3]];
    const kind = KIND_NAMES[s.kind % 3];
    const exporter = { __sycl_usm_array_interface__: b };
    const expect = predictInterface(this.world, b);
    if (isExpectedError(expect)) this.fail(`model: the produced interface of a live object is refused: ${describeExpectation(expect)}`);
    const what2 = `new ${Class.name}({ __sycl_usm_array_interface__: ${r.label}'s })`;
    if (kind !== r.kind) {
      this.expectSync(what2, E('ERR_USM_KIND_MISMATCH'), () => new Class(exporter));
      return;
    }
    const obj = this.expectSync(what2, undefined, () => new Class(exporter));
    const v = this.addView(obj, expect.view, kind, what2, exporter);
    this.checkView(v, null);
  }

  /** Start an async operation, free the object (or the source) at once, then await it. */
  async step_asyncFree(s) {
    const r = this.pick(s.m, (x) => !x.freed);
    if (!r) return;
    const inflight = { inflight: r.id };
    addRef(r.block, inflight);
    let promise;
    let after;
    const what = `${r.label}.${s.op}Async then free()`;
    this.stepLabel = `asyncFree: ${what}`;
    const expected = this.expectedBytes(r).slice();
    let src = null;
    try {
      switch (s.op) {
        case 'copyToHost':
          promise = r.obj.copyToHostAsync();
          after = (v) => {
            const diff = firstDifference(v, expected);
            if (diff) this.fail(`${what}: ${diff}`);
          };
          break;
        case 'copyFromHost': {
          if (r.ro) return;
          const bytes = patternBytes(r.nbytes, this.rng());
          promise = r.obj.copyFromHostAsync(s.shared ? new Uint8Array(new SharedArrayBuffer(r.nbytes)).fill(0x33) : bytes);
          after = () => this.write(r, 0, s.shared ? new Uint8Array(r.nbytes).fill(0x33) : bytes);
          break;
        }
        case 'memset':
          if (r.ro) return;
          promise = r.obj.memsetAsync(0xa5);
          after = () => this.write(r, 0, new Uint8Array(r.nbytes).fill(0xa5));
          break;
        default: {
          src = this.pick(s.src, (x) => !x.freed && x.nbytes <= r.nbytes && x !== r);
          if (!src || r.ro) return;
          const bytes = this.expectedBytes(src).slice();
          const token = { inflight: src.id, of: r.id };
          addRef(src.block, token);
          src.inflightToken = token;
          promise = r.obj.copyFromDeviceAsync(src.obj);
          after = () => this.write(r, 0, bytes);
        }
      }
      if (!(promise instanceof Promise)) this.fail(`${what} did not return a Promise`);
      if (src && s.freeSrc) this.free(src);
      else this.free(r);
      let value;
      try {
        value = await promise;
      } catch (e) {
        this.fail(`${what} rejected: ${describeThrown(e)} (an in-flight operation keeps its memory)`);
      }
      after(value);
    } finally {
      dropRef(this.world, r.block, inflight);
      if (src?.inflightToken) dropRef(this.world, src.block, src.inflightToken);
    }
    // What is still live reads what the operation wrote.
    for (const x of this.records) if (!x.freed && x.block === r.block) this.checkBytes(x, `after ${what}`);
  }

  /**
   * Several asynchronous operations in flight at once on the worker threads (writes to
   * distinct allocations, reads of others), some objects freed while they run: each
   * settles with the model's bytes, and the memory goes only when its last one settles.
   */
  async step_concurrent(s) {
    const written = new Set();
    const read = new Set();
    const pending = [];
    const tokens = [];
    this.stepLabel = 'concurrent';
    const hold = (r) => {
      const token = { inflight: r.id, concurrent: true };
      addRef(r.block, token);
      tokens.push([r.block, token]);
    };
    try {
      for (const op of s.ops) {
        const r = this.pick(op.m, (x) => !x.freed);
        if (!r) continue;
        const what = `${r.label}.${op.op}Async (concurrent)`;
        if (op.op === 'copyToHost' || op.op === 'toBytes') {
          if (written.has(r.block)) continue;
          read.add(r.block);
          const expected = this.expectedBytes(r).slice();
          const shared = op.shared && r.nbytes > 0;
          const dst = shared ? new Uint8Array(new SharedArrayBuffer(r.nbytes)) : undefined;
          hold(r);
          const promise = r.obj.copyToHostAsync(dst);
          pending.push(promise.then((v) => {
            const diff = firstDifference(shared ? dst : v, expected);
            if (diff) this.fail(`${what}: ${diff}`);
          }));
        } else {
          if (r.ro || written.has(r.block) || read.has(r.block)) continue;
          let bytes;
          let promise;
          if (op.op === 'copyFromDevice') {
            const src = this.pick(op.src, (x) => !x.freed && x.block !== r.block && !written.has(x.block) && x.nbytes <= r.nbytes);
            if (!src) continue;
            read.add(src.block);
            bytes = this.expectedBytes(src).slice();
            hold(src);
            hold(r);
            promise = r.obj.copyFromDeviceAsync(src.obj);
            if (op.freeSrc) this.free(src);
          } else if (op.op === 'memset') {
            bytes = new Uint8Array(r.nbytes).fill(op.value & 0xff);
            hold(r);
            promise = r.obj.memsetAsync(op.value & 0xff);
          } else {
            bytes = patternBytes(Math.max(0, r.nbytes - (op.value % 3)), this.rng());
            hold(r);
            promise = r.obj.copyFromHostAsync(op.shared ? new Uint8Array(new SharedArrayBuffer(bytes.length)).fill(0) : bytes);
            if (op.shared) bytes = new Uint8Array(bytes.length);
          }
          written.add(r.block);
          const off = r.off;
          const block = r.block;
          pending.push(promise.then((v) => {
            if (v !== undefined) this.fail(`${what} resolved to ${show(v)}`);
            block.shadow.set(bytes, off);
          }));
        }
        if (op.free && !r.freed) this.free(r);
      }
      const results = await Promise.allSettled(pending);
      for (const x of results) {
        if (x.status === 'rejected') {
          if (x.reason instanceof FuzzFailure) throw x.reason;
          this.fail(`an async operation rejected: ${describeThrown(x.reason)}`);
        }
      }
    } finally {
      for (const [block, token] of tokens) dropRef(this.world, block, token);
    }
    for (const x of this.records) if (!x.freed) this.checkBytes(x, 'after concurrent operations');
  }

  /**
   * LIFETIME: a view keeps its allocation alive after the base is freed, keeps reading
   * its bytes, and a new allocation of the same size never lands on it.
   */
  step_lifetime(s) {
    const w = this.world;
    const r = this.pick(s.m, (x) => !x.freed);
    if (!r) return;
    const Class = w.classes[r.kind];
    let view;
    const what = `a view of ${r.label} by ${s.via}`;
    this.stepLabel = `lifetime: ${what}`;
    const full = { data: [r.block.addr + BigInt(r.off), r.ro], shape: [r.nbytes], typestr: '|u1', version: 1, syclobj: r.queueObj };
    switch (s.via) {
      case 'object': {
        const obj = this.expectSync(`new ${Class.name}(${r.label})`, undefined, () => new Class(r.obj));
        view = this.addRecord(obj, { kind: r.kind, block: r.block, off: r.off, nbytes: r.nbytes, ro: r.ro, queue: { same: r.queueObj }, ref: r.ref });
        break;
      }
      case 'as': {
        const obj = this.expectSync(`asUsmMemory(${r.label})`, undefined, () => w.addon.asUsmMemory(r.obj));
        view = this.addRecord(obj, { kind: r.kind, block: r.block, off: r.off, nbytes: r.nbytes, ro: r.ro, queue: { same: r.queueObj }, ref: r.ref });
        break;
      }
      default: {
        // An interface over a sub-range (or all) of it.
        const cut = s.via === 'sub' ? Math.min(r.nbytes - 1, s.n % r.nbytes) : 0;
        const iface = { ...full, data: [full.data[0] + BigInt(cut), r.ro], shape: [r.nbytes - cut] };
        const exporter = { __sycl_usm_array_interface__: iface };
        const obj = this.expectSync(`new ${Class.name}(${show(iface)})`, undefined, () => new Class(exporter));
        view = this.addRecord(obj, { kind: r.kind, block: r.block, off: r.off + cut, nbytes: r.nbytes - cut, ro: r.ro, queue: { same: r.queueObj }, ref: exporter });
      }
    }
    let buffer = null;
    if (view.kind !== 'device' && !view.ro && s.buffer) {
      buffer = view.obj.buffer;
      view.buffer = buffer;
    }
    // Free the base and every other object on the block but the view.
    for (const x of this.records) if (x !== view && x.block === view.block && !x.freed && (s.all || x === r)) this.free(x);
    this.checkBytes(view, `${what} after its base was freed`);
    if (buffer) {
      const diff = firstDifference(new Uint8Array(buffer), this.expectedBytes(view));
      if (diff) this.fail(`the buffer of ${what} after the base was freed: ${diff}`);
    }
    // New allocations of the same size and kind (the model refuses any overlap with a live block).
    for (let k = 0; k < 1 + (s.n % 3); k++) {
      const n = this.allocate({ kind: KIND_NAMES.indexOf(r.kind), size: r.block.nbytes, align: 0, q: view.block.ctx === 'B' ? 2 : 0, form: 'number', optStyle: 1 });
      n.obj.memset(0xee);
      this.write(n, 0, new Uint8Array(n.nbytes).fill(0xee));
    }
    this.checkBytes(view, `${what} after new allocations of the same size`);
    if (buffer) {
      const diff = firstDifference(new Uint8Array(buffer), this.expectedBytes(view));
      if (diff) this.fail(`the buffer of ${what} after new allocations: ${diff}`);
    }
    if (!view.ro) {
      view.obj.memset(0x42);
      this.write(view, 0, new Uint8Array(view.nbytes).fill(0x42));
      for (const x of this.records) if (!x.freed) this.checkBytes(x, `after writing through ${what}`);
    }
    if (s.freeView) {
      const addr = view.block.addr;
      const block = view.block;
      this.free(view);
      // Once nothing holds it, no interface may view it again.
      if (block.refs.size === 0) {
        const exporter = { __sycl_usm_array_interface__: { ...full, data: [addr, false], shape: [1] } };
        const expect = predictInterface(w, exporter.__sycl_usm_array_interface__);
        if (!isExpectedError(expect)) this.fail('model: a released block is still owned');
        this.expectSync(`a view of ${hex(addr)} after every holder was freed`, expect, () => new Class(exporter));
      }
    }
  }

  /** known defect 2 territory: errors stay real, coded errors when the globals are replaced. */
  step_hijack(s) {
    const w = this.world;
    const which = ['RangeError', 'TypeError', 'Error'][s.which % 3];
    const replacements = [
      function notAnError() { return 7; },
      function plainObject() { return {}; },
      class Throwing { constructor() { throw new Builtin.Error('replaced constructor ran'); } },
      undefined,
      42,
      class Fake extends Builtin.Error {},
    ];
    const replacement = replacements[s.repl % replacements.length];
    const Class = w.classes[KIND_NAMES[s.kind % 3]];
    const r = this.pick(s.m);
    const freed = which === 'Error' && !(r && !r.freed && r.kind !== 'device') ? this.allocate({ kind: s.kind % 3, size: 8, align: 0, q: 0, form: 'number', optStyle: 1 }) : null;
    if (freed) this.free(freed);
    const ops = {
      RangeError: [() => new Class(0), 'ERR_INVALID_SIZE', 'RangeError'],
      TypeError: [() => new Class('x'), 'ERR_INVALID_ARG_TYPE', 'TypeError'],
      Error: r && !r.freed && r.kind !== 'device'
        ? [() => new w.classes[r.kind === 'host' ? 'shared' : 'host'](r.obj), 'ERR_USM_KIND_MISMATCH', 'Error']
        : [() => freed.obj.memset(1), 'ERR_USM_FREED', 'Error'],
    };
    const [op, code, cls] = ops[which];
    const saved = globalThis[which];
    let thrown;
    let threw = false;
    globalThis[which] = replacement;
    try {
      op();
    } catch (e) {
      threw = true;
      thrown = e;
    } finally {
      globalThis[which] = saved;
    }
    const what = `with globalThis.${which} = ${show(replacement) === '[function]' ? replacement.name || 'a function' : show(replacement)}, the ${code} case`;
    if (!threw) this.fail(`${what} did not throw`);
    if (!(thrown instanceof Builtin[cls]) || thrown.constructor !== Builtin[cls]) this.fail(`${what} threw ${describeThrown(thrown)}: not a real ${cls}`);
    if (thrown.code !== code) this.fail(`${what} threw code ${thrown.code}, expected ${code}`);
    // And the process carries on with the real classes afterwards.
    this.expectSync('new Class(0) after restoring', E('ERR_INVALID_SIZE'), () => new Class(0));
  }
}

/** Plays one case; throws a FuzzFailure (or any error) when the addon and the model disagree. */
export async function runCase(world, c) {
  const run = new Run(world, c);
  try {
    await run.run();
  } catch (e) {
    // Leave the process clean for the next case whatever happened.
    for (const r of run.records) {
      try {
        r.obj.free();
      } catch {
        /* reported below */
      }
      if (!r.freed) {
        r.freed = true;
        r.block.refs.delete(r.token);
      }
    }
    // What the model believed may be wrong now: give the pool's blocks back to the
    // runtime and forget every block that nothing holds.
    world.addon.poolTrim();
    for (const [key, b] of world.blocks) {
      if (b.state === 'live') {
        b.refs.clear();
        b.state = 'uncertain';
      } else world.blocks.delete(key);
    }
    syncCached(world);
    throw e;
  }
}

// ---------------------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------------------

const sel = fc.nat({ max: 9999 });

const sizeArb = fc.oneof(
  { weight: 80, arbitrary: fc.integer({ min: 1, max: 64 }) },
  { weight: 120, arbitrary: fc.integer({ min: 65, max: 5000 }) },
  { weight: 60, arbitrary: fc.constantFrom(1, 2, 511, 512, 513, 1000, 1023, 1024, 4095, 4096, 4097, 5120, 5121, 6000, 8192) },
  { weight: 20, arbitrary: fc.integer({ min: 5001, max: 70000 }) },
  { weight: 1, arbitrary: fc.constantFrom(300_000, (1 << 20) + 3, (4 << 20) + 4099, 9 << 20) },
);

const allocArb = fc.record({
  kind: fc.nat({ max: 2 }),
  size: sizeArb,
  align: fc.nat({ max: 8 }),
  q: fc.nat({ max: 4 }),
  form: fc.constantFrom('number', 'bigint'),
  optStyle: fc.nat({ max: 5 }),
});

const hostArb = fc.record({
  form: fc.constantFrom('u8', 'u8', 'u8', 'i8', 'u8c', 'i16', 'u16', 'i32', 'f32', 'f64', 'bi64', 'bu64', 'dv', 'ab', 'rab', 'sab', 'u8sab', 'buf', 'usm', 'usm', 'junk', 'none', 'null'),
  lenMode: fc.constantFrom('exact', 'exact', 'exact', 'less', 'more', 'zero', 'rand'),
  rand: sel,
  byteOff: fc.nat({ max: 63 }),
  omit: fc.boolean(),
});

const ifaceArb = fc.record({
  src: sel,
  where: fc.constantFrom('start', 'start', 'start', 'inside', 'inside', 'inside', 'inside', 'end', 'slack', 'slack', 'pastBlock', 'foreign'),
  frac: fc.nat({ max: 1000 }),
  delta: fc.nat({ max: 700 }),
  foreign: fc.nat({ max: 6 }),
  ptrForm: fc.constantFrom('big', 'big', 'num'),
  ro: fc.nat({ max: 9 }),
  typestr: fc.nat({ max: 200 }),
  badTypestr: fc.nat({ max: 9 }).map((n) => n === 0),
  nd: fc.nat({ max: 3 }),
  shape: fc.array(fc.oneof({ weight: 20, arbitrary: fc.integer({ min: 0, max: 7 }) }, { weight: 1, arbitrary: fc.constantFrom(-1, 2 ** 31, 1000, 2 ** 53, 2 ** 62) }), { minLength: 3, maxLength: 3 }),
  strides: fc.array(fc.oneof({ weight: 4, arbitrary: fc.integer({ min: -3, max: 3 }) }, { weight: 1, arbitrary: fc.integer({ min: -40, max: 40 }) }), { minLength: 0, maxLength: 4 }),
  stridesMode: fc.constantFrom('none', 'none', 'match', 'match', 'match', 'random', 'empty', 'absent'),
  fit: fc.boolean(),
  fitJitter: fc.integer({ min: -1, max: 1 }),
  aim: fc.constantFrom('aim', 'aim', 'aim', 'aim', 'random', 'missing', 'zero'),
  jitter: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.integer({ min: -3, max: 3 }) }),
  bigints: fc.boolean(),
  version: fc.oneof({ weight: 6, arbitrary: fc.nat({ max: 7 }) }, { weight: 1, arbitrary: fc.nat({ max: 13 }) }),
  // Mostly the memory's own queue; a fifth of the time any form.
  syclobj: fc.nat({ max: SYCLOBJ_FORMS.length * 5 }).map((n) => (n < SYCLOBJ_FORMS.length * 4 ? n % 3 : n - SYCLOBJ_FORMS.length * 4)),
  filter: sel,
  junk: fc.oneof({ weight: 7, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(fc.record({ field: sel, v: sel }), { minLength: 1, maxLength: 2 }) }),
  wrap: fc.oneof(
    { weight: 24, arbitrary: fc.constant('plain') },
    { weight: 2, arbitrary: fc.constantFrom('proxy', 'getter', 'function') },
    { weight: 3, arbitrary: fc.constant('produced') },
    { weight: 1, arbitrary: fc.constantFrom('throwIfaceGetter', 'throwFieldGetter', 'nonObject') },
  ),
});

function stepArb(includeKnown) {
  const steps = [
    { weight: 3, arbitrary: fc.record({ t: fc.constant('alloc'), spec: allocArb }) },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('badCtor'),
        kind: fc.nat({ max: 2 }),
        arg: sel,
        opts: sel,
        validSize: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 2000 }) }),
        noNew: fc.oneof({ weight: 20, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      }),
    },
    {
      weight: 12,
      arbitrary: fc.record({
        t: fc.constant('view'),
        kind: fc.nat({ max: 2 }),
        iface: ifaceArb,
        entry: fc.constantFrom('ctor', 'ctor', 'ctor', 'ctorCopy', 'as', 'as', 'cfd', 'cfdAsync'),
        opts: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: sel }),
        q: fc.nat({ max: 2 }),
        dst: sel,
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        t: fc.constant('viewObj'),
        kind: fc.nat({ max: 2 }),
        src: sel,
        entry: fc.constantFrom('ctor', 'ctorCopy', 'as', 'cfd', 'cfdAsync'),
        opts: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: sel }),
        q: fc.nat({ max: 2 }),
        dst: sel,
      }),
    },
    {
      weight: 6,
      arbitrary: fc.record({
        t: fc.constant('write'),
        m: sel,
        via: fc.constantFrom('host', 'host', 'host', 'memset', 'buffer', 'device'),
        async: fc.boolean(),
        host: hostArb,
        value: sel,
        omit: fc.oneof({ weight: 8, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
        src: sel,
      }),
    },
    {
      weight: 5,
      arbitrary: fc.record({
        t: fc.constant('read'),
        m: sel,
        via: fc.constantFrom('host', 'host', 'host', 'toBytes', 'props'),
        async: fc.boolean(),
        host: hostArb,
      }),
    },
    { weight: 2, arbitrary: fc.record({ t: fc.constant('usmType'), m: sel, arg: sel, enum: fc.boolean() }) },
    { weight: 3, arbitrary: fc.record({ t: fc.constant('free'), m: sel }) },
    { weight: 2, arbitrary: fc.record({ t: fc.constant('iface'), m: sel, kind: fc.nat({ max: 2 }) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        t: fc.constant('asyncFree'),
        m: sel,
        op: fc.constantFrom('copyToHost', 'copyFromHost', 'memset', 'copyFromDevice'),
        shared: fc.boolean(),
        src: sel,
        freeSrc: fc.boolean(),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('concurrent'),
        ops: fc.array(
          fc.record({
            m: sel,
            op: fc.constantFrom('copyToHost', 'toBytes', 'copyFromHost', 'memset', 'copyFromDevice'),
            shared: fc.boolean(),
            free: fc.boolean(),
            freeSrc: fc.boolean(),
            value: fc.nat({ max: 255 }),
            src: sel,
          }),
          { minLength: 2, maxLength: 6 },
        ),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('lifetime'),
        m: sel,
        via: fc.constantFrom('object', 'as', 'iface', 'sub'),
        buffer: fc.boolean(),
        all: fc.boolean(),
        n: sel,
        freeView: fc.boolean(),
      }),
    },
  ];
  // known defect 2: replaced error globals; only with includeKnown while the defect is open.
  if (includeKnown || !KNOWN_DEFECTS.has(2)) {
    steps.push({ weight: 1, arbitrary: fc.record({ t: fc.constant('hijack'), which: fc.nat({ max: 2 }), repl: fc.nat({ max: 5 }), kind: fc.nat({ max: 2 }), m: sel }) });
  }
  const weighted = steps.map((x) => ({ ...x, weight: x.weight * 12 }));
  // Rare (one step in about 600): a collection costs milliseconds.
  if (gc) weighted.push({ weight: 1, arbitrary: fc.record({ t: fc.constant('gcDrop'), m: sel, n: sel, all: fc.boolean() }) });
  return fc.oneof(...weighted);
}

/** A whole case: its seed, base allocations, steps and the order of the final frees. */
export function caseArb({ includeKnown = false, maxSteps = 10 } = {}) {
  return fc.record({
    seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
    bases: fc.array(allocArb, { minLength: 1, maxLength: 3 }),
    steps: fc.array(stepArb(includeKnown), { minLength: 1, maxLength: maxSteps }),
    freeOrder: fc.nat({ max: 99 }),
  });
}

// ---------------------------------------------------------------------------------------
// Known-defect properties
// ---------------------------------------------------------------------------------------

/** known defect 1: a non-buffer array-like given to a host copy. */
export function defect1Arb() {
  return fc.record({
    kind: fc.nat({ max: 2 }),
    size: fc.integer({ min: 1, max: 4096 }),
    arg: fc.nat({ max: DEFECT1_ARGS.length - 1 }),
    method: fc.constantFrom('copyToHost', 'copyFromHost', 'copyToHostAsync', 'copyFromHostAsync'),
  });
}

/** ERR_INVALID_ARG_TYPE, thrown at the call, within 100 ms, without reading the argument's contents. */
export function checkDefect1(world, c) {
  const kind = KIND_NAMES[c.kind];
  const m = new world.classes[kind](c.size, { queue: world.queueA });
  const release = track(world, m, kind);
  try {
    const [label, make] = DEFECT1_ARGS[c.arg];
    const [value, reads] = make(c.size);
    const what = `${kind}.${c.method}(${label})`;
    const started = performance.now();
    let thrown = null;
    let result;
    try {
      result = m[c.method](value);
    } catch (e) {
      thrown = e;
    }
    const ms = performance.now() - started;
    if (result instanceof Promise) {
      result.catch(() => {});
      throw new FuzzFailure(`${what} returned a Promise; a wrong argument must throw at the call`);
    }
    if (!thrown) throw new FuzzFailure(`${what} did not throw`);
    if (!(thrown instanceof Builtin.TypeError) || thrown.code !== 'ERR_INVALID_ARG_TYPE') {
      throw new FuzzFailure(`${what} threw ${describeThrown(thrown)}, expected TypeError ERR_INVALID_ARG_TYPE`);
    }
    if (ms > 100) throw new FuzzFailure(`${what} took ${ms.toFixed(0)} ms to refuse the argument, not at once`);
    if (reads() > 0) throw new FuzzFailure(`${what} read the argument's contents ${reads()} time(s) before refusing it`);
  } finally {
    release();
  }
}

/** known defect 2: the hijack step alone. */
export function defect2Arb() {
  return fc.record({
    seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
    bases: fc.array(allocArb, { minLength: 1, maxLength: 1 }),
    steps: fc.array(fc.record({ t: fc.constant('hijack'), which: fc.nat({ max: 2 }), repl: fc.nat({ max: 5 }), kind: fc.nat({ max: 2 }), m: sel }), { minLength: 1, maxLength: 2 }),
    freeOrder: fc.nat({ max: 99 }),
  });
}

/** FUZZ_SEED / FUZZ_RUNS from the environment, with the defaults given. */
export function fuzzParams({ seed, runs }) {
  const envSeed = process.env.FUZZ_SEED;
  const envRuns = process.env.FUZZ_RUNS;
  return {
    seed: envSeed !== undefined && envSeed !== '' ? Number(envSeed) : seed,
    runs: envRuns !== undefined && envRuns !== '' ? Number(envRuns) : runs,
    path: process.env.FUZZ_PATH || undefined,
  };
}

// ---------------------------------------------------------------------------------------
// Kernels and the UCX transport (their own properties: `kernelCaseArb`/`runKernelCase`,
// `ucxCaseArb`/`runUcxCase`; fuzz.spec.mjs and scripts/fuzz.js run them apart from the
// memory model above, whose registry of blocks they leave alone: every object they make
// is freed before the case ends, and the case checks that nothing stayed in use).
//
// A kernel case is a list of steps over fresh memory of a random kind: OpenCL C kernels
// built once per world (a fill with a scalar, a byte increment chained through
// `dependsOn`, a sum through `__local` memory), sync and async submissions with events,
// the queue's memcpy/memset/fill, free() while a submission is in flight, and bad
// arguments of every kind (each must throw or reject with its code and leave the memory
// as it was). A UCX case is a list of connect / send+recv / close cycles over loopback in
// this process, with bad inputs (each coded), truncation and sends after close.
// ---------------------------------------------------------------------------------------

const KERNEL_SOURCE = `
__kernel void fill_i(__global int *a, int v) { size_t i = get_global_id(0); a[i] = v + (int)i; }
__kernel void addone(__global uchar *p) { p[get_global_id(0)] += 1; }
__kernel void axpy(__global float *y, __global const float *x, float alpha) {
  size_t i = get_global_id(0); y[i] = alpha * x[i] + y[i];
}
__kernel void lsum(__global long *out, __local long *scratch, long v) {
  size_t l = get_local_id(0);
  scratch[l] = v + (long)l;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) { long s = 0; for (size_t k = 0; k < get_local_size(0); k++) s += scratch[k]; out[get_group_id(0)] = s; }
}
`;

function fail(what) {
  throw new FuzzFailure(what);
}

/** Runs `fn` (sync or async) and checks that it throws or rejects with a code of `codes`. */
async function expectCode(world, label, codes, fn) {
  let outcome;
  try {
    const value = fn();
    if (value && typeof value.then === 'function') await value;
    outcome = 'no error';
  } catch (e) {
    if (e instanceof FuzzFailure) throw e;
    if (e && codes.includes(e.code)) {
      bump(world, `${label}: ${e.code}`);
      return;
    }
    outcome = describeThrown(e);
  }
  fail(`${label}: expected ${codes.join(' or ')}, got ${outcome}`);
}

/** The bytes of a view as an ArrayBuffer of their own (aligned for typed arrays). */
const own = (view) => view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength);

function bump(world, key) {
  world.coverage.set(key, (world.coverage.get(key) ?? 0) + 1);
}

function inUse(addon) {
  const s = addon.poolStats();
  return s.device.inUseBytes + s.host.inUseBytes + s.shared.inUseBytes;
}

/** The world's program, built at the first kernel case. */
function kernels(world) {
  if (!world.kernels) {
    const { addon } = world;
    const program = addon.createProgramFromSource(world.queueA, KERNEL_SOURCE);
    world.kernels = {
      program,
      fill: program.getKernel('fill_i'),
      addone: program.getKernel('addone'),
      axpy: program.getKernel('axpy'),
      lsum: program.getKernel('lsum'),
    };
  }
  return world.kernels;
}

const KERNEL_KINDS = ['device', 'shared', 'host'];

/** A fresh object of `kind` with `nbytes`, every byte `fillByte`; tracked for the case's end. */
function kmem(world, made, kind, nbytes, fillByte) {
  const m = new world.classes[kind](nbytes, { queue: world.queueA });
  m.memset(fillByte);
  made.push(m);
  return m;
}

const BAD_KERNEL_CALLS = [
  'count-low', 'count-high', 'scalar-type', 'memory-for-scalar', 'scalar-for-memory', 'local-for-global',
  'number-arg', 'string-arg', 'freed-arg', 'null-arg', 'range-zero', 'range-negative', 'range-fraction',
  'range-4d', 'range-string', 'local-range-mismatch', 'kernel-junk', 'args-not-array', 'depends-junk',
  'depends-not-array', 'kernel-not-found', 'arg-out-of-range', 'local-zero', 'program-syntax',
  'program-not-string', 'program-options-junk', 'memcpy-too-long', 'memset-value', 'fill-type',
];

const kernelStepArb = fc.oneof(
  fc.record({ op: fc.constant('fill'), kind: fc.constantFrom(...KERNEL_KINDS), n: fc.integer({ min: 1, max: 300 }), items: fc.nat({ max: 300 }), v: fc.integer({ min: -(2 ** 30), max: 2 ** 30 }), async: fc.boolean(), local: fc.constantFrom(0, 1, 2, 4) }),
  fc.record({ op: fc.constant('chain'), kind: fc.constantFrom(...KERNEL_KINDS), n: fc.integer({ min: 1, max: 4096 }), k: fc.integer({ min: 1, max: 5 }), events: fc.boolean(), start: fc.nat({ max: 200 }) }),
  fc.record({ op: fc.constant('axpy'), kinds: fc.tuple(fc.constantFrom(...KERNEL_KINDS), fc.constantFrom(...KERNEL_KINDS)), n: fc.integer({ min: 1, max: 1000 }), alpha: fc.constantFrom(0, 1, -1, 0.5, 2.5, 1024) }),
  fc.record({ op: fc.constant('lsum'), kind: fc.constantFrom(...KERNEL_KINDS), groups: fc.integer({ min: 1, max: 6 }), size: fc.constantFrom(1, 2, 4, 8, 16, 32), v: fc.bigInt({ min: -(2n ** 40n), max: 2n ** 40n }) }),
  fc.record({ op: fc.constant('queue-ops'), kinds: fc.tuple(fc.constantFrom(...KERNEL_KINDS), fc.constantFrom(...KERNEL_KINDS)), n: fc.integer({ min: 4, max: 5000 }), value: fc.nat({ max: 255 }), async: fc.boolean() }),
  fc.record({ op: fc.constant('free-in-flight'), kind: fc.constantFrom(...KERNEL_KINDS), n: fc.integer({ min: 1, max: 100000 }) }),
  { weight: 3, arbitrary: fc.record({ op: fc.constant('bad'), call: fc.constantFrom(...BAD_KERNEL_CALLS), kind: fc.constantFrom(...KERNEL_KINDS), async: fc.boolean() }) },
);

/** A kernel case: 1 to 6 steps. */
export function kernelCaseArb() {
  return fc.record({ steps: fc.array(kernelStepArb, { minLength: 1, maxLength: 6 }) });
}

/** Plays a kernel case; throws a FuzzFailure when the addon and the model disagree. */
export async function runKernelCase(world, c) {
  const { addon } = world;
  const k = kernels(world);
  const { kernelArg } = addon;
  const q = world.queueA;
  const made = [];
  const before = inUse(addon);
  const submit = (async, ...a) => (async ? q.submitAsync(...a) : q.submit(...a));
  try {
    for (const [index, s] of c.steps.entries()) {
      const label = `step ${index} ${s.op}${s.call ? ` ${s.call}` : ''}`;
      bump(world, `kernel ${s.op}${s.call ? ` ${s.call}` : ''}`);
      if (s.op === 'fill') {
        const n = s.n;
        const items = Math.min(s.items, n) || n;
        const m = kmem(world, made, s.kind, n * 4, 0xab);
        const local = s.local && items % s.local === 0 ? [s.local] : null;
        const event = await submit(s.async, k.fill, [m, kernelArg.int32(s.v)], [items], local);
        if (!(event instanceof addon.SyclEvent)) fail(`${label}: no SyclEvent`);
        const got = new Int32Array(own(m.toBytes()));
        for (let i = 0; i < n; i++) {
          const want = i < items ? (s.v + i) | 0 : 0xabababab | 0;
          if (got[i] !== want) fail(`${label}: element ${i} is ${got[i]}, expected ${want} (${items} items of ${n})`);
        }
      } else if (s.op === 'chain') {
        const m = kmem(world, made, s.kind, s.n, s.start);
        let dep = null;
        const pending = [];
        for (let i = 0; i < s.k; i++) {
          const p = q.submitAsync(k.addone, [m], [s.n], null, dep ? [dep] : null);
          pending.push(p);
          // The Promise itself, or the event it settles with, as the next dependency.
          dep = s.events ? await p : p;
        }
        const events = await Promise.all(pending);
        for (const e of events) {
          e.wait();
          if (e.executionStatus !== 'complete') fail(`${label}: an awaited event says ${e.executionStatus}`);
        }
        const want = (s.start + s.k) & 0xff;
        const bytes = m.toBytes();
        const at = bytes.findIndex((b) => b !== want);
        if (at >= 0) fail(`${label}: byte ${at} is ${bytes[at]} after ${s.k} chained increments of ${s.start}, expected ${want}`);
      } else if (s.op === 'axpy') {
        const [ky, kx] = s.kinds;
        const x = new Float32Array(s.n).map((_, i) => i - 3);
        const y = new Float32Array(s.n).map((_, i) => 2 * i);
        const my = kmem(world, made, ky, s.n * 4, 0);
        const mx = kmem(world, made, kx, s.n * 4, 0);
        my.copyFromHost(y);
        mx.copyFromHost(x);
        q.submit(k.axpy, [my, mx, kernelArg.float32(s.alpha)], s.n);
        const got = new Float32Array(own(my.toBytes()));
        for (let i = 0; i < s.n; i++) {
          const want = Math.fround(Math.fround(s.alpha) * x[i] + y[i]);
          if (got[i] !== want) fail(`${label}: y[${i}] = ${got[i]}, expected ${want}`);
        }
      } else if (s.op === 'lsum') {
        const out = kmem(world, made, s.kind, s.groups * 8, 0xcd);
        q.submit(k.lsum, [out, kernelArg.local(s.size * 8), kernelArg.int64(s.v)], [s.groups * s.size], [s.size]);
        const got = new BigInt64Array(own(out.toBytes()));
        const want = s.v * BigInt(s.size) + BigInt((s.size * (s.size - 1)) / 2);
        for (let g = 0; g < s.groups; g++) if (got[g] !== want) fail(`${label}: group ${g} summed ${got[g]}, expected ${want}`);
      } else if (s.op === 'queue-ops') {
        const [kd, ks] = s.kinds;
        const src = kmem(world, made, ks, s.n, 0);
        const dst = kmem(world, made, kd, s.n, 0x11);
        const pattern = patternBytes(s.n, s.n);
        src.copyFromHost(pattern);
        const half = s.n >> 1;
        const e1 = s.async ? await q.memcpyAsync(dst, src, half) : q.memcpy(dst, src, half);
        const e2 = s.async ? await q.memsetAsync(dst, s.value, 1, [e1]) : q.memset(dst, s.value, 1, [e1]);
        const e3 = q.fill(src, kernelArg.uint32(0x01020304), Math.floor(s.n / 4), [e2]);
        e3.wait();
        const bytes = dst.toBytes();
        const want = Buffer.from(pattern);
        want.fill(0x11, half);
        want[0] = s.value;
        const diff = firstDifference(bytes, want);
        if (diff !== null) fail(`${label}: dst after memcpy and memset: ${diff}`);
        const filled = src.toBytes();
        for (let i = 0; i + 4 <= s.n; i += 4) {
          if (filled.readUInt32LE(i) !== 0x01020304) fail(`${label}: fill left ${filled.readUInt32LE(i)} at ${i}`);
        }
      } else if (s.op === 'free-in-flight') {
        const m = kmem(world, made, s.kind, s.n, 0);
        const p = q.submitAsync(k.addone, [m], [s.n]);
        m.free();
        const event = await p;
        if (!(event instanceof addon.SyclEvent)) fail(`${label}: no SyclEvent after free() in flight`);
      } else if (s.op === 'bad') {
        await badKernelCall(world, label, s, made);
      }
    }
  } finally {
    for (const m of made) {
      try {
        m.free();
      } catch {
        /* freed above */
      }
    }
  }
  const after = inUse(addon);
  if (after !== before) fail(`the case left ${after - before} bytes in use (kernels hold their operands only until they finish)`);
  world.cases++;
}

/** One bad call: it must throw or reject with its code, and change no byte of the memory. */
async function badKernelCall(world, label, s, made) {
  const { addon } = world;
  const { kernelArg } = addon;
  const k = kernels(world);
  const q = world.queueA;
  const m = kmem(world, made, s.kind, 64, 0x42);
  const other = kmem(world, made, s.kind, 64, 0x42);
  const submit = (...a) => (s.async ? q.submitAsync(...a) : q.submit(...a));
  const ARG = ['ERR_KERNEL_ARG_TYPE', 'ERR_INVALID_ARG_TYPE'];
  const RANGE = ['ERR_INVALID_RANGE'];
  const freed = new world.classes[s.kind](16, { queue: q });
  freed.free();
  const calls = {
    'count-low': [['ERR_KERNEL_ARG_COUNT'], () => submit(k.fill, [m], [4])],
    'count-high': [['ERR_KERNEL_ARG_COUNT'], () => submit(k.fill, [m, kernelArg.int32(1), kernelArg.int32(2)], [4])],
    'scalar-type': [ARG, () => submit(k.fill, [m, kernelArg.float32(1)], [4])],
    'memory-for-scalar': [ARG, () => submit(k.fill, [m, other], [4])],
    'scalar-for-memory': [ARG, () => submit(k.fill, [kernelArg.int32(1), kernelArg.int32(1)], [4])],
    'local-for-global': [ARG, () => submit(k.fill, [kernelArg.local(64), kernelArg.int32(1)], [4])],
    'number-arg': [ARG, () => submit(k.fill, [m, 1], [4])],
    'string-arg': [ARG, () => submit(k.fill, [m, '1'], [4])],
    'freed-arg': [['ERR_USM_FREED'], () => submit(k.fill, [freed, kernelArg.int32(1)], [4])],
    'null-arg': [ARG, () => submit(k.fill, [null, kernelArg.int32(1)], [4])],
    'range-zero': [RANGE, () => submit(k.fill, [m, kernelArg.int32(1)], [0])],
    'range-negative': [RANGE, () => submit(k.fill, [m, kernelArg.int32(1)], -4)],
    'range-fraction': [RANGE, () => submit(k.fill, [m, kernelArg.int32(1)], [2.5])],
    'range-4d': [RANGE, () => submit(k.fill, [m, kernelArg.int32(1)], [1, 1, 1, 1])],
    'range-string': [[...RANGE, 'ERR_INVALID_ARG_TYPE'], () => submit(k.fill, [m, kernelArg.int32(1)], '4')],
    'local-range-mismatch': [RANGE, () => submit(k.fill, [m, kernelArg.int32(1)], [6], [4])],
    'kernel-junk': [['ERR_INVALID_ARG_TYPE'], () => submit({ functionName: 'fill_i' }, [m, kernelArg.int32(1)], [4])],
    'args-not-array': [ARG, () => submit(k.fill, m, [4])],
    'depends-junk': [['ERR_INVALID_ARG_TYPE'], () => submit(k.fill, [m, kernelArg.int32(1)], [4], null, [{}])],
    'depends-not-array': [['ERR_INVALID_ARG_TYPE'], () => submit(k.fill, [m, kernelArg.int32(1)], [4], null, 5)],
    'kernel-not-found': [['ERR_KERNEL_NOT_FOUND'], () => k.program.getKernel('no_such_kernel')],
    'arg-out-of-range': [['ERR_KERNEL_ARG_TYPE'], () => kernelArg.int32(2 ** 31)],
    'local-zero': [['ERR_KERNEL_ARG_TYPE'], () => kernelArg.local(0)],
    'program-syntax': [['ERR_PROGRAM_COMPILATION'], () => addon.createProgramFromSource(q, '__kernel void broken(__global int *p) { p[0] = ; }')],
    'program-not-string': [['ERR_INVALID_ARG_TYPE'], () => addon.createProgramFromSource(q, 42)],
    'program-options-junk': [['ERR_INVALID_ARG_TYPE'], () => addon.createProgramFromSource(q, KERNEL_SOURCE, { flags: '-O2' })],
    'memcpy-too-long': [['ERR_INVALID_RANGE', 'ERR_SOURCE_TOO_LARGE', 'ERR_DESTINATION_TOO_SMALL', 'ERR_INVALID_SIZE'], () => (s.async ? q.memcpyAsync(m, other, 65) : q.memcpy(m, other, 65))],
    'memset-value': [['ERR_INVALID_FILL_VALUE'], () => (s.async ? q.memsetAsync(m, 256) : q.memset(m, 256))],
    'fill-type': [['ERR_INVALID_ARG_TYPE', 'ERR_KERNEL_ARG_TYPE'], () => q.fill(m, 7)],
  };
  const [codes, fn] = calls[s.call];
  await expectCode(world, `kernel bad ${s.call}`, codes, fn);
  for (const [name, obj] of [['the argument', m], ['the other', other]]) {
    const bytes = obj.toBytes();
    const at = bytes.findIndex((b) => b !== 0x42);
    if (at >= 0) fail(`${label}: the refused call changed byte ${at} of ${name} to ${bytes[at]}`);
  }
}

// ---- UCX ----

const UCX_BUFFERS = ['u8', 'arraybuffer', 'sab', 'dataview', 'host', 'shared', 'device'];
const BAD_UCX_CALLS = [
  'send-number', 'send-string', 'send-tag-negative', 'send-tag-huge', 'recv-tag-string', 'recv-mask-negative',
  'send-freed', 'recv-truncated', 'send-after-close', 'recv-after-close', 'connect-bad-host', 'connect-port-high',
  'connect-port-missing', 'connect-refused', 'listen-port-used', 'listen-bad-host', 'accept-after-close',
  'connect-options-junk', 'unpack-junk',
];

const ucxStepArb = fc.oneof(
  fc.record({
    op: fc.constant('cycle'),
    messages: fc.array(fc.record({ size: fc.oneof(fc.integer({ min: 0, max: 64 }), fc.integer({ min: 65, max: 70000 })), tag: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), src: fc.constantFrom(...UCX_BUFFERS), dst: fc.constantFrom(...UCX_BUFFERS), dir: fc.boolean() }), { minLength: 0, maxLength: 5 }),
    closeFirst: fc.boolean(),
  }),
  { weight: 2, arbitrary: fc.record({ op: fc.constant('bad'), call: fc.constantFrom(...BAD_UCX_CALLS) }) },
);

/** A UCX case: 1 to 4 steps. */
export function ucxCaseArb() {
  return fc.record({ steps: fc.array(ucxStepArb, { minLength: 1, maxLength: 4 }) });
}

/** Whether the UCX transport loads here (a property over it is skipped when not). */
export function ucxAvailable(addon) {
  try {
    return addon.ucx.available().available === true;
  } catch {
    return false;
  }
}

function ucxBuffer(world, made, form, size, fillWith) {
  const bytes = fillWith ?? new Uint8Array(size);
  const n = Math.max(size, 1);
  switch (form) {
    case 'u8':
      return Uint8Array.from(bytes);
    case 'arraybuffer':
      return Uint8Array.from(bytes).buffer;
    case 'sab': {
      const sab = new SharedArrayBuffer(size);
      new Uint8Array(sab).set(bytes);
      return sab;
    }
    case 'dataview':
      return new DataView(Uint8Array.from(bytes).buffer);
    default: {
      // Memory objects hold at least one byte: a zero-byte message takes a view of none.
      const m = new world.classes[form](n, { queue: world.queueA });
      made.push(m);
      if (size) m.copyFromHost(bytes);
      return size === n ? m : new Uint8Array(0);
    }
  }
}

function bytesOf(buffer) {
  if (buffer instanceof ArrayBuffer || buffer instanceof SharedArrayBuffer) return new Uint8Array(buffer);
  if (ArrayBuffer.isView(buffer)) return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  return buffer.toBytes();
}

async function ucxPair(world) {
  const { ucx } = world.addon;
  if (!world.ucxListener) world.ucxListener = ucx.listen({ host: '127.0.0.1', port: 0 });
  const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: world.ucxListener.port }), world.ucxListener.accept()]);
  return { client, server };
}

/** Closes the world's UCX listener (so that the process can exit). */
export function closeUcx(world) {
  world.ucxListener?.close();
  world.ucxListener = null;
}

/** Plays a UCX case; throws a FuzzFailure when the addon and the model disagree. */
export async function runUcxCase(world, c) {
  const { addon } = world;
  const { ucx } = addon;
  const made = [];
  const before = inUse(addon);
  try {
    for (const [index, s] of c.steps.entries()) {
      const label = `step ${index} ${s.op}${s.call ? ` ${s.call}` : ''}`;
      bump(world, `ucx ${s.op}${s.call ? ` ${s.call}` : ''}`);
      if (s.op === 'cycle') {
        const { client, server } = await ucxPair(world);
        for (const [i, msg] of s.messages.entries()) {
          const [from, to] = msg.dir ? [client, server] : [server, client];
          const data = patternBytes(msg.size, i + 1);
          const dst = ucxBuffer(world, made, msg.dst, msg.size);
          const src = ucxBuffer(world, made, msg.src, msg.size, data);
          // The receive is posted first, and both settle before the next message.
          const received = to.recv(dst, { tag: msg.tag });
          await from.send(src, { tag: msg.tag });
          const got = await received;
          if (got.nbytes !== msg.size || got.tag !== msg.tag) fail(`${label}: message ${i} came as ${got.nbytes} bytes, tag ${got.tag}; sent ${msg.size}, tag ${msg.tag}`);
          const diff = firstDifference(bytesOf(dst).subarray(0, msg.size), data);
          if (diff !== null) fail(`${label}: message ${i} (${msg.src} -> ${msg.dst}, ${msg.size} B): ${diff}`);
        }
        const [first, second] = s.closeFirst ? [server, client] : [client, server];
        await first.close();
        await second.close();
        if (ucx.info().inFlight !== 0) fail(`${label}: ${ucx.info().inFlight} operations in flight after both closed (${JSON.stringify(ucx.info())})`);
      } else if (s.op === 'bad') {
        await badUcxCall(world, s.call, made);
      }
    }
  } finally {
    for (const m of made) {
      try {
        m.free();
      } catch {
        /* freed above */
      }
    }
  }
  const info = ucx.info();
  if (info.inFlight !== 0) fail(`the case left ${info.inFlight} UCX operations in flight`);
  const after = inUse(addon);
  if (after !== before) fail(`the case left ${after - before} bytes in use`);
  world.cases++;
}

async function badUcxCall(world, call, made) {
  const { ucx } = world.addon;
  const INVALID = ['ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_VALUE'];
  const CLOSED = ['ERR_UCX_ENDPOINT_CLOSED'];
  const label = `ucx bad ${call}`;
  if (call.startsWith('connect-') || call.startsWith('listen-') || call === 'accept-after-close') {
    const table = {
      'connect-bad-host': [['ERR_UCX_BAD_ADDRESS'], () => ucx.connect({ host: 'not an address', port: 1 })],
      'connect-port-high': [INVALID, () => ucx.connect({ host: '127.0.0.1', port: 70000 })],
      'connect-port-missing': [INVALID, () => ucx.connect({ host: '127.0.0.1' })],
      'connect-options-junk': [INVALID, () => ucx.connect('127.0.0.1:1')],
      'connect-refused': [['ERR_UCX_CONNECTION_REFUSED'], () => {
        const probe = ucx.listen({ host: '127.0.0.1', port: 0 });
        const port = probe.port;
        probe.close();
        return ucx.connect({ host: '127.0.0.1', port });
      }],
      'listen-port-used': [['ERR_UCX_BAD_ADDRESS'], () => {
        const used = ucx.listen({ host: '127.0.0.1', port: 0 });
        try {
          return ucx.listen({ host: '127.0.0.1', port: used.port });
        } finally {
          used.close();
        }
      }],
      'listen-bad-host': [['ERR_UCX_BAD_ADDRESS', ...INVALID], () => ucx.listen({ host: '192.0.2.1', port: 0 })],
      'accept-after-close': [CLOSED, () => {
        const l = ucx.listen({ host: '127.0.0.1', port: 0 });
        l.close();
        return l.accept();
      }],
    };
    const [codes, fn] = table[call];
    await expectCode(world, label, codes, fn);
    return;
  }
  const { client, server } = await ucxPair(world);
  try {
    const table = {
      'send-number': [INVALID, () => client.send(42)],
      'send-string': [INVALID, () => client.send('bytes')],
      'send-tag-negative': [INVALID, () => client.send(new Uint8Array(1), { tag: -1n })],
      'send-tag-huge': [INVALID, () => client.send(new Uint8Array(1), { tag: 2n ** 64n })],
      'recv-tag-string': [INVALID, () => server.recv(new Uint8Array(1), { tag: 'x' })],
      'recv-mask-negative': [INVALID, () => server.recv(new Uint8Array(1), { tag: 1n, tagMask: -1 })],
      'send-freed': [['ERR_USM_FREED'], () => {
        const m = new world.classes.host(8, { queue: world.queueA });
        m.free();
        return client.send(m);
      }],
      'unpack-junk': [['ERR_UCX_RKEY_INVALID', ...INVALID], () => client.unpackRemoteKey(new Uint8Array([1, 2, 3]))],
      'recv-truncated': [['ERR_UCX_TRUNCATED'], async () => {
        const small = server.recv(new Uint8Array(4), { tag: 9n });
        // The send may settle either way once the receiver refused it; the receive is coded.
        await Promise.allSettled([client.send(new Uint8Array(64), { tag: 9n })]);
        return small;
      }],
      'send-after-close': [CLOSED, async () => {
        await client.close();
        return client.send(new Uint8Array(1));
      }],
      'recv-after-close': [CLOSED, async () => {
        await server.close();
        return server.recv(new Uint8Array(1));
      }],
    };
    const [codes, fn] = table[call];
    await expectCode(world, label, codes, fn);
  } finally {
    await client.close();
    await server.close();
  }
  void made;
}
