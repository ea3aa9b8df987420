#!/usr/bin/env node
// Costs that must not grow with what is live: a 64-byte copyFromHost and a registerHost +
// unregister() with 10^0, 10^3 and 10^5 live registrations of other buffers, and a 16 KiB
// copyFromHostAsync of a plain ArrayBuffer before and after a burst of 20,000 async copies
// (which leaves their scratch blocks idle). Target: at most 1.5x between the smallest and
// the largest figure of each group, measured in the same run. Each figure is given as wall
// time and as the process's CPU time per call (process.cpuUsage, all its threads): on a
// loaded machine the wall time of an awaited async copy measures the scheduler as much as
// the copy, and the CPU time does not.
//
//   node --expose-gc bench/registrations.js   (BENCH_QUICK=1 for fewer repeats)
//   DPCTL_MEMORY_INDEX=/other/index.js ...  measures another build (an older one, say)
'use strict';
const addon = require(process.env.DPCTL_MEMORY_INDEX || '../index.js');
const { median } = require('./lib');
const { timing } = require('./config');

// REG_COUNTS=1,1000 runs fewer (the O(n^2) registering of older builds never ends at 10^5).
const COUNTS = process.env.REG_COUNTS ? process.env.REG_COUNTS.split(',').map(Number) : [1, 1_000, 100_000];
const BURST = 20_000;
const ASYNC_BYTES = 16 * 1024;
const TARGET = 1.5;

/** `{ wall, cpu }` ns per call of one batch of `calls` calls of `fn` (awaited when async). */
async function batchOf(fn, calls) {
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    const pending = fn();
    if (pending) await pending;
  }
  const wall = Number(process.hrtime.bigint() - t0) / calls;
  const cpu = process.cpuUsage(cpu0);
  return { wall, cpu: ((cpu.user + cpu.system) * 1000) / calls };
}

/** Batches of `fn` (sized to about timing.batchTargetMs of wall time) after a warm-up. */
async function samplesOf(fn) {
  let calls = 1;
  while (calls < timing.maxBatch) {
    const { wall } = await batchOf(fn, calls);
    if (wall * calls >= timing.batchTargetMs * 1e6) break;
    calls = Math.min(timing.maxBatch, calls * 4);
  }
  await batchOf(fn, calls);
  const out = [];
  for (let i = 0; i < timing.repeats; i++) out.push(await batchOf(fn, calls));
  return out;
}

/** Lets the garbage of a burst (20,000 settled Promises) go before timing, where it can. */
async function settle() {
  if (global.gc) global.gc();
  await new Promise((resolve) => setTimeout(resolve, 50));
}

async function main() {
  const queue = new addon.SyclQueue();
  const device = queue.syclDevice;
  console.log(`device ${device.filterString} (${device.name}); median per call over all rounds`);
  const samples = new Map();
  const add = (group, name, xs) => {
    const key = `${group}\u0000${name}`;
    samples.set(key, [...(samples.get(key) ?? []), ...xs]);
  };

  // Rounds of 1, 10^3 and 10^5 live registrations (added, then taken away again), so that
  // a change of the machine's load over the run falls on every count alike.
  const dev = new addon.MemoryUSMDevice(64, { queue });
  const host = new Uint8Array(64).fill(1);
  const spare = new ArrayBuffer(64);
  addon.registerHost(spare, { queue }).unregister(); // the runtime's first answer, cached
  const live = [];
  const rounds = timing.repeats >= 10 ? 4 : 2;
  for (let round = 0; round < rounds; round++) {
    for (const count of COUNTS) {
      while (live.length < count) live.push(addon.registerHost(new ArrayBuffer(64), { queue }));
      add('copy', `copyFromHost 64 B with ${count} live registrations`, await samplesOf(() => dev.copyFromHost(host)));
      add(
        'register',
        `registerHost + unregister() of 64 B with ${count} live registrations`,
        await samplesOf(() => addon.registerHost(spare, { queue }).unregister()),
      );
    }
    while (live.length > 0) live.pop().unregister();
  }
  dev.free();

  // Async copies of a plain ArrayBuffer with no idle scratch (after poolTrim()), and
  // after a burst of 20,000 (whose blocks come back idle at once), in alternating rounds.
  const into = new addon.MemoryUSMDevice(ASYNC_BYTES, { queue });
  const source = new Uint8Array(ASYNC_BYTES).fill(2);
  let idle = 0;
  // Warm-up, not timed: one burst, so that the first timed figure does not also carry
  // the engine's and the thread pool's first use of async copies.
  await Promise.all(Array.from({ length: BURST }, () => into.copyFromHostAsync(source)));
  for (let round = 0; round < rounds; round++) {
    addon.poolTrim();
    await settle();
    add('async', 'copyFromHostAsync 16 KiB, no idle scratch', await samplesOf(() => into.copyFromHostAsync(source)));
    const burst = [];
    for (let i = 0; i < BURST; i++) burst.push(into.copyFromHostAsync(source));
    await Promise.all(burst);
    burst.length = 0;
    idle = addon.poolStats().scratch.blocks;
    await settle();
    add('async', `copyFromHostAsync 16 KiB, after a burst of ${BURST}`, await samplesOf(() => into.copyFromHostAsync(source)));
  }
  into.free();
  console.log(`(idle scratch blocks after a burst: ${idle})`);

  const rows = [...samples].map(([key, xs]) => {
    const [group, name] = key.split('\u0000');
    return { group, name, wall: median(xs.map((x) => x.wall)), cpu: median(xs.map((x) => x.cpu)) };
  });
  const us = (ns) => (ns / 1000).toFixed(3).padStart(10);
  console.log(`${'case'.padEnd(64)} ${'wall us'.padStart(10)} ${'cpu us'.padStart(10)}`);
  for (const { name, wall, cpu } of rows) console.log(`${name.padEnd(64)} ${us(wall)} ${us(cpu)}`);
  console.log('');
  let met = true;
  for (const group of ['copy', 'register', 'async']) {
    const of = (field) => {
      const figures = rows.filter((r) => r.group === group).map((r) => r[field]);
      return Math.max(...figures) / Math.min(...figures);
    };
    const [wall, cpu] = [of('wall'), of('cpu')];
    met &&= cpu <= TARGET;
    const verdict = (ratio) => `${ratio.toFixed(2)}x ${ratio <= TARGET ? 'met' : 'NOT met'}`;
    console.log(`${group.padEnd(10)} largest / smallest (target <= ${TARGET}x): cpu ${verdict(cpu)}; wall ${verdict(wall)}`);
  }
  return { rows, met };
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
