// Kernels on CUDA devices (the GPU suite, scripts/gpu-suite.sh, runs these on the H200;
// they skip visibly elsewhere): saxpy from the committed PTX fixture compared with JS,
// async submits with dependencies, operands held under free(), argument errors, and the
// PTX loader's error log. The fixture is hand-written PTX (fixtures/kernels/saxpy.ptx says
// how nvcc makes the same from saxpy.cu). CUDA C through NVRTC (the machine's toolkit, or
// the wheel install-runtime --with nvrtc fetches): saxpy, a 2-D stencil in dpctl's range
// order, dynamic shared memory, C++ names, the compiler's log; profiling queues.
import test from 'ava';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { addon, DEVICES, MemoryUSMDevice, MemoryUSMShared, MemoryUSMHost, SyclQueue } from './helpers/addon.mjs';
import { rssGrowthOver } from './helpers/rss.mjs';

const { createProgramFromPtx, createProgramFromCuda, createProgramFromSource, kernelArg, SyclProgramCompilationError } = addon;
const PTX = readFileSync(fileURLToPath(new URL('./fixtures/kernels/saxpy.ptx', import.meta.url)), 'utf8');
const CUDA_C = readFileSync(fileURLToPath(new URL('./fixtures/kernels/saxpy.cu', import.meta.url)), 'utf8');
const gpu = DEVICES.find((d) => d.backend === 'cuda');
const onGpu = gpu ? test : test.skip;
const title = (text) => (gpu ? `${text} [${gpu.filterString}]` : `${text} [no GPU: no device with backend 'cuda': skipped]`);

function floats(n, f) {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = f(i);
  return out;
}

onGpu(title('saxpy from PTX matches JS'), (t) => {
  const q = new SyclQueue(gpu);
  const program = createProgramFromPtx(q, PTX);
  t.deepEqual(program.kernelNames, ['saxpy', 'empty']);
  const saxpy = program.getKernel('saxpy');
  t.is(saxpy.numArgs, 4);
  t.true(saxpy.workGroupSize >= 32);
  const n = (1 << 20) + 3;
  const xs = floats(n, (i) => (i % 1000) * 0.25);
  const ys = floats(n, (i) => (i % 7) - 3);
  const x = new MemoryUSMDevice(n * 4, { queue: q });
  const y = new MemoryUSMDevice(n * 4, { queue: q });
  x.copyFromHost(xs);
  y.copyFromHost(ys);
  // Launch more threads than items, in blocks of 256: the kernel checks i < n.
  const threads = Math.ceil(n / 256) * 256;
  q.submit(saxpy, [y, x, kernelArg.float32(1.5), kernelArg.uint32(n)], [threads], [256]);
  const got = new Float32Array(y.copyToHost().buffer);
  const want = floats(n, (i) => Math.fround(Math.fround(1.5 * xs[i]) + ys[i]));
  let wrong = 0;
  for (let i = 0; i < n; i++) if (Math.abs(got[i] - want[i]) > 1e-5 * Math.max(1, Math.abs(want[i]))) wrong++;
  t.is(wrong, 0);
  x.free();
  y.free();
});

onGpu(title('submitAsync on CUDA: dependencies, operands held under free(), shared memory read back'), async (t) => {
  const q = new SyclQueue(gpu);
  const saxpy = createProgramFromPtx(q, PTX).getKernel('saxpy');
  const n = 1 << 16;
  const x = new MemoryUSMShared(n * 4, { queue: q });
  const y = new MemoryUSMShared(n * 4, { queue: q });
  new Float32Array(x.buffer).fill(2);
  new Float32Array(y.buffer).fill(1);
  const view = new Float32Array(y.buffer);
  const first = q.submitAsync(saxpy, [y, x, kernelArg.float32(3), kernelArg.uint32(n)], [n], [256]);
  const second = q.submitAsync(saxpy, [y, x, kernelArg.float32(3), kernelArg.uint32(n)], [n], [256], [first]);
  x.free();
  const event = await second;
  t.is(event.executionStatus, 'complete');
  t.true(view.every((v) => v === 13), 'y = 3*2 + (3*2 + 1)');
  y.free();
  const out = new MemoryUSMHost(64, { queue: q });
  await q.memsetAsync(out, 7);
  t.true(new Uint8Array(out.buffer).every((b) => b === 7));
  out.free();
});

onGpu(title('10^4 async submits settle, the pool and RSS come back'), async (t) => {
  const q = new SyclQueue(gpu);
  const saxpy = createProgramFromPtx(q, PTX).getKernel('saxpy');
  const before = addon.poolStats();
  const x = new MemoryUSMDevice(64, { queue: q });
  async function round() {
    const pending = [];
    for (let i = 0; i < 10000; i++) {
      const y = new MemoryUSMDevice(64, { queue: q });
      pending.push(q.submitAsync(saxpy, [y, x, kernelArg.float32(1), kernelArg.uint32(16)], [16]));
      y.free();
    }
    const events = await Promise.all(pending);
    t.true(events.every((e) => e.executionStatus === 'complete'));
  }
  const seen = await rssGrowthOver(round);
  t.log(`RSS over the base after each of 4 rounds of 10^4: ${seen.map((m) => m.toFixed(1)).join(', ')} MiB`);
  t.true(seen[3] < 24, `RSS grew by ${seen[3].toFixed(1)} MiB over 4 x 10^4 submissions (600 bytes each is 24 MiB)`);
  x.free();
  t.is(addon.poolStats().device.inUseBytes, before.device.inUseBytes, 'every allocation was let go');
});

onGpu(title('CUDA C through NVRTC: saxpy matches JS, the build log, C++ names'), (t) => {
  const q = new SyclQueue(gpu);
  const program = createProgramFromCuda(q, CUDA_C, { options: '--use_fast_math' });
  t.deepEqual([...program.kernelNames].sort(), ['empty', 'saxpy']);
  t.is(typeof program.buildLog, 'string');
  const saxpy = program.getKernel('saxpy');
  t.is(saxpy.numArgs, 4);
  t.deepEqual(saxpy.args.map((a) => a.typeName), ['.u64', '.u64', '.f32', '.u32']);
  const n = 100003;
  const xs = floats(n, (i) => (i % 101) * 0.5);
  const ys = floats(n, (i) => (i % 13) - 6);
  const x = new MemoryUSMDevice(n * 4, { queue: q });
  const y = new MemoryUSMDevice(n * 4, { queue: q });
  x.copyFromHost(xs);
  y.copyFromHost(ys);
  q.submit(saxpy, [y, x, kernelArg.float32(-2), kernelArg.uint32(n)], [Math.ceil(n / 128) * 128], [128]);
  const got = new Float32Array(y.copyToHost().buffer);
  let wrong = 0;
  for (let i = 0; i < n; i++) if (Math.abs(got[i] - Math.fround(Math.fround(-2 * xs[i]) + ys[i])) > 1e-5 * Math.max(1, Math.abs(ys[i]))) wrong++;
  t.is(wrong, 0);
  // A C++ kernel (no extern "C") is found by its plain name; its entry is the mangled one.
  const cpp = createProgramFromCuda(q, '__global__ void twice(float *v) { v[threadIdx.x] *= 2.0f; }');
  t.true(cpp.kernelNames[0].startsWith('_Z5twice'), cpp.kernelNames[0]);
  t.true(cpp.hasKernel('twice'));
  q.submit(cpp.getKernel('twice'), [y], [4], [4]);
  t.is(new Float32Array(y.copyToHost().buffer)[1], 2 * got[1]);
  const err = t.throws(() => createProgramFromCuda(q, '__global__ void broken(float *v) { v[0] = undefined_name; }'), {
    instanceOf: SyclProgramCompilationError,
  });
  t.is(err.code, 'ERR_PROGRAM_COMPILATION');
  t.regex(err.log, /undefined_name/);
  t.regex(err.message, /undefined_name/);
  t.throws(() => createProgramFromCuda(q, CUDA_C, { options: '--no-such-option' }), { instanceOf: SyclProgramCompilationError });
  x.free();
  y.free();
});

onGpu(title('a 2-D stencil in CUDA C: ranges in dpctl\'s order, the last dimension CUDA\'s x'), (t) => {
  const q = new SyclQueue(gpu);
  const stencil = createProgramFromCuda(q, `
    extern "C" __global__ void stencil2d(float *out, const float *in, int width, int height) {
      int x = blockIdx.x * blockDim.x + threadIdx.x;
      int y = blockIdx.y * blockDim.y + threadIdx.y;
      if (x >= width || y >= height) return;
      int i = y * width + x;
      if (x == 0 || y == 0 || x == width - 1 || y == height - 1) out[i] = in[i];
      else out[i] = 0.5f * in[i] + 0.125f * (in[i - 1] + in[i + 1] + in[i - width] + in[i + width]);
    }`).getKernel('stencil2d');
  const [w, h] = [96, 40];
  const grid = floats(w * h, (i) => Math.cos(i) * 4);
  const input = new MemoryUSMDevice(w * h * 4, { queue: q });
  const output = new MemoryUSMShared(w * h * 4, { queue: q });
  input.copyFromHost(grid);
  q.submit(stencil, [output, input, kernelArg.int32(w), kernelArg.int32(h)], [h, w], [8, 32]);
  const got = new Float32Array(output.buffer);
  let wrong = 0;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const i = y * w + x;
      const edge = x === 0 || y === 0 || x === w - 1 || y === h - 1;
      const around = Math.fround(Math.fround(Math.fround(grid[i - 1] + grid[i + 1]) + grid[i - w]) + grid[i + w]);
      const want = edge ? grid[i] : Math.fround(Math.fround(0.5 * grid[i]) + Math.fround(0.125 * around));
      if (Math.abs(got[i] - want) > 1e-5 * Math.max(1, Math.abs(want))) wrong++;
    }
  }
  t.is(wrong, 0);
  input.free();
  output.free();
});

onGpu(title('dynamic shared memory: kernelArg.local after the parameters'), (t) => {
  const q = new SyclQueue(gpu);
  const sum = createProgramFromCuda(q, `
    extern "C" __global__ void group_sum(long long *out, long long bias) {
      extern __shared__ long long scratch[];
      scratch[threadIdx.x] = blockIdx.x * blockDim.x + threadIdx.x;
      __syncthreads();
      if (threadIdx.x == 0) {
        long long total = bias;
        for (unsigned i = 0; i < blockDim.x; i++) total += scratch[i];
        out[blockIdx.x] = total;
      }
    }`).getKernel('group_sum');
  t.is(sum.numArgs, 2);
  const [groups, size] = [6, 128];
  const out = new MemoryUSMShared(groups * 8, { queue: q });
  q.submit(sum, [out, kernelArg.int64(1000n), kernelArg.local(size * 8)], [groups * size], [size]);
  const got = new BigInt64Array(out.buffer);
  for (let g = 0; g < groups; g++) {
    let want = 1000n;
    for (let i = 0; i < size; i++) want += BigInt(g * size + i);
    t.is(got[g], want, `group ${g}`);
  }
  t.throws(() => q.submit(sum, [kernelArg.local(64), out, kernelArg.int64(0n)], [size], [size]), { code: 'ERR_KERNEL_ARG_COUNT' });
  t.throws(() => q.submit(sum, [out, kernelArg.local(64)], [size], [size]), { code: 'ERR_KERNEL_ARG_TYPE' });
  // Local memory beyond the device's is refused before the driver sees it (issue 39 #4).
  t.throws(() => q.submit(sum, [out, kernelArg.int64(0n), kernelArg.local(2 ** 30)], [size], [size]), { instanceOf: RangeError, code: 'ERR_INVALID_SIZE' });
  out.free();
});

onGpu(title('CUDA queue properties: profiling timestamps through cuEventElapsedTime'), async (t) => {
  const plain = new SyclQueue(gpu);
  t.false(plain.hasEnableProfiling);
  const q = new SyclQueue(gpu, { property: ['in_order', 'enable_profiling'] });
  t.true(q.isInOrder);
  t.true(q.hasEnableProfiling);
  const saxpy = createProgramFromPtx(q, PTX).getKernel('saxpy');
  const n = 1 << 22;
  const x = new MemoryUSMDevice(n * 4, { queue: q });
  const y = new MemoryUSMDevice(n * 4, { queue: q });
  const first = q.submit(saxpy, [y, x, kernelArg.float32(1), kernelArg.uint32(n)], [n], [256]);
  const second = await q.submitAsync(saxpy, [y, x, kernelArg.float32(1), kernelArg.uint32(n)], [n], [256], [first]);
  for (const event of [first, second, q.memcpy(y, x, n * 4)]) {
    const [s, b, e] = [event.profilingInfoSubmit, event.profilingInfoStart, event.profilingInfoEnd];
    t.is(typeof b, 'bigint');
    t.true(s <= b && b <= e, `submit ${s} <= start ${b} <= end ${e}`);
  }
  // In order on the stream (within the microsecond of cuEventElapsedTime's float).
  t.true(first.profilingInfoEnd <= second.profilingInfoStart + 1000n, 'the second started after the first ended');
  const unprofiled = plain.submit(createProgramFromPtx(plain, PTX).getKernel('empty'), [], [1]);
  t.throws(() => unprofiled.profilingInfoStart, { code: 'ERR_PROFILING_NOT_ENABLED' });
  x.free();
  y.free();
});

onGpu(title('PTX errors, argument errors and formats a CUDA device does not build'), (t) => {
  const q = new SyclQueue(gpu);
  const err = t.throws(() => createProgramFromPtx(q, '.version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k() { bogus; }'), {
    instanceOf: SyclProgramCompilationError,
  });
  t.is(err.code, 'ERR_PROGRAM_COMPILATION');
  t.is(typeof err.log, 'string');
  const saxpy = createProgramFromPtx(q, PTX).getKernel('saxpy');
  const y = new MemoryUSMDevice(64, { queue: q });
  t.throws(() => q.submit(saxpy, [y, y, kernelArg.float32(1)], [16]), { code: 'ERR_KERNEL_ARG_COUNT' });
  t.throws(() => q.submit(saxpy, [y, y, kernelArg.float64(1), kernelArg.uint32(16)], [16]), { code: 'ERR_KERNEL_ARG_TYPE' });
  t.throws(() => q.submit(saxpy, [y, y, kernelArg.float32(1), kernelArg.uint32(16)], [16], [2048]), { code: 'ERR_INVALID_RANGE' });
  t.throws(() => createProgramFromSource(q, '__kernel void k() {}'), { code: 'ERR_PROGRAMS_UNSUPPORTED' });
  y.free();
});

onGpu(title('fills of 1, 2, 4, 8 and 16-byte patterns at aligned and unaligned addresses match JS'), async (t) => {
  const q = new SyclQueue(gpu);
  const n = 4096;
  const base = new MemoryUSMDevice(n + 16, { queue: q });
  // A view of `nbytes` at `offset` into base: the queue's operations take any memory.
  const at = (offset, nbytes) => ({
    __sycl_usm_array_interface__: { data: [base.pointer + BigInt(offset), false], shape: [nbytes], typestr: '|u1', version: 1, syclobj: q },
  });
  // Each pattern with its bytes as the host writes them (little-endian).
  const le = (size, write) => {
    const bytes = new Uint8Array(size);
    write(new DataView(bytes.buffer));
    return bytes;
  };
  const patterns = [
    [kernelArg.uint8(0x5a), le(1, (v) => v.setUint8(0, 0x5a))],
    [kernelArg.uint16(0xabcd), le(2, (v) => v.setUint16(0, 0xabcd, true))],
    [kernelArg.uint16(0x0707), le(2, (v) => v.setUint16(0, 0x0707, true))],
    [kernelArg.uint32(0xdeadbeef), le(4, (v) => v.setUint32(0, 0xdeadbeef, true))],
    [kernelArg.float32(0), le(4, (v) => v.setFloat32(0, 0, true))],
    [kernelArg.int32(0x01020102), le(4, (v) => v.setInt32(0, 0x01020102, true))],
    [kernelArg.float64(1.5), le(8, (v) => v.setFloat64(0, 1.5, true))],
    [kernelArg.uint64(0x0102030401020304n), le(8, (v) => v.setBigUint64(0, 0x0102030401020304n, true))],
    [kernelArg.int64(-2n), le(8, (v) => v.setBigInt64(0, -2n, true))],
    // One element's bytes: complex128 (16 bytes) and a 2-byte DataView.
    [new Float64Array([1.5, -2]), le(16, (v) => { v.setFloat64(0, 1.5, true); v.setFloat64(8, -2, true); })],
    [new DataView(new Uint8Array([1, 2]).buffer), new Uint8Array([1, 2])],
  ];
  for (const [pattern, bytes] of patterns) {
    const size = bytes.length;
    for (const offset of [0, 1, 2, 4, 8]) {
      // Within the n + 16 bytes of base, whatever the pattern's size.
      const count = Math.min(333, Math.floor(n / size));
      base.memset(0xee);
      if (offset % 2 === 0) q.fill(at(offset, count * size), pattern, count);
      else await q.fillAsync(at(offset, count * size), pattern, count);
      const got = new Uint8Array(base.copyToHost().buffer);
      const want = new Uint8Array(n + 16).fill(0xee);
      for (let i = 0; i < count * size; i++) want[offset + i] = bytes[i % size];
      let wrong = -1;
      for (let i = 0; i < want.length && wrong < 0; i++) if (got[i] !== want[i]) wrong = i;
      t.is(wrong, -1, `${pattern.type ?? pattern.constructor.name} ${pattern.value ?? size} at offset ${offset}: byte ${wrong} is ${got[wrong]}, not ${want[wrong]}`);
    }
  }
  base.free();
});

// queue.writeValue on CUDA: cuStreamWriteValue32/64 into host memory (cuMemHostAlloc), a
// one-element memset into managed memory (which stream memory operations do not take).
// Each value is read with Atomics.load from the memory's buffer (every Node), and each
// kernel before it on the stream had written its output when it was seen.
onGpu(title('writeValue on CUDA: a counter in host and shared memory advanced after each kernel, 32 and 64 bits'), async (t) => {
  const q = new SyclQueue(gpu);
  const saxpy = createProgramFromPtx(q, PTX).getKernel('saxpy');
  const n = 1 << 22;
  const x = new MemoryUSMDevice(n * 4, { queue: q });
  x.copyFromHost(new Float32Array(n).fill(1));
  for (const Kind of [MemoryUSMHost, MemoryUSMShared]) {
    const ys = [0, 1, 2].map(() => new MemoryUSMShared(n * 4, { queue: q }));
    const counter = new Kind(16, { queue: q });
    counter.memset(0);
    for (const y of ys) y.memset(0);
    const words = new Int32Array(counter.buffer);
    const wide = new BigInt64Array(counter.buffer);
    for (let k = 0; k < 3; k++) {
      // y = (k + 1) * 1 + 0
      q.submitAsync(saxpy, [ys[k], x, kernelArg.float32(k + 1), kernelArg.uint32(n)], [n], [256]);
      q.writeValue(counter, k + 1);
      q.writeValue(counter, 2n ** 40n + BigInt(k + 1), { offset: 8 });
    }
    const guard = Date.now() + 120_000;
    let seen = 0;
    while (seen < 3 && Date.now() < guard) {
      const now = Atomics.load(words, 0);
      if (now !== seen) {
        for (let j = 0; j < now; j++) {
          const view = new Float32Array(ys[j].buffer);
          t.true(view[0] === j + 1 && view[n - 1] === j + 1, `${Kind.name}: kernel ${j} complete at counter ${now}`);
        }
        seen = now;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    t.is(seen, 3, `${Kind.name}: the counter reached 3`);
    q.submitBarrier().wait();
    t.is(Atomics.load(wide, 1), 2n ** 40n + 3n, `${Kind.name}: the 64-bit value`);
    for (const y of ys) y.free();
    counter.free();
  }
  x.free();
});
