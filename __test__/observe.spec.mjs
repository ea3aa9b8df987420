// Seeing memory: memoryStats() follows every allocation and free through the pool,
// recordMemoryHistory() and memorySnapshot() give the events, live and cached blocks with
// the JS stacks of the allocating calls, and diagnostics_channel publishes allocations,
// frees and copies as TracingChannels. Serial: each case compares figures with its own
// baseline, and the process has one set of counters.
import test from 'ava';
import diagnostics from 'node:diagnostics_channel';
import { once } from 'node:events';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { addon, getDevices } from './helpers/addon.mjs';

// AVA runs with --enable-source-maps, under which stacks go through Node's formatting (a
// test below turns it on again): the stacks of every other test are read as V8's call
// sites, as they are in a program that does not map its sources.
process.setSourceMapsEnabled(false);

const { MemoryUSMDevice, MemoryUSMHost, MemoryUSMShared, SyclQueue, memoryStats, resetPeakStats, recordMemoryHistory, memorySnapshot, poolTrim } = addon;

const CPU = (() => {
  try {
    return getDevices('opencl:cpu').length > 0;
  } catch {
    return false;
  }
})();
const WHY_NOT = CPU ? null : 'no opencl:cpu device';
const register = (title, fn) => (WHY_NOT ? test.skip(`${title} [${WHY_NOT}: skipped]`, () => {}) : test.serial(title, fn));
const queue = CPU ? new SyclQueue('opencl:cpu') : undefined;
const KB = 1024;
const classes = { device: MemoryUSMDevice, host: MemoryUSMHost, shared: MemoryUSMShared };
const stat = (kind) => memoryStats(queue.syclDevice)[kind];

register('memoryStats() has the shape of PyTorch memory_stats() for the device, each kind and all kinds', (t) => {
  const stats = memoryStats(queue.syclDevice);
  t.is(stats.filterString, queue.syclDevice.filterString);
  t.is(stats.name, queue.syclDevice.name);
  t.deepEqual(memoryStats('opencl:cpu').filterString, stats.filterString, 'a filter string names the device too');
  for (const kind of ['all', 'device', 'host', 'shared']) {
    for (const figure of ['allocatedBytes', 'activeBytes', 'requestedBytes', 'reservedBytes', 'allocation', 'segment']) {
      t.deepEqual(Object.keys(stats[kind][figure]), ['current', 'peak', 'allocated', 'freed'], `${kind}.${figure}`);
    }
    for (const count of ['numDeviceAlloc', 'numDeviceFree', 'poolHits', 'poolMisses', 'poolEvictions', 'poolTrims', 'numAllocRetries', 'numOoms']) {
      t.is(typeof stats[kind][count], 'number', `${kind}.${count}`);
    }
  }
  for (const figure of ['pinnedBytes', 'pinnedBuffers', 'scratchBytes', 'scratchBlocks']) {
    t.deepEqual(Object.keys(stats.staging[figure]), ['current', 'peak', 'allocated', 'freed'], `staging.${figure}`);
  }
  t.deepEqual(stats.staging.pinnedBytes, { current: 0, peak: 0, allocated: 0, freed: 0 }, 'a SYCL device keeps no staging buffers of ours');
  t.throws(() => memoryStats(42), { instanceOf: TypeError, code: 'ERR_INVALID_ARG_TYPE' });
});

register('the host scratch of async copies is counted as staging, not as reserved host memory, from made to freed', async (t) => {
  poolTrim();
  const before = memoryStats(queue.syclDevice);
  const m = new MemoryUSMDevice(3 << 20, { queue });
  try {
    // A plain ArrayBuffer is copied into scratch first (the task's own copy of it).
    await m.copyFromHostAsync(new Uint8Array(3 << 20).fill(7));
    const after = memoryStats(queue.syclDevice);
    const made = after.staging.scratchBytes.allocated - before.staging.scratchBytes.allocated;
    t.true(made >= 3 << 20, `a fresh block of the copy's size (the idle ones were trimmed): ${made}`);
    t.true(after.staging.scratchBytes.current >= 3 << 20, 'kept for reuse');
    t.true(after.staging.scratchBytes.peak >= after.staging.scratchBytes.current);
    t.is(after.host.reservedBytes.current, before.host.reservedBytes.current, 'not in the host kind');
    poolTrim();
    const trimmed = memoryStats(queue.syclDevice);
    t.is(trimmed.staging.scratchBytes.current, 0, 'poolTrim() frees the idle scratch');
    t.is(trimmed.staging.scratchBlocks.current, 0);
    t.true(trimmed.staging.scratchBytes.freed >= after.staging.scratchBytes.freed + (3 << 20));
    resetPeakStats(queue.syclDevice);
    t.is(memoryStats(queue.syclDevice).staging.scratchBytes.peak, 0, 'resetPeakStats() resets it');
  } finally {
    m.free();
  }
});

for (const kind of ['device', 'host', 'shared']) {
  register(`${kind}: allocated, requested, reserved and the pool's hits follow allocations and frees, and a trim gives the reserve back`, (t) => {
    poolTrim();
    const before = stat(kind);
    const a = new classes[kind](5000, { queue }); // the 5 KiB class
    const b = new classes[kind](100, { queue }); // the 512-byte class
    let now = stat(kind);
    t.is(now.allocatedBytes.current - before.allocatedBytes.current, 5 * KB + 512, 'size classes, as PyTorch counts its rounded blocks');
    t.is(now.requestedBytes.current - before.requestedBytes.current, 5100);
    t.is(now.reservedBytes.current - before.reservedBytes.current, 5 * KB + 512);
    t.deepEqual(now.activeBytes, now.allocatedBytes);
    t.is(now.allocation.current - before.allocation.current, 2);
    t.is(now.poolMisses - before.poolMisses, 2);
    t.true(now.allocatedBytes.peak >= now.allocatedBytes.current);
    a.free();
    now = stat(kind);
    t.is(now.allocatedBytes.current - before.allocatedBytes.current, 512);
    t.is(now.reservedBytes.current - before.reservedBytes.current, 5 * KB + 512, 'the freed block is cached: still reserved');
    t.is(now.allocatedBytes.freed - before.allocatedBytes.freed, 5 * KB);
    const c = new classes[kind](4500, { queue });
    now = stat(kind);
    t.is(now.poolHits - before.poolHits, 1, 'the same class comes from the cache');
    t.is(now.segment.allocated - before.segment.allocated, 2, 'no new block from the runtime');
    c.free();
    b.free();
    const trimmed = stat(kind).reservedBytes.current;
    poolTrim();
    now = stat(kind);
    t.is(now.reservedBytes.current, trimmed - (5 * KB + 512));
    t.is(now.poolTrims - before.poolTrims, 1);
    t.is(now.numDeviceFree - before.numDeviceFree, 2);
    const all = memoryStats(queue.syclDevice).all;
    t.true(all.allocatedBytes.allocated >= now.allocatedBytes.allocated);
  });
}

register('resetPeakStats() sets the peaks to the current figures, and the peak of all kinds is the peak of the sum', (t) => {
  poolTrim();
  resetPeakStats(queue.syclDevice);
  const base = memoryStats(queue.syclDevice).all.allocatedBytes.current;
  const d = new MemoryUSMDevice(1 << 20, { queue });
  d.free();
  const h = new MemoryUSMHost(1 << 20, { queue });
  h.free();
  const stats = memoryStats(queue.syclDevice);
  t.is(stats.device.allocatedBytes.peak - stats.device.allocatedBytes.current >= 1 << 20, true);
  t.is(stats.all.allocatedBytes.peak, base + (1 << 20), 'one MiB at a time, never two');
  resetPeakStats();
  t.is(memoryStats(queue.syclDevice).all.allocatedBytes.peak, base);
});

function allocateHere(kind, nbytes) {
  return new classes[kind](nbytes, { queue });
}

register('recordMemoryHistory() records allocations with their JS stacks; memorySnapshot() lists live and cached blocks, stats and events', (t) => {
  poolTrim();
  const early = new MemoryUSMHost(777, { queue });
  recordMemoryHistory({ maxEntries: 1000 });
  try {
    const live = allocateHere('shared', 3000);
    const gone = allocateHere('host', 9000);
    gone.free();
    const snapshot = memorySnapshot();
    t.is(snapshot.format, 'dpctl-memory-snapshot');
    t.is(snapshot.version, 1);
    t.deepEqual(snapshot.history, { enabled: true, maxEntries: 1000, stacks: true, dropped: 0, stacksRefused: 0, stacksUnread: 0 });
    const address = `0x${live.pointer.toString(16)}`;
    const block = snapshot.liveBlocks.find((b) => b.address === address);
    t.truthy(block, 'the live allocation is listed');
    t.like(block, { size: 3072, requested: 3000, kind: 'shared' });
    t.true(typeof block.timeUs === 'number' && block.timeUs <= snapshot.timeUs);
    const stack = snapshot.stacks[block.stack];
    t.regex(stack, /at allocateHere \(.*observe\.spec\.mjs:\d+:\d+\)/, 'the stack starts at the calling JS function');
    t.notRegex(stack.split('\n')[0], /lib[/\\](memory|observe)\.js/, "no frame of this package's own first");
    const earlyBlock = snapshot.liveBlocks.find((b) => b.address === `0x${early.pointer.toString(16)}`);
    t.like(earlyBlock, { requested: 777, stack: null, timeUs: null }, 'allocated before the recording: listed, without a stack');
    t.true(snapshot.cachedBlocks.some((b) => b.size === 10240 && b.kind === 'host'), 'the freed block is in the cache');
    const actions = snapshot.events.map((e) => `${e.action}:${e.kind}:${e.requested}`);
    t.deepEqual(actions, ['alloc:shared:3000', 'alloc:host:9000', 'free:host:9000']);
    t.like(snapshot.events[2], { toCache: true, size: 10240 });
    t.is(snapshot.events[2].stack, snapshot.events[1].stack, 'a free carries the stack of its allocation');
    const device = snapshot.devices.find((d) => d.index === block.device);
    t.is(device.stats.filterString, queue.syclDevice.filterString);
    t.is(JSON.stringify(JSON.parse(JSON.stringify(snapshot))), JSON.stringify(snapshot), 'plain JSON');
    live.free();
    poolTrim();
    const after = memorySnapshot();
    const kinds = after.events.slice(3).map((e) => e.action);
    t.deepEqual(kinds.slice(0, 1), ['free']);
    t.true(kinds.includes('release') && kinds.at(-1) === 'trim', kinds.join(','));
  } finally {
    recordMemoryHistory({ enabled: false });
    early.free();
  }
  const off = memorySnapshot();
  t.is(off.events.length, 0, 'turning it off drops the recording');
  t.is(off.history.enabled, false);
  new MemoryUSMHost(64, { queue }).free();
  t.is(memorySnapshot().events.length, 0, 'and records nothing more');
});

function allocateThere(nbytes) {
  return new MemoryUSMHost(nbytes, { queue });
}

register('each call site has its own stack, sent once and named again by its id, across recordings', (t) => {
  const stackOf = (snapshot, m) => snapshot.stacks[snapshot.liveBlocks.find((b) => b.address === `0x${m.pointer.toString(16)}`).stack];
  for (let recording = 0; recording < 2; recording++) {
    recordMemoryHistory({ maxEntries: 1000 });
    try {
      const here = [];
      const there = [];
      for (let i = 0; i < 5; i++) {
        here.push(allocateHere('host', 64));
        there.push(allocateThere(64));
      }
      const snapshot = memorySnapshot();
      t.is(snapshot.stacks.length, 2, 'two call sites, two stacks, however many calls');
      t.regex(stackOf(snapshot, here[4]), /^ {4}at allocateHere \(.*observe\.spec\.mjs:\d+:\d+\)\n {4}at /);
      t.regex(stackOf(snapshot, there[4]), /^ {4}at allocateThere \(.*observe\.spec\.mjs:\d+:\d+\)/);
      t.true(here.every((m) => stackOf(snapshot, m) === stackOf(snapshot, here[0])));
      t.true(there.every((m) => stackOf(snapshot, m) === stackOf(snapshot, there[0])));
      for (const m of [...here, ...there]) m.free();
    } finally {
      recordMemoryHistory({ enabled: false });
    }
  }
});

function allocateInside(nbytes) {
  return new MemoryUSMHost(nbytes, { queue });
}
function callTwoWays(held) {
  held.push(allocateInside(64));
  held.push(allocateInside(64));
}

register('stacks that differ in a deeper frame only are two stacks; a builtin\'s frame (no file) is keyed by its text', (t) => {
  recordMemoryHistory({ maxEntries: 1000 });
  const held = [];
  try {
    const stackOf = (snapshot, m) => snapshot.stacks[snapshot.liveBlocks.find((b) => b.address === `0x${m.pointer.toString(16)}`).stack];
    for (let i = 0; i < 3; i++) callTwoWays(held);
    const mapped = [];
    for (let i = 0; i < 3; i++) mapped.push(...[64, 64].map((n) => new MemoryUSMHost(n, { queue })));
    const snapshot = memorySnapshot();
    const first = stackOf(snapshot, held[0]);
    const second = stackOf(snapshot, held[1]);
    t.not(first, second, 'the two calls of callTwoWays are two lines');
    t.is(first.split('\n')[0], second.split('\n')[0], 'from the same first frame');
    t.regex(first.split('\n')[1], /at callTwoWays \(.*observe\.spec\.mjs:\d+:\d+\)/);
    for (let i = 2; i < held.length; i++) t.is(stackOf(snapshot, held[i]), i % 2 === 0 ? first : second);
    const viaMap = stackOf(snapshot, mapped[0]);
    t.regex(viaMap, /\n {4}at Array\.map \(<anonymous>\)\n/);
    t.true(mapped.every((m) => stackOf(snapshot, m) === viaMap));
    t.is(snapshot.stacks.length, 3, 'three stacks however many calls');
    held.push(...mapped);
  } finally {
    for (const m of held) m.free();
    recordMemoryHistory({ enabled: false });
  }
});

class HostSubclass extends MemoryUSMHost {}
function allocateThroughSubclass(nbytes) {
  return new HostSubclass(nbytes, { queue });
}
function convertHere(memory) {
  return new MemoryUSMDevice(memory, { copy: true, queue });
}
function failBeforeAllocating() {
  return new MemoryUSMHost(64, { queue, bogus: true });
}
function allocateAfterAFailure(nbytes) {
  return new MemoryUSMHost(nbytes, { queue });
}

register('a stack is the allocating call\'s: through a subclass, a conversion, and never one left by a construction that failed', (t) => {
  recordMemoryHistory({ maxEntries: 1000 });
  const held = [];
  try {
    const stackOf = (snapshot, m) => snapshot.stacks[snapshot.liveBlocks.find((b) => b.address === `0x${m.pointer.toString(16)}`).stack];
    const sub = allocateThroughSubclass(64);
    held.push(sub);
    const source = new MemoryUSMHost(128, { queue });
    held.push(source);
    const converted = convertHere(source);
    held.push(converted);
    t.throws(() => failBeforeAllocating(), { instanceOf: TypeError });
    const after = allocateAfterAFailure(96);
    held.push(after);
    const snapshot = memorySnapshot();
    t.true(sub instanceof HostSubclass);
    t.regex(stackOf(snapshot, sub), /^ {4}at allocateThroughSubclass \(.*observe\.spec\.mjs:\d+:\d+\)/, 'the subclass\'s constructor is left out as the class\'s is');
    t.regex(stackOf(snapshot, converted), /^ {4}at convertHere \(.*observe\.spec\.mjs:\d+:\d+\)/);
    t.regex(stackOf(snapshot, after), /^ {4}at allocateAfterAFailure \(.*observe\.spec\.mjs:\d+:\d+\)/);
    t.false(snapshot.stacks.some((s) => s.includes('failBeforeAllocating')), 'a failed construction sends no stack');
  } finally {
    for (const m of held) m.free();
    recordMemoryHistory({ enabled: false });
  }
});

register('stackDepth bounds the frames of each stack (1 ..= 64, default 10)', (t) => {
  const nest = (depth, fn) => (depth === 0 ? fn() : nest(depth - 1, fn));
  for (const [options, frames] of [[{}, 10], [{ stackDepth: 3 }, 3], [{ stackDepth: 1 }, 1], [{ stackDepth: 40 }, 40]]) {
    recordMemoryHistory({ maxEntries: 100, ...options });
    try {
      const m = nest(45, () => new MemoryUSMHost(64, { queue }));
      const snapshot = memorySnapshot();
      const stack = snapshot.stacks[snapshot.liveBlocks.find((b) => b.address === `0x${m.pointer.toString(16)}`).stack];
      m.free();
      t.is(stack.split('\n').length, frames, JSON.stringify(options));
      t.regex(stack, /^ {4}at .*observe\.spec\.mjs:\d+:\d+/, 'the first frame is the calling one');
    } finally {
      recordMemoryHistory({ enabled: false });
    }
  }
  t.throws(() => recordMemoryHistory({ stackDepth: 0 }), { instanceOf: RangeError, code: 'ERR_INVALID_ARG_VALUE' });
  t.throws(() => recordMemoryHistory({ stackDepth: 65 }), { instanceOf: RangeError, code: 'ERR_INVALID_ARG_VALUE' });
  t.throws(() => recordMemoryHistory({ stackDepth: 2.5 }), { instanceOf: TypeError });
});

function allocateAndFreeHere(n) {
  for (let i = 0; i < n; i++) new MemoryUSMHost(64, { queue }).free();
}

register('stacks read late are right: for live blocks and freed ones across many sweeps, and none once the ring has dropped them', (t) => {
  // Each thread keeps its stacks unread, reads those of live blocks every few thousand
  // allocations and all that are left at a snapshot: these cross many such sweeps.
  const addressOf = (m) => `0x${m.pointer.toString(16)}`;
  for (const maxEntries of [20, 100_000]) {
    recordMemoryHistory({ maxEntries });
    try {
      const early = allocateHere('host', 100);
      allocateAndFreeHere(30_000);
      const late = allocateThere(200);
      const gone = allocateThere(300);
      gone.free();
      const snapshot = memorySnapshot();
      t.is(snapshot.history.stacksUnread, 0, `${maxEntries}: this thread's stacks are all read`);
      const stackOf = (m) => snapshot.stacks[snapshot.liveBlocks.find((b) => b.address === addressOf(m)).stack];
      t.regex(stackOf(early), /^ {4}at allocateHere \(.*observe\.spec\.mjs:\d+:\d+\)/, `${maxEntries}: a block live across the sweeps`);
      t.regex(stackOf(late), /^ {4}at allocateThere \(/, `${maxEntries}: one allocated since the last sweep`);
      const events = snapshot.events.filter((e) => e.action === 'alloc' || e.action === 'free');
      t.true(events.length > 0 && events.every((e) => e.stack !== null), `${maxEntries}: every event in the ring has its stack`);
      const freed = snapshot.events.findLast((e) => e.action === 'free');
      t.like(freed, { requested: 300 });
      t.regex(snapshot.stacks[freed.stack], /^ {4}at allocateThere \(/, 'a freed block the ring names keeps its stack');
      const looped = events.filter((e) => e.requested === 64);
      t.true(looped.length > 0 && looped.every((e) => /^ {4}at allocateAndFreeHere \(/.test(snapshot.stacks[e.stack])));
      t.is(snapshot.stacks.length, new Set(snapshot.stacks).size, 'each text once');
      t.true(snapshot.stacks.length <= 4, `${maxEntries}: interned, ${snapshot.stacks.length} stacks`);
      // A second snapshot names the same stacks.
      const again = memorySnapshot();
      t.is(again.stacks[again.liveBlocks.find((b) => b.address === addressOf(early)).stack], stackOf(early));
      early.free();
      late.free();
    } finally {
      recordMemoryHistory({ enabled: false });
    }
  }
});

register("another thread's snapshot lists this thread's unread stacks as none and counts them; this thread's own reads them", async (t) => {
  recordMemoryHistory({ maxEntries: 1000 });
  const held = allocateHere('host', 4321);
  try {
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
      const m = require(${JSON.stringify(new URL('../index.js', import.meta.url).pathname)});
      const snapshot = m.memorySnapshot();
      const block = snapshot.liveBlocks.find((b) => b.requested === 4321);
      parentPort.postMessage({ stack: block.stack, unread: snapshot.history.stacksUnread });`,
      { eval: true },
    );
    // Listened for at once: a worker that has ended delivers its last message and its
    // exit in one turn, so a listener added after the message would miss the exit.
    const exited = once(worker, 'exit');
    const [seen] = await once(worker, 'message');
    await exited;
    t.is(seen.stack, null, "the worker cannot read the main thread's stack");
    t.true(seen.unread >= 2, `the live block and its event: ${seen.unread}`);
    const snapshot = memorySnapshot();
    const block = snapshot.liveBlocks.find((b) => b.address === `0x${held.pointer.toString(16)}`);
    t.regex(snapshot.stacks[block.stack], /^ {4}at allocateHere \(/);
    t.is(snapshot.history.stacksUnread, 0);
  } finally {
    held.free();
    recordMemoryHistory({ enabled: false });
  }
});

register('under --enable-source-maps a stack is taken as Node formats it, and read at once', (t) => {
  process.setSourceMapsEnabled(true);
  recordMemoryHistory({ maxEntries: 100 });
  try {
    const here = allocateHere('host', 1234);
    const snapshot = memorySnapshot();
    const block = snapshot.liveBlocks.find((b) => b.address === `0x${here.pointer.toString(16)}`);
    t.regex(snapshot.stacks[block.stack], /^ {4}at allocateHere \(.*observe\.spec\.mjs:\d+:\d+\)\n {4}at /);
    t.is(snapshot.history.stacksUnread, 0);
    here.free();
  } finally {
    recordMemoryHistory({ enabled: false });
    process.setSourceMapsEnabled(false);
  }
});

register('the ring keeps the newest maxEntries events; stacks: false records none', (t) => {
  recordMemoryHistory({ maxEntries: 4, stacks: false });
  try {
    for (let i = 0; i < 5; i++) new MemoryUSMHost(100 + i, { queue }).free();
    const snapshot = memorySnapshot();
    t.is(snapshot.events.length, 4);
    t.is(snapshot.history.dropped, 6);
    t.deepEqual(snapshot.events.map((e) => e.requested), [103, 103, 104, 104]);
    t.true(snapshot.events.every((e) => e.stack === null));
    t.deepEqual(snapshot.stacks, []);
  } finally {
    recordMemoryHistory({ enabled: false });
  }
  t.throws(() => recordMemoryHistory({ maxEntries: 0 }), { instanceOf: RangeError, code: 'ERR_INVALID_ARG_VALUE' });
  t.throws(() => recordMemoryHistory({ maxEntries: 1.5 }), { instanceOf: TypeError });
  t.throws(() => recordMemoryHistory({ stacks: 'yes' }), { instanceOf: TypeError });
  t.throws(() => recordMemoryHistory({ bogus: 1 }), { instanceOf: TypeError, message: /unknown option 'bogus'/ });
  t.throws(() => recordMemoryHistory(5), { instanceOf: TypeError });
  t.is(memorySnapshot().history.enabled, false, 'a refused call changes nothing');
});

/** Collects what the TracingChannel `name` publishes. */
function subscribe(name) {
  const seen = [];
  const channel = diagnostics.tracingChannel(name);
  const handlers = Object.fromEntries(['start', 'end', 'asyncStart', 'asyncEnd', 'error'].map((event) => [event, (context) => seen.push({ event, ...context })]));
  channel.subscribe(handlers);
  return { seen, stop: () => channel.unsubscribe(handlers) };
}

register('allocations and frees are published on TracingChannels (start, end, error), with what was asked and got', (t) => {
  const alloc = subscribe('dpctl-memory:alloc');
  const free = subscribe('dpctl-memory:free');
  let m;
  let pointer;
  try {
    m = new MemoryUSMDevice(4096, { queue });
    pointer = m.pointer;
    m.free();
    t.throws(() => new MemoryUSMDevice(2 ** 52, { queue }), { code: 'ERR_USM_ALLOCATION' });
  } finally {
    alloc.stop();
    free.stop();
  }
  t.deepEqual(alloc.seen.map((e) => e.event), ['start', 'end', 'start', 'error', 'end']);
  t.like(alloc.seen[1], { kind: 'device', nbytes: 4096, device: queue.syclDevice.filterString, pointer });
  t.is(alloc.seen[3].error.code, 'ERR_USM_ALLOCATION');
  t.is(alloc.seen[3].error.name, 'USMAllocationError');
  t.deepEqual(free.seen.map((e) => e.event), ['start', 'end']);
  t.is(free.seen[0].memory, m);
  // Unsubscribed: nothing more.
  new MemoryUSMHost(64, { queue }).free();
  t.is(alloc.seen.length, 5);
});

register('each traced allocation\'s pointer is its own, in a row of every kind, through a conversion, and on a worker thread', async (t) => {
  const alloc = subscribe('dpctl-memory:alloc');
  const made = [];
  try {
    for (let i = 0; i < 3; i++) for (const kind of ['device', 'host', 'shared']) made.push(new classes[kind](64 * (i + 1), { queue }));
    made.push(new MemoryUSMDevice(made[1], { copy: true, queue }));
  } finally {
    alloc.stop();
  }
  const ends = alloc.seen.filter((e) => e.event === 'end');
  t.is(ends.length, made.length);
  t.deepEqual(ends.map((e) => e.pointer), made.map((m) => m.pointer));
  t.is(new Set(ends.map((e) => e.pointer)).size, made.length, 'live allocations, distinct addresses');
  t.true(ends.every((e) => typeof e.pointer === 'bigint'));
  for (const m of made) m.free();
  const worker = new Worker(
    `const { parentPort } = require('node:worker_threads');
    const diagnostics = require('node:diagnostics_channel');
    const m = require(${JSON.stringify(new URL('../index.js', import.meta.url).pathname)});
    const queue = new m.SyclQueue('opencl:cpu');
    const pointers = [];
    const handlers = { end: (context) => pointers.push(context.pointer) };
    diagnostics.tracingChannel('dpctl-memory:alloc').subscribe(handlers);
    const made = [new m.MemoryUSMHost(64, { queue }), new m.MemoryUSMShared(128, { queue })];
    diagnostics.tracingChannel('dpctl-memory:alloc').unsubscribe(handlers);
    parentPort.postMessage({ seen: pointers.map(String), pointers: made.map((x) => String(x.pointer)) });
    for (const x of made) x.free();`,
    { eval: true },
  );
  // Listened for at once (see above): the exit may come in the same turn as the message.
  const exited = once(worker, 'exit');
  const [result] = await once(worker, 'message');
  await exited;
  t.deepEqual(result.seen, result.pointers, "a worker's traced allocations get their own thread's addresses");
});

register('copies and fills are published, the async ones with asyncStart and asyncEnd when they settle', async (t) => {
  const copy = subscribe('dpctl-memory:copy');
  const m = new MemoryUSMHost(1024, { queue });
  const d = new MemoryUSMDevice(1024, { queue });
  try {
    m.memset(7);
    d.copyFromDevice(m);
    d.copyToHost(new Uint8Array(1024));
    d.copyFromHost(new Uint8Array(10));
    await d.copyToHostAsync();
    await d.memsetAsync(1);
    const big = new MemoryUSMHost(4096, { queue });
    const failure = await (async () => {
      try {
        await d.copyFromDeviceAsync(big);
      } catch (error) {
        return error;
      }
    })();
    big.free();
    t.is(failure?.code, 'ERR_SOURCE_TOO_LARGE');
  } finally {
    copy.stop();
    m.free();
    d.free();
  }
  const ops = copy.seen.filter((e) => e.event === 'start').map((e) => `${e.op}:${e.async}:${e.nbytes}`);
  t.deepEqual(ops.slice(0, 6), ['memset:false:1024', 'copyFromDevice:false:1024', 'copyToHost:false:1024', 'copyFromHost:false:10', 'copyToHostAsync:true:1024', 'memsetAsync:true:1024']);
  const async = copy.seen.filter((e) => e.op === 'copyToHostAsync').map((e) => e.event);
  t.deepEqual(async, ['start', 'end', 'asyncStart', 'asyncEnd']);
  t.true(copy.seen.find((e) => e.op === 'copyToHostAsync' && e.event === 'asyncEnd').result instanceof Uint8Array);
  const failed = copy.seen.filter((e) => e.op === 'copyFromDeviceAsync').map((e) => e.event);
  t.true(failed.includes('error'), failed.join(','));
});

// Copies of lib/ in vm contexts of one thread (jest's and vitest's vm pools load a package
// so: each test file's context evaluates the JS again, over the one binding). Each copy
// numbers its unread stacks from 0; a recording must keep them apart.
const REALMS = String.raw`
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const root = process.argv[1];
// Stacks read later, as V8's call sites (under source maps each is formatted at the call).
process.setSourceMapsEnabled(false);
/** lib/ evaluated in a new vm context, its relative requires too; Node's modules and the .node from the main realm. */
function loadInContext() {
  const context = vm.createContext({ process, console, Buffer, setTimeout, clearTimeout, setImmediate, queueMicrotask });
  const cache = new Map();
  const load = (file) => {
    if (cache.has(file)) return cache.get(file).exports;
    const module = { exports: {} };
    cache.set(file, module);
    const wrapped = vm.runInContext('(function (exports, require, module, __filename, __dirname) {' + fs.readFileSync(file, 'utf8') + '\n})', context, { filename: file });
    const dir = path.dirname(file);
    const local = (spec) => spec.startsWith('.') && !spec.endsWith('.json') && !spec.endsWith('.node');
    wrapped(module.exports, (spec) => (local(spec) ? load(path.resolve(dir, spec.endsWith('.js') ? spec : spec + '.js')) : require(spec.startsWith('.') ? path.resolve(dir, spec) : spec)), module, file, dir);
    return module.exports;
  };
  return load(path.join(root, 'lib', 'index.js'));
}
const main = require(root);
const copies = { main, a: loadInContext(), b: loadInContext() };
if (copies.a.MemoryUSMHost === main.MemoryUSMHost || copies.a.MemoryUSMHost === copies.b.MemoryUSMHost) throw new Error('not separate copies');
// Each copy's allocating call site: a function of its own, in a file of its own.
const sites = {};
for (const [name, m] of Object.entries(copies)) {
  const queue = new m.SyclQueue('opencl:cpu');
  sites[name] = vm.runInNewContext('(function site_' + name + '(n) { return new M(n, { queue }); })', { M: m.MemoryUSMHost, queue }, { filename: 'realm-' + name + '.js' });
}
for (const m of Object.values(copies)) m.recordMemoryHistory({ maxEntries: 100000 });
const owner = new Map();
const held = [];
for (let i = 0; i < 1000; i++) {
  for (const name of Object.keys(copies)) {
    const memory = sites[name](64 + i);
    held.push(memory);
    owner.set('0x' + memory.pointer.toString(16), name);
  }
}
/** Per copy: blocks whose stack names its own site, another's, or none. */
function tally(snapshot) {
  const out = {};
  for (const block of snapshot.liveBlocks) {
    const name = owner.get(block.address);
    if (name === undefined) continue;
    const text = block.stack === null ? null : snapshot.stacks[block.stack];
    const site = text === null ? 'none' : (/^ +at [^\n]*\(realm-(\w+)\.js:/.exec(text) ?? [])[1] ?? 'other';
    const t = (out[name] ??= {});
    t[site] = (t[site] ?? 0) + 1;
  }
  return out;
}
// The main copy's snapshot first: it reads its own unread stacks, and only those.
const first = main.memorySnapshot();
const result = { mainFirst: tally(first), unreadAfterMain: first.history.stacksUnread };
copies.a.memorySnapshot();
copies.b.memorySnapshot();
const last = main.memorySnapshot();
result.all = tally(last);
result.unread = last.history.stacksUnread;
for (const m of held) m.free();
main.recordMemoryHistory({ enabled: false });
process.stdout.write(JSON.stringify(result));
`;

register('copies of the JS layer in vm contexts of one thread each record their own stacks, never another copy\'s', (t) => {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const r = spawnSync(process.execPath, ['-e', REALMS, root], { encoding: 'utf8', timeout: 120_000 });
  t.is(r.status, 0, r.stderr);
  const result = JSON.parse(r.stdout);
  t.deepEqual(result.mainFirst, { main: { main: 1000 }, a: { none: 1000 }, b: { none: 1000 } }, "the main copy's snapshot names its stacks and leaves the others' unread");
  t.is(result.unreadAfterMain, 4000, 'the 2000 live blocks of the other copies and their 2000 events, counted unread');
  t.deepEqual(result.all, { main: { main: 1000 }, a: { a: 1000 }, b: { b: 1000 } }, 'once each copy read its own, every block names its own call site');
  t.is(result.unread, 0);
});
