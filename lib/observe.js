// @ts-check
'use strict';
// Seeing memory: statistics per device and kind (`memoryStats`, `resetPeakStats`), the
// history and snapshots (`recordMemoryHistory`, `memorySnapshot`), out-of-memory
// observers (`onOutOfMemory`), and the `node:diagnostics_channel` tracing of allocations,
// frees and copies. The counters, the history and the snapshot are the binding's
// (`src/js/observe.rs`); this file captures JS stacks, which only JS can, and publishes
// on the channels. With no history, no observer and no subscriber, `lib/memory.js` pays
// one check (`watching()` or a channel's `hasSubscribers`) and nothing runs here.
const { native } = require('./native.js');
const { ErrorCode, typeError, rangeError, fromNative } = require('./errors.js');
const { display, typeName } = require('./values.js');
const devices = require('./device.js');

// Intrinsics are taken at load, so later changes to globals change nothing here.
const { Array, Error, Object, Number, WeakSet, String, Reflect, Map, Math, Int32Array, Float64Array, BigUint64Array } = globalThis;
const { parse } = JSON;
const keys = Object.keys;
const apply = Reflect.apply;
const isSafeInteger = Number.isSafeInteger;
const imul = Math.imul;
const typedArraySlice = Object.getPrototypeOf(Int32Array.prototype).slice;
const arraySlice = Array.prototype.slice;
const captureStackTrace = Error.captureStackTrace;
const weakSetAdd = WeakSet.prototype.add;
const mapGet = Map.prototype.get;
const mapSet = Map.prototype.set;
const weakSetHas = WeakSet.prototype.has;
const stringIndexOf = String.prototype.indexOf;
const stringSlice = String.prototype.slice;
const emitWarning = apply(Function.prototype.bind, process.emitWarning, [process]);

const diagnostics = require('node:diagnostics_channel');

/** The channels, named as undici and Node's own are (`tracing:<name>:start` and so on). */
const channels = {
  alloc: diagnostics.tracingChannel('dpctl-memory:alloc'),
  free: diagnostics.tracingChannel('dpctl-memory:free'),
  copy: diagnostics.tracingChannel('dpctl-memory:copy'),
};

// `TracingChannel.prototype.hasSubscribers` arrived in Node 20.13; before it, ask each of
// its five channels.
const hasOwnGetter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(channels.alloc), 'hasSubscribers') !== undefined;
const subscribed = hasOwnGetter
  ? (tracing) => tracing.hasSubscribers
  : (tracing) =>
      tracing.start.hasSubscribers ||
      tracing.end.hasSubscribers ||
      tracing.asyncStart.hasSubscribers ||
      tracing.asyncEnd.hasSubscribers ||
      tracing.error.hasSubscribers;

/**
 * A channel's `runStores(context, fn, thisArg, ...args)`, which calls `fn(...args)` with no
 * closure made (@types/node declares it with no parameters).
 * @typedef {{ runStores(context: object, fn: Function, thisArg: undefined, ...args: unknown[]): any }} StoreRunner
 */
/** @type {(tracing: diagnostics.TracingChannel) => StoreRunner} */
const startOf = (tracing) => /** @type {StoreRunner} */ (/** @type {unknown} */ (tracing.start));

const KIND_NAMES = ['unknown', 'device', 'shared', 'host'];
const DEFAULT_MAX_ENTRIES = 100_000;
const MAX_ENTRIES_LIMIT = 2 ** 26;
/** Frames kept of each allocating call's stack by default (Node's own default limit). */
const DEFAULT_STACK_DEPTH = 10;
const MAX_STACK_DEPTH = 64;
let stackDepth = DEFAULT_STACK_DEPTH;

/** Whether this thread sends the JS stacks of its allocations (its recordMemoryHistory). */
let stacks = false;
/** Whether this thread's recording is on (a snapshot then goes to OOM observers). */
let recording = false;
/**
 * The OOM observers of this thread, a list of `{ callback, next }` links with no prototype
 * (no Array or Set method a program may replace is called on it).
 */
const observers = { __proto__: null, next: null, count: 0 };
/** Errors `allocation()` converted, which its callers throw as they are. */
const converted = new WeakSet();
const isConverted = (error) => typeof error === 'object' && error !== null && apply(weakSetHas, converted, [error]);

/** Whether an allocation must come through `allocation()` (stacks, observers or subscribers). */
function watching() {
  return stacks || observers.count > 0 || subscribed(channels.alloc);
}

function deviceId(device) {
  if (device === undefined || device === null) return undefined;
  if (devices.isDevice(device)) return devices.deviceHandle(device);
  if (typeof device === 'string') return devices.deviceHandle(new devices.SyclDevice(device));
  throw typeError(`device must be a SyclDevice or a filter string, not ${display(device)}`);
}

/**
 * The statistics of a device (the default device when none is given): each USM kind's
 * figures and all kinds together, in PyTorch's `memory_stats()` shape.
 */
function memoryStats(device) {
  const id = deviceId(device);
  try {
    return parse(native.observeStats(id));
  } catch (error) {
    throw fromNative(error);
  }
}

/** Sets the peaks of a device (of every device when none is given) to the current figures. */
function resetPeakStats(device) {
  const id = deviceId(device);
  try {
    native.observeResetPeaks(id);
  } catch (error) {
    throw fromNative(error);
  }
}

/**
 * Starts recording (dropping what an earlier recording held) every allocation, free, block
 * given back, trim and refusal, the last `maxEntries` of them, with the JS stack
 * (`stackDepth` frames, default 10) of each allocating call of this thread when `stacks`
 * (default true). `{ enabled: false }` stops and drops the recording.
 */
function recordMemoryHistory(options) {
  let enabled = true;
  let maxEntries = DEFAULT_MAX_ENTRIES;
  let withStacks = true;
  let depth = DEFAULT_STACK_DEPTH;
  if (options !== undefined && options !== null) {
    if (typeof options !== 'object') throw typeError(`options must be an object, not ${typeName(options)}`);
    const names = keys(options);
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      const value = options[name];
      if (value === undefined) continue;
      if (name === 'enabled' || name === 'stacks') {
        if (typeof value !== 'boolean') throw typeError(`${name} must be a boolean, not ${display(value)}`);
        if (name === 'enabled') enabled = value;
        else withStacks = value;
      } else if (name === 'stackDepth') {
        if (typeof value !== 'number' || !isSafeInteger(value)) throw typeError(`stackDepth must be an integer, not ${display(value)}`);
        if (value < 1 || value > MAX_STACK_DEPTH) throw rangeError(`stackDepth must be 1 ..= ${MAX_STACK_DEPTH}, got ${value}`, ErrorCode.InvalidArgValue);
        depth = value;
      } else if (name === 'maxEntries') {
        if (typeof value !== 'number' || !isSafeInteger(value)) throw typeError(`maxEntries must be an integer, not ${display(value)}`);
        if (value < 1 || value > MAX_ENTRIES_LIMIT) throw rangeError(`maxEntries must be 1 ..= ${MAX_ENTRIES_LIMIT}, got ${value}`, ErrorCode.InvalidArgValue);
        maxEntries = value;
      } else {
        throw typeError(`unknown option '${apply(stringSlice, String(name), [0, 64])}': the options are enabled, maxEntries, stacks and stackDepth`);
      }
    }
  }
  native.observeRecord(enabled, maxEntries, enabled && withStacks);
  // The ids of this thread's stacks named the last recording's texts.
  forgetStacks();
  recording = enabled;
  stacks = enabled && withStacks;
  stackDepth = depth;
}

/**
 * A plain-JSON picture of the process's memory now: each device's statistics, the live
 * blocks (with the stacks of their allocating calls, where recorded), the pool's cached
 * blocks, and the recorded events and stacks.
 */
function memorySnapshot() {
  readStacks();
  try {
    return parse(native.observeSnapshot());
  } catch (error) {
    throw fromNative(error);
  }
}

/**
 * Calls `callback({ error, nbytes, kind, device, stats, snapshot })` when an allocation of
 * this thread fails, before the error is thrown (`snapshot` while a history is recorded).
 * Returns a function that removes it.
 */
function onOutOfMemory(callback) {
  if (typeof callback !== 'function') throw typeError(`callback must be a function, not ${display(callback)}`);
  const entry = { __proto__: null, callback, next: null };
  let last = observers;
  while (last.next !== null) last = last.next;
  last.next = entry;
  observers.count += 1;
  return function removeOutOfMemoryObserver() {
    for (let link = observers; link.next !== null; link = link.next) {
      if (link.next === entry) {
        link.next = entry.next;
        observers.count -= 1;
        return;
      }
    }
  };
}

// A stack is taken as V8's call sites, and its text is made only the first time this
// thread sees it: formatting every allocation's stack costs several times the capture.
// The sites are named by file and position (a number per file, so a key is short), and
// the key names the recording's id of the text, sent once.
const asCallSites = (_error, sites) => sites;

/**
 * The stack of the JS call that allocates (`above` and what it called left out), at most
 * `stackDepth` frames, not yet read (V8 makes its call sites when `stack` is read).
 */
function capture(above) {
  const holder = { __proto__: null };
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = stackDepth;
  try {
    captureStackTrace(holder, above);
  } finally {
    Error.stackTraceLimit = limit;
  }
  return holder;
}

/** A captured stack as `prepare` makes it (`asCallSites`: V8's call sites). */
function read(holder, prepare) {
  const saved = Error.prepareStackTrace;
  Error.prepareStackTrace = prepare;
  try {
    return holder.stack;
  } finally {
    Error.prepareStackTrace = saved;
  }
}

/** Whether this thread sends the stacks of its allocations (`entryStack` then takes them). */
const sendsStacks = () => stacks;

/**
 * The stack of an allocating call taken where the call enters the library (the memory
 * class's constructor, `above` being its `new.target`), or `undefined` under source maps
 * (Node's formatting then takes it later). V8's capture costs most for the optimized
 * frames it walks, the skipped ones included, so taking it before the library's own frames
 * are on the stack saves a good part of it; the stack is handed over unread when the
 * allocation happens (`allocation()`, `deferStack`). The capture is written out here,
 * with no call of `capture()`: each function inlined into the frame that captures adds to
 * what V8 decodes.
 */
function entryStack(above) {
  if (process.sourceMapsEnabled) return undefined;
  const holder = { __proto__: null };
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = stackDepth;
  captureStackTrace(holder, above);
  Error.stackTraceLimit = limit;
  return holder;
}

/** The call sites of the JS call that allocates. */
const callSites = (above) => read(capture(above), asCallSites);

// CallSite's methods, from a CallSite taken at load (later changes to them change nothing).
const siteMethods = (() => {
  const sites = callSites(undefined);
  const proto = Object.getPrototypeOf(sites[0]);
  return { getFileName: proto.getFileName, getPosition: proto.getPosition, toString: proto.toString };
})();

// A stack's key is its frames': each a file's number and the position in it, or (a frame
// with no file, a builtin's) the number of its text. The key is looked up by its hash in
// `stackIds` and compared frame by frame, so that no string is built per allocation.
/** A file's number (from 0), or a file-less frame's text's (from -1 down), in this thread's keys. */
const frameIds = new Map();
let files = 0;
let texts = 0;
/** The key of the stack being sent: [frame id, position] per frame. */
const frameKey = new Int32Array(2 * MAX_STACK_DEPTH);
/**
 * This thread's stacks by the hash of their key: lists of `{ key, id, next }` (`id`: the
 * stack's id in recording `stackGeneration`).
 */
let stackIds = new Map();
let stackCount = 0;
let stackGeneration = 0;

/** Fills `frameKey` with the key of `sites`; returns its hash. */
function keyOf(sites) {
  let hash = sites.length;
  for (let i = 0; i < sites.length; i++) {
    const site = sites[i];
    const file = apply(siteMethods.getFileName, site, []);
    let frame;
    let position = typeof file === 'string' ? apply(siteMethods.getPosition, site, []) : -1;
    if (typeof position === 'number' && position >= 0 && position <= 0x7fffffff) {
      frame = apply(mapGet, frameIds, [file]);
      if (frame === undefined) {
        frame = files++;
        apply(mapSet, frameIds, [file, frame]);
      }
    } else {
      position = 0;
      // The text as a key of its own (`\0` first: no file name starts so): a builtin's
      // frame, or one with no position.
      const text = `\0${apply(siteMethods.toString, site, [])}`;
      frame = apply(mapGet, frameIds, [text]);
      if (frame === undefined) {
        frame = -1 - texts++;
        apply(mapSet, frameIds, [text, frame]);
      }
    }
    frameKey[2 * i] = frame;
    frameKey[2 * i + 1] = position;
    hash = (imul(hash ^ frame, 0x01000193) + position) | 0;
  }
  return hash;
}

/** The entry of `stackIds` whose key is `frameKey`'s first `length` numbers, or null. */
function knownStack(hash, length) {
  let entry = apply(mapGet, stackIds, [hash]);
  while (entry !== undefined && entry !== null) {
    const key = entry.key;
    if (key.length === length) {
      let i = 0;
      while (i < length && key[i] === frameKey[i]) i++;
      if (i === length) return entry;
    }
    entry = entry.next;
  }
  return null;
}

/** A stack's text, as Node prints the frames of an error's stack. */
function stackText(sites) {
  let text = '';
  for (let i = 0; i < sites.length; i++) text += `${i === 0 ? '' : '\n'}    at ${apply(siteMethods.toString, sites[i], [])}`;
  return text;
}

/** Forgets this copy's stack ids and unread stacks (they named a recording that is over). */
function forgetStacks() {
  stackIds = new Map();
  stackCount = 0;
  pending = [];
  pendingBase = sequence;
  untilSweep = SWEEP_EVERY;
}

/** Takes the recording now as this thread's, forgetting what named an earlier one. */
function followRecording() {
  const generation = native.observeStackGeneration();
  if (generation === stackGeneration) return;
  forgetStacks();
  stackGeneration = generation;
}

/**
 * The id of the stack `sites` in the recording (`stackGeneration`), its text sent the
 * first time this thread sees it; -1 for none (the table is full, or the recording over).
 */
function stackId(sites) {
  const hash = keyOf(sites);
  const length = 2 * sites.length;
  const known = knownStack(hash, length);
  if (known !== null) return known.id;
  const id = native.observeInternStack(stackGeneration, stackText(sites));
  if (id >= 0) {
    const entry = { __proto__: null, key: apply(typedArraySlice, frameKey, [0, length]), id, next: apply(mapGet, stackIds, [hash]) ?? null };
    apply(mapSet, stackIds, [hash, entry]);
    stackCount += 1;
  }
  return id;
}

/**
 * Tells the binding the stack of this thread's next allocation: `captured` (from
 * `entryStack`), or the call above `above`.
 */
function sendStack(above, captured) {
  if (captured !== undefined) {
    deferStack(captured);
    return;
  }
  // Source maps (--enable-source-maps) change what a frame says: Node's own formatting.
  if (process.sourceMapsEnabled) {
    native.observeNextStack(formattedStack(above));
    return;
  }
  sendSites(callSites(above));
}

/** Tells the binding the stack of this thread's next allocation, read: its call sites. */
function sendSites(sites) {
  let id = stackId(sites);
  if (id >= 0 && native.observeNextStackId(id, stackGeneration)) return;
  // A new recording: the ids of the last one name nothing now.
  followRecording();
  id = stackId(sites);
  if (id >= 0) native.observeNextStackId(id, stackGeneration);
}

// A stack taken in the memory class's constructor is not read at once: reading V8's call
// sites costs more than taking them, and most stacks of a busy program are never looked
// at (their events leave the ring, their blocks are freed). The allocation gets this
// copy's next sequence number as a provisional stack, and the holder is kept unread
// while the recording names it. A sweep every so many allocations asks the binding which
// of them it still names: it reads those of live blocks (so that a snapshot has few left
// to read), keeps those only events name, and drops the rest unread. A snapshot reads all
// that are left. So what holds V8's call-site records (receivers and functions included)
// is at most the stacks the ring's events name and one sweep's worth of allocations.
/** Allocations with an unread stack between two sweeps, at the least. */
const SWEEP_EVERY = 4096;
/**
 * This copy's number in the binding's names of unread stacks: a thread may hold several
 * copies of this file (one per vm context, as jest's and vitest's vm pools load it), each
 * numbering its stacks from 0 (0 here: the numbers are spent; stacks are read at once).
 */
const stackSource = native.observeStackSource();
/** The next sequence number of this copy's unread stacks (never reused). */
let sequence = 0;
/**
 * The holders of this copy's unread stacks: `pending[i]` is sequence `pendingBase + i`'s
 * (`undefined` once read or dropped); it ends at `sequence`.
 */
let pending = [];
let pendingBase = 0;
let untilSweep = SWEEP_EVERY;

/** Makes `holder`, unread, the stack of this thread's next allocation. */
function deferStack(holder) {
  if (stackSource === 0) {
    sendSites(read(holder, asCallSites));
    return;
  }
  if (--untilSweep <= 0) sweep(false);
  if (!native.observeNextStackProvisional(stackGeneration, stackSource, sequence)) {
    followRecording();
    if (!native.observeNextStackProvisional(stackGeneration, stackSource, sequence)) return;
  }
  pending[sequence - pendingBase] = holder;
  sequence += 1;
}

/** The id of unread stack `number` (-1: none), its holder read and dropped. */
function readStack(number) {
  const index = number - pendingBase;
  const holder = index >= 0 ? pending[index] : undefined;
  if (holder === undefined) return -1;
  pending[index] = undefined;
  return stackId(holder.stack);
}

/**
 * Reads the unread stacks the recording still names, those of live blocks (every one
 * when `all`, for a snapshot), and tells the binding their ids; drops those it no longer
 * names.
 */
function sweep(all) {
  const named = native.observeReferencedStacks(stackGeneration, stackSource);
  if (named === undefined) {
    forgetStacks();
    return;
  }
  const liveAllocations = named[0];
  const first = Math.max(named[1], pendingBase);
  const last = named[2];
  const live = named[3];
  const holesAt = 4 + live;
  // The ones to read: the live ones, then (`all`) the rest of the range but its holes.
  let count = live;
  if (all && last >= first) count = last - first + 1 - (named.length - holesAt);
  const numbers = new Float64Array(count);
  for (let i = 0; i < live; i++) numbers[i] = named[4 + i];
  if (all) {
    let at = live;
    let hole = holesAt;
    let liveAt = 4;
    for (let number = first; number <= last && at < count; number++) {
      while (hole < named.length && named[hole] < number) hole++;
      if (hole < named.length && named[hole] === number) continue;
      while (liveAt < holesAt && named[liveAt] < number) liveAt++;
      if (liveAt < holesAt && named[liveAt] === number) continue;
      numbers[at++] = number;
    }
  }
  if (count > 0) {
    const ids = new Float64Array(count);
    const saved = Error.prepareStackTrace;
    Error.prepareStackTrace = asCallSites;
    try {
      for (let i = 0; i < count; i++) ids[i] = readStack(numbers[i]);
    } finally {
      Error.prepareStackTrace = saved;
    }
    native.observeResolveStacks(stackGeneration, stackSource, numbers, ids, live);
  }
  if (all || last < first) {
    pending = [];
    pendingBase = sequence;
  } else {
    // Keep the named range (the holes and what was read dropped), then what follows it.
    const kept = apply(arraySlice, pending, [first - pendingBase, last - pendingBase + 1]);
    for (let i = holesAt; i < named.length; i++) if (named[i] >= first) kept[named[i] - first] = undefined;
    for (let number = last + 1; number < sequence; number++) kept[number - first] = undefined;
    pending = kept;
    pendingBase = first;
  }
  // Often enough that few live blocks are left unread, seldom enough that asking the
  // binding (a walk of the ring and the live blocks) costs little per allocation.
  untilSweep = Math.max(SWEEP_EVERY, pending.length >> 2, liveAllocations >> 4);
}

/** Reads every unread stack of this copy the recording names (before a snapshot). */
function readStacks() {
  if (sequence > pendingBase) sweep(true);
}

/** The stack of the JS call above `above`, formatted by Node (and its source maps). */
function formattedStack(above) {
  const text = String(read(capture(above), Error.prepareStackTrace));
  const firstFrame = apply(stringIndexOf, text, ['\n']);
  return firstFrame < 0 ? '' : apply(stringSlice, text, [firstFrame + 1]);
}

function tellObservers(error, kind, nbytes, queue) {
  if (observers.count === 0 || error.code !== 'ERR_USM_ALLOCATION') return;
  const device = queue.syclDevice;
  let stats;
  let snapshot;
  try {
    stats = memoryStats(device);
    snapshot = recording ? memorySnapshot() : undefined;
  } catch {
    // The figures could not be had (the allocation's own failure is what matters).
  }
  const info = { error, nbytes, kind: KIND_NAMES[kind], device: device.filterString, stats, snapshot };
  // The observers of now: one that removes another, or adds one, changes who runs next time.
  let count = 0;
  for (let link = observers.next; link !== null; link = link.next) count += 1;
  const callbacks = { __proto__: null, length: count };
  count = 0;
  for (let link = observers.next; link !== null; link = link.next) callbacks[count++] = link.callback;
  for (let i = 0; i < callbacks.length; i++) {
    const callback = callbacks[i];
    try {
      callback(info);
    } catch (thrown) {
      let why;
      try {
        why = String(thrown !== null && typeof thrown === 'object' ? thrown.message : thrown);
      } catch {
        why = 'a value that cannot be read';
      }
      emitWarning(`an onOutOfMemory observer threw: ${why}`, { code: 'DPCTL_MEMORY_OOM_OBSERVER' });
    }
  }
}

/**
 * This thread's address slot: the address of the allocation `native.observeAllocate` made
 * last, read with no call of its own (`undefined` where the engine refuses the binding's
 * external buffers: `memPointer` then).
 */
const addressSlot = (() => {
  const buffer = native.observeAddressSlot();
  return buffer === undefined ? undefined : new BigUint64Array(buffer);
})();

/**
 * An allocation with what is watching: the stack sent first, the `alloc` channel around
 * it, the OOM observers told of a failure. `call` is the binding's allocating call, or
 * `null` for `memAllocate(queueId, kind, nbytes, alignment)`. Throws the error to throw
 * (converted).
 */
function allocation(call, kind, nbytes, queue, above, captured, queueId, alignment) {
  if (stacks) sendStack(above, captured);
  if (!subscribed(channels.alloc)) return allocate(call, queueId, kind, nbytes, alignment, queue, false);
  // What `TracingChannel.traceSync` does, with no closure of its own: the context, then
  // `start` (its stores bound) around `allocateTraced`.
  const context = { kind: KIND_NAMES[kind], nbytes, device: queue.syclDevice.filterString, pointer: undefined };
  return startOf(channels.alloc).runStores(context, allocateTraced, undefined, call, queueId, kind, nbytes, alignment, queue, context);
}

/** The allocation, its failure converted (and told to the OOM observers). */
function allocate(call, queueId, kind, nbytes, alignment, queue, traced) {
  try {
    if (call !== null) return call();
    return traced && addressSlot !== undefined ? native.observeAllocate(queueId, kind, nbytes, alignment) : native.memAllocate(queueId, kind, nbytes, alignment);
  } catch (carrier) {
    const error = fromNative(carrier);
    apply(weakSetAdd, converted, [error]);
    tellObservers(error, kind, nbytes, queue);
    throw error;
  }
}

/** The traced allocation, inside `start`: `error` and `end` published as traceSync does. */
function allocateTraced(call, queueId, kind, nbytes, alignment, queue, context) {
  const tracing = channels.alloc;
  try {
    const handle = allocate(call, queueId, kind, nbytes, alignment, queue, true);
    context.pointer = call === null && addressSlot !== undefined ? addressSlot[0] : native.memPointer(handle);
    context.result = handle;
    return handle;
  } catch (error) {
    context.error = error;
    tracing.error.publish(context);
    throw error;
  } finally {
    tracing.end.publish(context);
  }
}

/**
 * A binding call that throws the binding's error carriers, traced on `tracing` as
 * `TracingChannel.traceSync` does (start, end, error; `context.result` set to its result):
 * the subscribers see `context.error` converted (an error of the class, code and message
 * the caller then throws), and the carrier goes on to the caller, which converts it as usual.
 */
function traceNative(tracing, context, fn, argument) {
  return startOf(tracing).runStores(context, callTraced, undefined, tracing, context, fn, argument);
}

/** `fn(argument)` inside `start`, for `traceNative`. */
function callTraced(tracing, context, fn, argument) {
  try {
    const result = fn(argument);
    context.result = result;
    return result;
  } catch (carrier) {
    context.error = fromNative(carrier);
    tracing.error.publish(context);
    throw carrier;
  } finally {
    tracing.end.publish(context);
  }
}

/** `free()` of `handle` traced on the `free` channel (called only while it has subscribers). */
function traceFree(memory, kind, nbytes, handle) {
  return traceNative(channels.free, { kind: KIND_NAMES[kind], nbytes, memory }, native.memFree, handle);
}

/** A synchronous copy or fill traced on the `copy` channel (only while it has subscribers). */
function traceCopy(op, memory, nbytes, fn) {
  return traceNative(channels.copy, { op, async: false, nbytes, memory }, fn);
}

/** An asynchronous one: `start`/`end` around the call, `asyncStart`/`asyncEnd` when it settles. */
function tracePromise(op, memory, nbytes, fn) {
  return channels.copy.tracePromise(fn, { op, async: true, nbytes, memory });
}

module.exports = {
  memoryStats,
  resetPeakStats,
  recordMemoryHistory,
  memorySnapshot,
  onOutOfMemory,
  // For lib/memory.js:
  watching,
  sendsStacks,
  entryStack,
  allocation,
  isConverted,
  channels,
  subscribed,
  traceFree,
  traceCopy,
  tracePromise,
};
