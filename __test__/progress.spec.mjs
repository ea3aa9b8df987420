// queue.writeValue: a 32- or 64-bit value written into host or shared memory once the work
// before it on the queue is done, which JS threads watch with Atomics on mem.sharedBuffer
// (Node 22+) or read with Atomics.load from mem.buffer (every Node): no Promise and no JS
// callback per operation. Each test checks, at the moment the value is seen, that the
// kernels before it wrote all of their output. The CUDA path (cuStreamWriteValue) runs
// in gpu-kernels.spec.mjs where a CUDA device exists.
import test from 'ava';
import { Worker } from 'node:worker_threads';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setImmediate as tick } from 'node:timers/promises';
import { addon, DEVICES, MemoryUSMDevice, MemoryUSMHost, MemoryUSMShared, SyclQueue, nodeHasSharedBuffers } from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';

const { createProgramFromSource, kernelArg } = addon;

const cpu = DEVICES.find((d) => d.backend === 'opencl' && d.deviceType === 'cpu');
const onCpu = cpu ? test : test.skip;
const title = (text) => (cpu ? `${text} [${cpu.filterString}]` : `${text} [no OpenCL CPU device present: skipped]`);

const SHARED = nodeHasSharedBuffers();
const onCpuShared = cpu && SHARED ? test : test.skip;
const sharedTitle = (text) =>
  SHARED ? title(text) : `${text} [Node ${process.version} has no mem.sharedBuffer; Node 22.23.5, 24.16 and 26.1 and later have it: skipped]`;

// Each work item spins `rounds` times before it writes i + 1 (never the 0 the output starts
// as), so the kernel is still running when writeValue is submitted.
const SOURCE = `
__kernel void slow(__global float *out, uint rounds, float add) {
  size_t i = get_global_id(0);
  float x = (float)i;
  for (uint r = 0; r < rounds; r++) x = x * 0.999f + 1.0f;
  out[i] = (x == -1.0f) ? 0.0f : (float)(i + 1) + add;
}`;
const N = 1 << 14;
const ROUNDS = 4000;

let built;
function setup(properties) {
  const queue = properties ? new SyclQueue(cpu, { property: properties }) : new SyclQueue(cpu);
  built ??= createProgramFromSource(queue, SOURCE);
  // A program of the same context and device serves every queue here (the CPU device's one context).
  return { queue, kernel: built.getKernel('slow') };
}

/** How many of `out`'s N floats are not yet what the kernel writes (i + 1 + add). */
function unfinished(out, add = 0) {
  const view = new Float32Array(out.buffer, 0, N);
  let missing = 0;
  for (let i = 0; i < N; i++) if (view[i] !== i + 1 + add) missing += 1;
  return missing;
}

/** Waits, with Atomics.waitAsync in slices (a device write notifies no waiter), until
 * view[index] reaches `target`; a ref'd timer holds the event loop meanwhile, which a
 * pending Atomics.waitAsync does not. A hang guard, no timing verdict. */
async function waitAsyncFor(view, index, target) {
  const guard = Date.now() + 240_000;
  const keepAlive = setInterval(() => {}, 1 << 30);
  try {
    for (;;) {
      const seen = Atomics.load(view, index);
      if (seen >= target) return seen;
      if (Date.now() > guard) throw new Error(`view[${index}] stayed ${seen}, never ${target}`);
      const waited = Atomics.waitAsync(view, index, seen, 2);
      if (waited.async) await waited.value;
    }
  } finally {
    clearInterval(keepAlive);
  }
}

for (const property of [undefined, 'in_order']) {
  const kind = property ? 'an in-order queue' : 'an out-of-order queue';
  onCpuShared(sharedTitle(`on ${kind}, the value lands once the kernel before it finished, and Atomics.waitAsync sees it`), async (t) => {
    const { queue, kernel } = setup(property);
    const out = new MemoryUSMShared(N * 4, { queue });
    const flag = new MemoryUSMHost(8, { queue });
    out.memset(0);
    flag.memset(0);
    const view = new Int32Array(flag.sharedBuffer);
    const done = queue.submitAsync(kernel, [out, kernelArg.uint32(ROUNDS), kernelArg.float32(0)], N);
    const event = queue.writeValue(flag, 7, { offset: 4 });
    t.is(event.constructor.name, 'SyclEvent', 'an event at once, no Promise');
    t.is(await waitAsyncFor(view, 1, 7), 7);
    t.is(unfinished(out), 0, 'every work item had written its output when the value was seen');
    t.is(Atomics.load(view, 0), 0, 'nothing else was written');
    event.wait();
    await done;
    out.free();
    flag.free();
  });
}

onCpuShared(sharedTitle('a counter that three submissions advance: each value is seen after its kernel, in order'), async (t) => {
  const { queue, kernel } = setup();
  const outs = [0, 1, 2].map(() => new MemoryUSMShared(N * 4, { queue }));
  const counter = new MemoryUSMHost(4, { queue });
  counter.memset(0);
  const view = new Int32Array(counter.sharedBuffer);
  const settled = [];
  for (let k = 0; k < 3; k++) {
    outs[k].memset(0);
    settled.push(queue.submitAsync(kernel, [outs[k], kernelArg.uint32(ROUNDS), kernelArg.float32(k)], N));
    queue.writeValue(counter, k + 1);
  }
  for (let k = 0; k < 3; k++) {
    const seen = await waitAsyncFor(view, 0, k + 1);
    // Every kernel before the value seen had finished when it was seen.
    for (let j = 0; j < seen; j++) t.is(unfinished(outs[j], j), 0, `kernel ${j} complete at counter ${seen}`);
  }
  await Promise.all(settled);
  for (const out of outs) out.free();
  counter.free();
});

onCpuShared(sharedTitle('a worker blocked in Atomics.wait on the shared buffer wakes to the value and sees the finished output'), async (t) => {
  const { queue, kernel } = setup();
  const out = new MemoryUSMShared(N * 4, { queue });
  const flag = new MemoryUSMHost(4, { queue });
  out.memset(0);
  flag.memset(0);
  const worker = new Worker(`
    const { parentPort } = require('node:worker_threads');
    parentPort.once('message', ({ flag, out, n }) => {
      const view = new Int32Array(flag);
      // The device's write notifies no waiter: wait in slices, re-reading the value.
      while (Atomics.load(view, 0) === 0) Atomics.wait(view, 0, 0, 5);
      const floats = new Float32Array(out, 0, n);
      let missing = 0;
      for (let i = 0; i < n; i++) if (floats[i] !== i + 1) missing += 1;
      parentPort.postMessage({ value: Atomics.load(view, 0), missing });
    });`, { eval: true });
  const reported = new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  worker.postMessage({ flag: flag.sharedBuffer, out: out.sharedBuffer, n: N });
  const done = queue.submitAsync(kernel, [out, kernelArg.uint32(ROUNDS), kernelArg.float32(0)], N);
  queue.writeValue(flag, -1);
  t.deepEqual(await reported, { value: -1, missing: 0 }, 'a negative number is written as its 32-bit two\'s complement');
  await done;
  await worker.terminate();
  out.free();
  flag.free();
});

onCpuShared(sharedTitle('a bigint is written as 64 bits, which BigInt64Array and BigUint64Array read'), async (t) => {
  const { queue } = setup();
  const mem = new MemoryUSMShared(16, { queue });
  mem.memset(0);
  const signed = new BigInt64Array(mem.sharedBuffer);
  queue.writeValue(mem, 2n ** 40n + 5n, { offset: 8 }).wait();
  t.is(Atomics.load(signed, 1), 2n ** 40n + 5n);
  queue.writeValue(mem, -2n, { offset: 8 }).wait();
  t.is(Atomics.load(signed, 1), -2n);
  t.is(new BigUint64Array(mem.sharedBuffer)[1], 2n ** 64n - 2n);
  queue.writeValue(mem, 2n ** 64n - 1n).wait();
  t.is(Atomics.load(signed, 0), -1n);
  mem.free();
});

// Every Node (20 included): the plain buffer read with Atomics.load, polled between turns of
// the event loop.
onCpu(title('on every Node: the value read from mem.buffer with Atomics.load comes after the kernel\'s output'), async (t) => {
  const { queue, kernel } = setup();
  const out = new MemoryUSMShared(N * 4, { queue });
  const flag = new MemoryUSMShared(4, { queue });
  out.memset(0);
  flag.memset(0);
  const view = new Int32Array(flag.buffer);
  const done = queue.submitAsync(kernel, [out, kernelArg.uint32(ROUNDS), kernelArg.float32(0)], N);
  queue.writeValue(flag, 4294967295);
  const guard = Date.now() + 240_000;
  while (Atomics.load(view, 0) === 0 && Date.now() < guard) await tick();
  t.is(new Uint32Array(flag.buffer)[0], 4294967295, 'a number up to 2**32 - 1 is written as a uint32');
  t.is(unfinished(out), 0);
  await done;
  out.free();
  flag.free();
});

onCpu(title('dependsOn: a write on another queue lands after the event it depends on'), async (t) => {
  const { queue, kernel } = setup();
  const other = new SyclQueue(cpu);
  const out = new MemoryUSMShared(N * 4, { queue });
  const flag = new MemoryUSMShared(4, { queue });
  out.memset(0);
  flag.memset(0);
  const view = new Int32Array(flag.buffer);
  const done = queue.submitAsync(kernel, [out, kernelArg.uint32(ROUNDS), kernelArg.float32(0)], N);
  // `other` has nothing before the write: only the dependency orders it after the kernel.
  const event = other.writeValue(flag, 1, { dependsOn: [done] });
  const guard = Date.now() + 240_000;
  while (Atomics.load(view, 0) === 0 && Date.now() < guard) await tick();
  t.is(unfinished(out), 0, 'the kernel it depended on had finished');
  t.is(event.syclQueue, other);
  await done;
  out.free();
  flag.free();
});

onCpu(title('the memory is held until the write landed: free() right after it is safe'), async (t) => {
  const { queue, kernel } = setup();
  const out = new MemoryUSMShared(N * 4, { queue });
  const flag = new MemoryUSMHost(4, { queue });
  const done = queue.submitAsync(kernel, [out, kernelArg.uint32(ROUNDS), kernelArg.float32(0)], N);
  const event = queue.writeValue(flag, 3);
  flag.free();
  event.wait();
  t.is(event.executionStatus, 'complete');
  await done;
  out.free();
});

onCpu(title('bad writes are refused with coded errors before anything is queued'), (t) => {
  const { queue } = setup();
  const host = new MemoryUSMHost(16, { queue });
  const device = new MemoryUSMDevice(16, { queue });
  host.memset(0);
  throwsExactly(t, () => queue.writeValue(device, 1), Error, 'ERR_NOT_HOST_ACCESSIBLE');
  throwsExactly(t, () => queue.writeValue(host, 1, { offset: 2 }), RangeError, 'ERR_INVALID_ALIGNMENT');
  throwsExactly(t, () => queue.writeValue(host, 1n, { offset: 4 }), RangeError, 'ERR_INVALID_ALIGNMENT');
  throwsExactly(t, () => queue.writeValue(host, 1, { offset: 16 }), RangeError, 'ERR_INVALID_RANGE');
  throwsExactly(t, () => queue.writeValue(host, 1n, { offset: 16 }), RangeError, 'ERR_INVALID_RANGE');
  throwsExactly(t, () => queue.writeValue(host, 1, { offset: 2 ** 60 }), RangeError, 'ERR_INVALID_RANGE');
  for (const offset of [-4, 1.5, '4', Number.NaN]) throwsExactly(t, () => queue.writeValue(host, 1, { offset }), RangeError, 'ERR_INVALID_RANGE');
  for (const value of [1.5, 2 ** 32, -(2 ** 31) - 1, Number.NaN, Infinity, 2n ** 64n, -(2n ** 63n) - 1n]) {
    throwsExactly(t, () => queue.writeValue(host, value), RangeError, 'ERR_INVALID_FILL_VALUE');
  }
  for (const value of ['1', null, undefined, {}, kernelArg.uint32(1)]) throwsExactly(t, () => queue.writeValue(host, value), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => queue.writeValue(host, 1, { offset: 0, when: 1 }), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => queue.writeValue(host, 1, 4), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => queue.writeValue(new Uint8Array(16), 1), TypeError, 'ERR_NOT_USM');
  throwsExactly(t, () => queue.writeValue(host, 1, { dependsOn: [{}] }), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => SyclQueue.prototype.writeValue.call({}, host, 1), TypeError, 'ERR_INVALID_THIS');
  queue.submitBarrier().wait();
  t.deepEqual(Array.from(new Uint8Array(host.buffer)), new Array(16).fill(0), 'nothing was written');
  device.free();
  host.free();
  throwsExactly(t, () => queue.writeValue(host, 1), Error, 'ERR_USM_FREED');
});

const EXAMPLE = fileURLToPath(new URL('../examples/progress.mjs', import.meta.url));
const SHARING = fileURLToPath(new URL('../docs/sharing.md', import.meta.url));

test("docs/sharing.md's progress example is examples/progress.mjs's code, word for word", (t) => {
  const doc = readFileSync(SHARING, 'utf8');
  const at = doc.indexOf('**Waiting on GPU progress');
  t.true(at > 0, 'docs/sharing.md has the section');
  const block = /```js\n([\s\S]*?)\n\s*```/.exec(doc.slice(at))[1];
  const code = block.split('\n').map((line) => line.replace(/^ {2}/, '')).join('\n');
  const example = readFileSync(EXAMPLE, 'utf8');
  for (const part of code.split('\n\n')) t.true(example.includes(part), `the example has, as it is:\n${part}`);
});

onCpu(title('examples/progress.mjs runs as written: each counter value comes after its kernel'), (t) => {
  const child = spawnSync(process.execPath, [EXAMPLE, cpu?.filterString ?? 'opencl:cpu'], { encoding: 'utf8', timeout: 240_000 });
  t.is(child.status, 0, child.stderr);
  const lines = child.stdout.trim().split('\n').map((line) => JSON.parse(line));
  t.is(lines.length, 3);
  for (const [i, line] of lines.entries()) {
    t.is(line.kernel, i + 1);
    t.true(line.counter >= i + 1);
    t.true(line.complete, `kernel ${i + 1} had finished when the counter said ${line.counter}`);
  }
});

onCpu(title('a worker that ends with writes in flight waits for them: the process exits cleanly'), (t) => {
  const index = fileURLToPath(new URL('../index.js', import.meta.url));
  const script = `
    const { Worker } = require('node:worker_threads');
    const code = ${JSON.stringify(`
      const { SyclQueue, MemoryUSMHost, MemoryUSMShared, createProgramFromSource, kernelArg } = require(${JSON.stringify(index)});
      const queue = new SyclQueue(${JSON.stringify(cpu?.filterString ?? 'opencl:cpu')});
      const kernel = createProgramFromSource(queue, ${JSON.stringify(SOURCE)}).getKernel('slow');
      const out = new MemoryUSMShared(${N * 4}, { queue });
      const flag = new MemoryUSMHost(4, { queue });
      queue.submitAsync(kernel, [out, kernelArg.uint32(${ROUNDS}), kernelArg.float32(0)], ${N});
      for (let i = 1; i <= 20; i++) queue.writeValue(flag, i);
      flag.free();
      out.free();
      process.exit(0);`)};
    const worker = new Worker(code, { eval: true });
    worker.on('error', (e) => { console.error(e); process.exitCode = 3; });
    worker.on('exit', (code) => console.log('worker exit ' + code));`;
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 240_000 });
  t.is(child.status, 0, child.stderr);
  t.is(child.stdout.trim(), 'worker exit 0');
});
