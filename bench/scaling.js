#!/usr/bin/env node
// How costs grow with live allocations: alloc+free of 4 KiB, asUsmMemory of an interface
// view into one of the live allocations (then freed), and a 4 KiB copyFromHost, each with
// 10^2, 10^4 and 10^6 other allocations live (64-byte device allocations, each a memory
// object of its own). Target: each grows at most 1.5x from the fewest to the most live
// (the pool's address book and every lookup on the way are logarithmic or constant, no
// scan). Rounds go up and down through the counts, so that a change of the machine's load
// over the run falls on every count alike. Each figure is the median over all rounds of
// the wall time and of the process's CPU time per call (process.cpuUsage, all threads).
//
//   node --expose-gc bench/scaling.js   (BENCH_QUICK=1: fewer repeats and rounds)
//   SCALING_COUNTS=100,10000 node --expose-gc bench/scaling.js   other counts
//   DPCTL_BENCH_DEVICE=cuda:gpu:0 ...   another device (default: the default device)
//   DPCTL_MEMORY_INDEX=/other/index.js ...  measures another build
'use strict';
const addon = require(process.env.DPCTL_MEMORY_INDEX || '../index.js');
const { median, spread } = require('./lib');
const { timing } = require('./config');

const COUNTS = process.env.SCALING_COUNTS ? process.env.SCALING_COUNTS.split(',').map(Number) : [100, 10_000, 1_000_000];
const TARGET = 1.5;
const SIZE = 4096;
const LIVE_SIZE = 64;

/** `{ wall, cpu }` ns per call of one batch of `calls` calls of `fn`. */
function batchOf(fn, calls) {
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) fn();
  const wall = Number(process.hrtime.bigint() - t0) / calls;
  const cpu = process.cpuUsage(cpu0);
  return { wall, cpu: ((cpu.user + cpu.system) * 1000) / calls };
}

/** Batches of `fn` (sized to about timing.batchTargetMs of wall time) after a warm-up batch. */
function samplesOf(fn) {
  let calls = 1;
  while (calls < timing.maxBatch) {
    const { wall } = batchOf(fn, calls);
    if (wall * calls >= timing.batchTargetMs * 1e6) break;
    calls = Math.min(timing.maxBatch, calls * 4);
  }
  batchOf(fn, calls);
  const out = [];
  for (let i = 0; i < timing.repeats; i++) out.push(batchOf(fn, calls));
  return out;
}

/** The interface of `nbytes` at `offset` into `memory`, as another library would export it. */
function interfaceInto(memory, offset, nbytes, queue) {
  return {
    __sycl_usm_array_interface__: {
      data: [memory.pointer + BigInt(offset), false],
      shape: [nbytes],
      strides: null,
      typestr: '|u1',
      version: 1,
      syclobj: queue,
    },
  };
}

function main() {
  const filter = process.env.DPCTL_BENCH_DEVICE;
  const queue = filter ? new addon.SyclQueue(filter) : new addon.SyclQueue();
  const device = queue.syclDevice;
  const opts = { queue };
  console.log(`device ${device.filterString} (${device.name}); live allocations: ${COUNTS.join(', ')} of ${LIVE_SIZE} B device memory`);
  const samples = new Map();
  const add = (group, count, xs) => {
    const key = `${group}\u0000${count}`;
    samples.set(key, [...(samples.get(key) ?? []), ...xs]);
  };

  const target = new addon.MemoryUSMDevice(SIZE, opts);
  const source = new Uint8Array(SIZE).fill(3);
  target.copyFromHost(source);
  const live = [];
  const rounds = timing.repeats >= 10 ? 2 : 1;
  const order = [];
  for (let round = 0; round < rounds; round++) order.push(...(round % 2 === 0 ? COUNTS : [...COUNTS].reverse()));
  // Warm-up, not timed: the first figures would also carry the engine's compilation.
  {
    while (live.length < COUNTS[0]) live.push(new addon.MemoryUSMDevice(LIVE_SIZE, opts));
    const iface = interfaceInto(live[0], 16, 32, queue);
    samplesOf(() => new addon.MemoryUSMHost(SIZE, opts).free());
    samplesOf(() => addon.asUsmMemory(iface).free());
    samplesOf(() => target.copyFromHost(source));
  }
  for (const count of order) {
    while (live.length < count) live.push(new addon.MemoryUSMDevice(LIVE_SIZE, opts));
    while (live.length > count) live.pop().free();
    if (global.gc) global.gc();
    // The view points into a live allocation from the middle of the book, not the newest.
    const inner = live[live.length >> 1];
    const iface = interfaceInto(inner, 16, 32, queue);
    add('alloc', count, samplesOf(() => new addon.MemoryUSMHost(SIZE, opts).free()));
    add('view', count, samplesOf(() => addon.asUsmMemory(iface).free()));
    add('copy', count, samplesOf(() => target.copyFromHost(source)));
    process.stdout.write(`  ${count} live: measured\n`);
  }
  while (live.length > 0) live.pop().free();
  const back = target.copyToHost();
  target.free();
  if (back[0] !== 3 || back[SIZE - 1] !== 3) throw new Error('the 4 KiB copy did not arrive');

  const groups = [
    ['alloc', `new MemoryUSMHost(${SIZE}).free()`],
    ['view', 'asUsmMemory(interface into a live allocation).free()'],
    ['copy', `copyFromHost ${SIZE} B`],
  ];
  const us = (ns) => (ns / 1000).toFixed(3).padStart(9);
  console.log('');
  console.log(`${'case'.padEnd(56)} ${'live'.padStart(9)} ${'wall us'.padStart(9)} ${'cpu us'.padStart(9)} ${'spread'.padStart(7)}`);
  let met = true;
  const rows = [];
  for (const [group, label] of groups) {
    const figures = COUNTS.map((count) => {
      const xs = samples.get(`${group}\u0000${count}`);
      return { count, wall: median(xs.map((x) => x.wall)), cpu: median(xs.map((x) => x.cpu)), spread: spread(xs.map((x) => x.wall)) };
    });
    for (const f of figures) {
      console.log(`${label.padEnd(56)} ${String(f.count).padStart(9)} ${us(f.wall)} ${us(f.cpu)} ${`${(f.spread * 100).toFixed(0)}%`.padStart(7)}`);
    }
    // Growth: the figure with the most live over the one with the fewest.
    const first = figures[0];
    const last = figures[figures.length - 1];
    const growth = { wall: last.wall / first.wall, cpu: last.cpu / first.cpu };
    met &&= growth.cpu <= TARGET;
    rows.push({ group, label, figures, growth });
  }
  console.log('');
  const verdict = (ratio) => `${ratio.toFixed(2)}x ${ratio <= TARGET ? 'met' : 'NOT met'}`;
  for (const { label, growth } of rows) {
    console.log(`${label.padEnd(56)} ${COUNTS[COUNTS.length - 1]} / ${COUNTS[0]} live (target <= ${TARGET}x): cpu ${verdict(growth.cpu)}; wall ${verdict(growth.wall)}`);
  }
  if (process.env.BENCH_STRICT === '1' && !met) process.exitCode = 1;
  return { rows, met };
}

main();
