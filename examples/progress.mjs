// Waiting on GPU progress with Atomics (README "Waiting on GPU progress", docs/sharing.md): three
// kernels, each followed by queue.writeValue(counter, k), and the main thread awake as
// each value lands, with no Promise per kernel. Runs as written on the CPU device:
//   node examples/progress.mjs [filter]
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { SyclQueue, MemoryUSMHost, MemoryUSMShared, createProgramFromSource, kernelArg, ErrorCode } = require('../index.js');

const queue = new SyclQueue(process.argv[2] ?? 'opencl:cpu');
const kernel = createProgramFromSource(queue, `
  __kernel void stage(__global float *out, uint rounds, float value) {
    float x = 0.0f;
    for (uint r = 0; r < rounds; r++) x = x * 0.5f + 1.0f;   // some work
    out[get_global_id(0)] = (x < 0.0f) ? 0.0f : value;
  }`).getKernel('stage');

// A view of the counter that any thread can watch: the shared buffer where this Node has
// external SharedArrayBuffers (22.23.5, 24.16, 26.1 and later), else this thread's buffer.
function counterView(mem) {
  try {
    return new Int32Array(mem.sharedBuffer);
  } catch (error) {
    if (error.code !== ErrorCode.SharedBufferUnsupported) throw error;
    return new Int32Array(mem.buffer);
  }
}

// Resolves once view[index] >= target. A device write notifies no waiter, so the wait is
// in slices of `sliceMs`; a pending Atomics.waitAsync does not keep Node's event loop
// alive, so a timer does. Without a shared buffer, Atomics.load between event-loop turns.
async function waitForValue(view, index, target, sliceMs = 1) {
  const keepAlive = setInterval(() => {}, 1 << 30);
  try {
    for (;;) {
      const seen = Atomics.load(view, index);
      if (seen >= target) return seen;
      if (view.buffer instanceof SharedArrayBuffer) {
        const waited = Atomics.waitAsync(view, index, seen, sliceMs);
        if (waited.async) await waited.value;
      } else {
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  } finally {
    clearInterval(keepAlive);
  }
}

const n = 1 << 16;
const outs = [1, 2, 3].map(() => new MemoryUSMShared(n * 4, { queue }));
const counter = new MemoryUSMHost(4, { queue });
counter.memset(0);
const view = counterView(counter);

for (let k = 1; k <= 3; k++) {
  queue.submitAsync(kernel, [outs[k - 1], kernelArg.uint32(20000), kernelArg.float32(k)], n);
  queue.writeValue(counter, k); // lands once the kernel before it finished
}
for (let k = 1; k <= 3; k++) {
  const seen = await waitForValue(view, 0, k);
  const out = new Float32Array(outs[k - 1].buffer);
  console.log(JSON.stringify({ counter: seen, kernel: k, complete: out.every((v) => v === k) }));
}
for (const out of outs) out.free();
counter.free();
