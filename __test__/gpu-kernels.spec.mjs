// Kernels on CUDA devices (the GPU suite, scripts/gpu-suite.sh, runs these on the H200;
// they skip visibly elsewhere): saxpy from the committed PTX fixture compared with JS,
// async submits with dependencies, operands held under free(), argument errors, and the
// PTX loader's error log. The fixture is hand-written PTX (fixtures/kernels/saxpy.ptx says
// how nvcc makes the same from saxpy.cu).
import test from 'ava';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { addon, DEVICES, MemoryUSMDevice, MemoryUSMShared, MemoryUSMHost, SyclQueue } from './helpers/addon.mjs';

const { createProgramFromPtx, createProgramFromCuda, createProgramFromSource, kernelArg, SyclProgramCompilationError } = addon;
const PTX = readFileSync(fileURLToPath(new URL('./fixtures/kernels/saxpy.ptx', import.meta.url)), 'utf8');
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

onGpu(title('10^4 async empty-kernel submits settle, the pool comes back'), async (t) => {
  const q = new SyclQueue(gpu);
  const program = createProgramFromPtx(q, PTX);
  const empty = program.getKernel('empty');
  const pending = [];
  for (let i = 0; i < 10000; i++) pending.push(q.submitAsync(empty, [], [1]));
  const events = await Promise.all(pending);
  t.true(events.every((e) => e.executionStatus === 'complete'));
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
  t.throws(() => createProgramFromCuda(q, 'extern "C" __global__ void k() {}'), { code: 'ERR_PROGRAMS_UNSUPPORTED' });
  y.free();
});
