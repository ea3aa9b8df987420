// Kernel done to JS awake: the same small kernel, then JS woken by
//   - the submitAsync Promise (the peer: a completion callback, the completion thread, a
//     threadsafe call into JS, the Promise's reaction), against
//   - queue.writeValue after it and the value watched on mem.sharedBuffer with
//     Atomics.waitAsync in 1 ms slices (a device write notifies no waiter), and
//   - the same value watched by spinning on Atomics.load (this thread busy meanwhile).
// Each case is a round trip (submit, wait, awake) of one kernel at a time; the cases
// alternate batch by batch in one process, on the CPU device and on a CUDA GPU where
// present, on an out-of-order and an in-order queue. Figures: median us per round trip,
// and ratio = the Promise's time / the case's (above 1: faster than the Promise).
// Needs a Node with external SharedArrayBuffers (22.23.5, 24.16, 26.1 and later) for the
// waitAsync rows; the spin rows read mem.buffer and run on any Node.
//
//   node bench/progress.js [--rounds N]
'use strict';
const addon = require('../index.js');

const { SyclQueue, MemoryUSMHost, MemoryUSMShared, createProgramFromSource, createProgramFromPtx, kernelArg, getDevices } = addon;
const argRounds = process.argv.indexOf('--rounds');
const ROUNDS = argRounds > 0 ? Number(process.argv[argRounds + 1]) : 300;
const BATCHES = 5;
const N = 1024;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const OPENCL = `__kernel void bump(__global float *out, float v) { out[get_global_id(0)] = v; }`;
const PTX = require('node:fs').readFileSync(require('node:path').join(__dirname, '..', '__test__', 'fixtures', 'kernels', 'saxpy.ptx'), 'utf8');

function kernelFor(queue, device) {
  if (device.backend === 'cuda') {
    const saxpy = createProgramFromPtx(queue, PTX).getKernel('saxpy');
    return (out, v) => [saxpy, [out, out, kernelArg.float32(v), kernelArg.uint32(N)]];
  }
  const bump = createProgramFromSource(queue, OPENCL).getKernel('bump');
  return (out, v) => [bump, [out, kernelArg.float32(v)]];
}

function sharedView(mem) {
  try {
    return new Int32Array(mem.sharedBuffer);
  } catch {
    return undefined;
  }
}

async function section(device, property) {
  const queue = property ? new SyclQueue(device, { property }) : new SyclQueue(device);
  const launch = kernelFor(queue, device);
  const out = new MemoryUSMShared(N * 4, { queue });
  const flag = new MemoryUSMHost(8, { queue });
  flag.memset(0);
  const shared = sharedView(flag);
  const plain = new Int32Array(flag.buffer);
  let value = 0;
  const keepAlive = setInterval(() => {}, 1 << 30);
  const cases = {
    async promise() {
      const [k, args] = launch(out, 1);
      await queue.submitAsync(k, args, N);
    },
    async waitAsync() {
      const [k, args] = launch(out, 1);
      queue.submitAsync(k, args, N);
      value += 1;
      queue.writeValue(flag, value);
      for (;;) {
        const seen = Atomics.load(shared, 0);
        if (seen >= value) return;
        const waited = Atomics.waitAsync(shared, 0, seen, 1);
        if (waited.async) await waited.value;
      }
    },
    async spin() {
      const [k, args] = launch(out, 1);
      queue.submitAsync(k, args, N);
      value += 1;
      queue.writeValue(flag, value);
      while (Atomics.load(plain, 0) < value);
    },
  };
  if (!shared) delete cases.waitAsync;
  const times = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
  try {
    for (let batch = -1; batch < BATCHES; batch++) {
      for (const [name, run] of Object.entries(cases)) {
        const rounds = batch < 0 ? Math.max(10, ROUNDS / 10) : ROUNDS;
        const start = process.hrtime.bigint();
        for (let i = 0; i < rounds; i++) await run();
        const ns = Number(process.hrtime.bigint() - start) / rounds;
        if (batch >= 0) times[name].push(ns);
        // Let the Promises of the unawaited submissions settle between batches.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  } finally {
    clearInterval(keepAlive);
  }
  const promise = median(times.promise);
  const label = `${device.filterString} ${property ?? 'out-of-order'}`;
  for (const name of Object.keys(cases)) {
    const us = median(times[name]) / 1000;
    const spreadUs = (Math.max(...times[name]) - Math.min(...times[name])) / 1000;
    console.log(`${label.padEnd(28)} ${name.padEnd(10)} ${us.toFixed(1).padStart(8)} us  (spread ${spreadUs.toFixed(1)})  ratio ${(promise / median(times[name])).toFixed(2)}`);
  }
  if (!shared) console.log(`${label.padEnd(28)} waitAsync  (Node ${process.version} has no mem.sharedBuffer: Node 22.23.5, 24.16, 26.1 and later)`);
  out.free();
  flag.free();
}

async function main() {
  console.log(`Node ${process.version}; ${ROUNDS} round trips x ${BATCHES} batches per case, median per round trip; ratio = promise / case`);
  const devices = getDevices().filter((d) => (d.backend === 'opencl' && d.deviceType === 'cpu') || d.backend === 'cuda');
  for (const device of devices) {
    for (const property of [undefined, 'in_order']) await section(device, property);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
