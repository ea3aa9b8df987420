// Kernels on the OpenCL CPU device: programs from OpenCL C and SPIR-V, kernels and their
// facts, submissions (sync and async, 1-3 dimensions, local memory, typed scalars),
// events, dependencies, profiling, the queue's own operations, every argument error
// coded, and operands held until the kernel finished. Results are read through views of
// shared memory and compared with the same computation in JS.
import test from 'ava';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setImmediate as tick } from 'node:timers/promises';
import { spawnSync } from 'node:child_process';
import { addon, DEVICES, MemoryUSMDevice, MemoryUSMShared, MemoryUSMHost, SyclQueue } from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';
import { gc, rssGrowthOver } from './helpers/rss.mjs';

const {
  createProgramFromSource, createProgramFromSpirv, createProgramFromPtx, kernelArg, SyclProgram, SyclKernel, SyclEvent,
  SyclProgramCompilationError, ErrorCode,
} = addon;

const FIXTURES = fileURLToPath(new URL('./fixtures/kernels/', import.meta.url));
const SOURCE = readFileSync(`${FIXTURES}kernels.cl`, 'utf8');
const SPIRV = readFileSync(`${FIXTURES}kernels.spv`);

const cpu = DEVICES.find((d) => d.backend === 'opencl' && d.deviceType === 'cpu');
const onCpu = cpu ? test : test.skip;
// Serial tests run before the concurrent ones: the pool figures they compare are the process's.
const onCpuSerial = cpu ? test.serial : test.skip;
const title = (text) => (cpu ? `${text} [${cpu.filterString}]` : `${text} [no OpenCL CPU device present: skipped]`);

let shared;
function setup() {
  if (!shared) {
    const queue = new SyclQueue(cpu);
    shared = { queue, program: createProgramFromSource(queue, SOURCE) };
  }
  return shared;
}

function floats(n, f) {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = f(i);
  return out;
}

function saxpyCase(queue, program, n, a) {
  const kernel = program.getKernel('saxpy');
  const x = new MemoryUSMShared(n * 4, { queue });
  const y = new MemoryUSMShared(n * 4, { queue });
  const xs = floats(n, (i) => i * 0.5 - 3);
  const ys = floats(n, (i) => (i % 17) - 8);
  new Float32Array(x.buffer).set(xs);
  new Float32Array(y.buffer).set(ys);
  const expected = floats(n, (i) => Math.fround(Math.fround(a * xs[i]) + ys[i]));
  return { kernel, x, y, expected };
}

onCpu(title('saxpy in OpenCL C matches JS (sync submit)'), (t) => {
  const { queue, program } = setup();
  const n = 4099;
  const { kernel, x, y, expected } = saxpyCase(queue, program, n, 2.5);
  const event = queue.submit(kernel, [y, x, kernelArg.float32(2.5)], [n]);
  t.true(event instanceof SyclEvent);
  t.is(event.executionStatus, 'complete');
  t.deepEqual(new Float32Array(y.buffer), expected);
  x.free();
  y.free();
});

onCpu(title('a 2-D stencil in OpenCL C matches JS, with a local range'), (t) => {
  const { queue, program } = setup();
  const [w, h] = [64, 48];
  const input = new MemoryUSMShared(w * h * 4, { queue });
  const output = new MemoryUSMShared(w * h * 4, { queue });
  const grid = floats(w * h, (i) => Math.sin(i) * 10);
  new Float32Array(input.buffer).set(grid);
  // Ranges in dpctl's (SYCL's) order: [rows, columns], the last the fastest, which the
  // kernel counts with get_global_id(0). w != h, so the other order would go wrong.
  queue.submit(program.getKernel('stencil2d'), [output, input, kernelArg.int32(w), kernelArg.int32(h)], [h, w], [8, 16]);
  const expected = new Float32Array(w * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const i = y * w + x;
      if (x === 0 || y === 0 || x === w - 1 || y === h - 1) expected[i] = grid[i];
      else {
        const around = Math.fround(Math.fround(Math.fround(grid[i - 1] + grid[i + 1]) + grid[i - w]) + grid[i + w]);
        expected[i] = Math.fround(Math.fround(0.5 * grid[i]) + Math.fround(0.125 * around));
      }
    }
  }
  const got = new Float32Array(output.buffer);
  for (let i = 0; i < w * h; i++) t.true(Math.abs(got[i] - expected[i]) <= 1e-5 * Math.max(1, Math.abs(expected[i])), `cell ${i}`);
  input.free();
  output.free();
});

onCpu(title('the same kernels from SPIR-V (the committed fixture)'), (t) => {
  const { queue } = setup();
  const program = createProgramFromSpirv(queue, SPIRV);
  t.true(program instanceof SyclProgram);
  for (const name of ['saxpy', 'stencil2d', 'group_sum', 'scalars', 'empty']) t.true(program.hasKernel(name), name);
  const n = 1000;
  const { kernel, x, y, expected } = saxpyCase(queue, program, n, -1.25);
  queue.submit(kernel, [y, x, kernelArg.float32(-1.25)], n);
  t.deepEqual(new Float32Array(y.buffer), expected);
  x.free();
  y.free();
  t.throws(() => createProgramFromSpirv(queue, new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8])), { instanceOf: SyclProgramCompilationError });
});

onCpu(title('kernel facts: name, argument count and kinds, work-group sizes'), (t) => {
  const { program } = setup();
  t.deepEqual([...program.kernelNames].sort(), ['empty', 'group_sum', 'saxpy', 'scalars', 'stencil2d']);
  const k = program.getKernel('group_sum');
  t.true(k instanceof SyclKernel);
  t.is(k.functionName, 'group_sum');
  t.is(k.numArgs, 3);
  t.deepEqual(k.args.map((a) => a.kind), ['global', 'local', 'value']);
  t.is(k.args[2].typeName, 'long');
  t.true(k.workGroupSize >= 1);
  t.true(k.preferredWorkGroupSizeMultiple >= 1);
  t.deepEqual([...k.compileWorkGroupSize], [0, 0, 0]);
  t.false(program.hasKernel('nope'));
  throwsExactly(t, () => program.getKernel('nope'), Error, 'ERR_KERNEL_NOT_FOUND');
});

onCpu(title('local memory and 64-bit scalars: group sums'), (t) => {
  const { queue, program } = setup();
  const groups = 8;
  const size = 16;
  const out = new MemoryUSMShared(groups * 8, { queue });
  queue.submit(program.getKernel('group_sum'), [out, kernelArg.local(size * 8), kernelArg.int64(10n ** 12n)], [groups * size], [size]);
  const sums = new BigInt64Array(out.buffer);
  for (let g = 0; g < groups; g++) {
    let s = 0n;
    for (let l = 0; l < size; l++) s += BigInt(g * size + l);
    t.is(sums[g], s + 10n ** 12n);
  }
  out.free();
});

onCpu(title('every scalar type reaches the kernel with its value'), (t) => {
  const { queue, program } = setup();
  const out = new MemoryUSMShared(10 * 8, { queue });
  const args = [
    kernelArg.int8(-5), kernelArg.uint8(250), kernelArg.int16(-30000), kernelArg.uint16(60000), kernelArg.int32(-2e9),
    kernelArg.uint32(4e9), kernelArg.int64(-(2n ** 40n)), kernelArg.uint64(2n ** 50n), kernelArg.float32(1.5), kernelArg.float64(Math.PI),
  ];
  queue.submit(program.getKernel('scalars'), [out, ...args], [1]);
  t.deepEqual([...new Float64Array(out.buffer)], [-5, 250, -30000, 60000, -2e9, 4e9, -(2 ** 40), 2 ** 50, 1.5, Math.PI]);
  out.free();
});

onCpu(title('a build failure is SyclProgramCompilationError with the log'), (t) => {
  const { queue } = setup();
  const err = t.throws(() => createProgramFromSource(queue, '__kernel void broken(__global int *p) { p[0] = ; }'), {
    instanceOf: SyclProgramCompilationError,
  });
  t.is(err.code, ErrorCode.ProgramCompilation);
  t.is(err.code, 'ERR_PROGRAM_COMPILATION');
  t.regex(err.log, /expected expression/);
  t.true(err.message.includes(err.log));
  t.is(err.name, 'SyclProgramCompilationError');
  const bad = t.throws(() => createProgramFromSource(queue, SOURCE, { options: '-this-is-not-an-option' }), { instanceOf: SyclProgramCompilationError });
  t.is(typeof bad.log, 'string');
  throwsExactly(t, () => createProgramFromPtx(queue, '.version 7.0'), Error, 'ERR_PROGRAMS_UNSUPPORTED');
  throwsExactly(t, () => createProgramFromSource(queue, 42), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => createProgramFromSource({}, SOURCE), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => createProgramFromSource(queue, SOURCE, { flags: '-O2' }), TypeError, 'ERR_INVALID_ARG_TYPE');
});

onCpu(title('build options reach the compiler'), (t) => {
  const { queue } = setup();
  const src = '__kernel void k(__global int *p) { p[0] = VALUE; }';
  t.throws(() => createProgramFromSource(queue, src), { instanceOf: SyclProgramCompilationError });
  const program = createProgramFromSource(queue, src, { options: '-DVALUE=42' });
  const out = new MemoryUSMShared(4, { queue });
  queue.submit(program.getKernel('k'), [out], [1]);
  t.is(new Int32Array(out.buffer)[0], 42);
  out.free();
});

onCpu(title('argument errors are coded and submit nothing'), (t) => {
  const { queue, program } = setup();
  const saxpy = program.getKernel('saxpy');
  const y = new MemoryUSMShared(64, { queue });
  const x = new MemoryUSMShared(64, { queue });
  new Float32Array(y.buffer).fill(1);
  const code = (fn, Class, c) => throwsExactly(t, fn, Class, c);
  code(() => queue.submit(saxpy, [y, x], [16]), TypeError, 'ERR_KERNEL_ARG_COUNT');
  code(() => queue.submit(saxpy, [y, x, kernelArg.float32(1), kernelArg.float32(1)], [16]), TypeError, 'ERR_KERNEL_ARG_COUNT');
  code(() => queue.submit(saxpy, [y, x, 2.5], [16]), TypeError, 'ERR_KERNEL_ARG_TYPE');
  code(() => queue.submit(saxpy, [y, x, kernelArg.int32(2)], [16]), TypeError, 'ERR_KERNEL_ARG_TYPE');
  code(() => queue.submit(saxpy, [y, x, kernelArg.float64(2)], [16]), TypeError, 'ERR_KERNEL_ARG_TYPE');
  code(() => queue.submit(saxpy, [kernelArg.float32(1), x, kernelArg.float32(2)], [16]), TypeError, 'ERR_KERNEL_ARG_TYPE');
  code(() => queue.submit(saxpy, [y, x, y], [16]), TypeError, 'ERR_KERNEL_ARG_TYPE');
  code(() => queue.submit(saxpy, [y, kernelArg.local(64), kernelArg.float32(2)], [16]), TypeError, 'ERR_KERNEL_ARG_TYPE');
  code(() => queue.submit(program.getKernel('group_sum'), [y, y, kernelArg.int64(0)], [16]), TypeError, 'ERR_KERNEL_ARG_TYPE');
  code(() => queue.submit(saxpy, 'y x a', [16]), TypeError, 'ERR_KERNEL_ARG_TYPE');
  code(() => queue.submit({}, [y, x, kernelArg.float32(2)], [16]), TypeError, 'ERR_INVALID_ARG_TYPE');
  code(() => kernelArg.int32(2 ** 31), RangeError, 'ERR_KERNEL_ARG_TYPE');
  code(() => kernelArg.int32(1.5), RangeError, 'ERR_KERNEL_ARG_TYPE');
  code(() => kernelArg.uint8(-1), RangeError, 'ERR_KERNEL_ARG_TYPE');
  code(() => kernelArg.int64(2n ** 63n), RangeError, 'ERR_KERNEL_ARG_TYPE');
  code(() => kernelArg.uint64(-1n), RangeError, 'ERR_KERNEL_ARG_TYPE');
  code(() => kernelArg.float32('1'), TypeError, 'ERR_KERNEL_ARG_TYPE');
  code(() => kernelArg.local(0), RangeError, 'ERR_KERNEL_ARG_TYPE');
  // Ranges
  const args = [y, x, kernelArg.float32(2)];
  code(() => queue.submit(saxpy, args, []), RangeError, 'ERR_INVALID_RANGE');
  code(() => queue.submit(saxpy, args, [1, 1, 1, 1]), RangeError, 'ERR_INVALID_RANGE');
  code(() => queue.submit(saxpy, args, [0]), RangeError, 'ERR_INVALID_RANGE');
  code(() => queue.submit(saxpy, args, [16.5]), RangeError, 'ERR_INVALID_RANGE');
  code(() => queue.submit(saxpy, args, [16], [3]), RangeError, 'ERR_INVALID_RANGE');
  code(() => queue.submit(saxpy, args, [16], [4, 4]), RangeError, 'ERR_INVALID_RANGE');
  code(() => queue.submit(saxpy, args, [16, 16], [16, saxpy.workGroupSize]), RangeError, 'ERR_INVALID_RANGE');
  code(() => queue.submit(saxpy, args, 'all'), TypeError, 'ERR_INVALID_RANGE');
  // Freed memory, and memory of another context.
  const gone = new MemoryUSMShared(64, { queue });
  gone.free();
  code(() => queue.submit(saxpy, [gone, x, kernelArg.float32(2)], [16]), Error, 'ERR_USM_FREED');
  t.true(new Float32Array(y.buffer).every((v) => v === 1), 'no failed submission ran');
  code(() => queue.submit(saxpy, args, [16], undefined, [42]), TypeError, 'ERR_INVALID_ARG_TYPE');
  y.free();
  x.free();
});

onCpu(title('a kernel of another context is refused'), (t) => {
  const { program } = setup();
  const own = new SyclQueue(new addon.SyclContext(cpu), cpu);
  const y = new MemoryUSMShared(64, { queue: own });
  throwsExactly(t, () => own.submit(program.getKernel('empty'), [], [1]), Error, 'ERR_KERNEL_QUEUE_MISMATCH');
  y.free();
});

onCpu(title('submitAsync: a Promise of the event, dependencies without blocking'), async (t) => {
  const { queue, program } = setup();
  const n = 2048;
  const { kernel, x, y, expected } = saxpyCase(queue, program, n, 3);
  const first = queue.submitAsync(kernel, [y, x, kernelArg.float32(3)], [n]);
  t.true(first instanceof Promise);
  // y = 3x + y, then y = 3x + y again, ordered by the dependency on the first Promise.
  const second = queue.submitAsync(kernel, [y, x, kernelArg.float32(3)], [n], undefined, [first]);
  const event = await second;
  t.true(event instanceof SyclEvent);
  t.is(event.executionStatus, 'complete');
  const xs = new Float32Array(x.buffer);
  const twice = floats(n, (i) => Math.fround(Math.fround(3 * xs[i]) + expected[i]));
  t.deepEqual(new Float32Array(y.buffer), twice);
  t.true((await first) instanceof SyclEvent);
  x.free();
  y.free();
});

onCpu(title('operands are held: free() and dropped references after submitAsync'), async (t) => {
  const { queue, program } = setup();
  const n = 1 << 16;
  const kernel = program.getKernel('saxpy');
  const x = new MemoryUSMDevice(n * 4, { queue });
  let y = new MemoryUSMShared(n * 4, { queue });
  x.copyFromHost(floats(n, (i) => i));
  new Float32Array(y.buffer).fill(1);
  // A view that outlives the memory objects: the allocation must stay alive for it.
  const view = addon.asUsmMemory(y);
  const out = new MemoryUSMHost(n * 4, { queue });
  const done = queue.submitAsync(kernel, [y, x, kernelArg.float32(2)], [n]);
  const copied = queue.memcpyAsync(out, view, n * 4, [done]);
  x.free();
  y.free();
  y = null;
  gc();
  await tick();
  gc();
  await copied;
  const got = new Float32Array(out.buffer);
  for (let i = 0; i < n; i += 997) t.is(got[i], 2 * i + 1);
  view.free();
  out.free();
});

onCpuSerial(title('10^4 async submits in flight: all settle, the pool and RSS come back'), async (t) => {
  const { queue, program } = setup();
  const kernel = program.getKernel('saxpy');
  const before = addon.poolStats();
  const x = new MemoryUSMShared(64, { queue });
  const rounds = 10000;
  async function round() {
    const pending = [];
    for (let i = 0; i < rounds; i++) {
      const y = new MemoryUSMShared(64, { queue });
      pending.push(queue.submitAsync(kernel, [y, x, kernelArg.float32(1)], [16]));
      y.free();
    }
    const events = await Promise.all(pending);
    t.is(events.length, rounds);
    t.true(events.every((e) => e.executionStatus === 'complete'));
  }
  // RSS: after two rounds (the runtime's, the slabs' and V8's first growth, which levels
  // off), four more must not grow it by what a leak of each submission's event or operands
  // would: 600 bytes a submission is 24 MiB over them (the allocators' own steps are a few).
  const seen = await rssGrowthOver(round);
  const grown = seen[seen.length - 1];
  t.log(`RSS over the base after each of ${seen.length} rounds of ${rounds}: ${seen.map((m) => m.toFixed(1)).join(', ')} MiB`);
  t.true(grown < 24, `RSS grew by ${grown.toFixed(1)} MiB over ${4 * rounds} submissions`);
  x.free();
  const after = addon.poolStats();
  t.is(after.shared.inUseBytes, before.shared.inUseBytes, 'every allocation was let go');
});

onCpu(title('queue properties: in_order and enable_profiling, event timestamps'), (t) => {
  const { program } = setup();
  const plain = new SyclQueue(cpu);
  t.false(plain.isInOrder);
  t.false(plain.hasEnableProfiling);
  const q = new SyclQueue(cpu, { property: ['in_order', 'enable_profiling'] });
  t.true(q.isInOrder);
  t.true(q.hasEnableProfiling);
  const ordered = new SyclQueue(cpu, { property: 'in_order' });
  t.true(ordered.isInOrder);
  t.false(ordered.hasEnableProfiling);
  const program2 = createProgramFromSource(q, SOURCE);
  const y = new MemoryUSMShared(4096, { queue: q });
  const x = new MemoryUSMShared(4096, { queue: q });
  const event = q.submit(program2.getKernel('saxpy'), [y, x, kernelArg.float32(1)], [1024]);
  const [s, b, e] = [event.profilingInfoSubmit, event.profilingInfoStart, event.profilingInfoEnd];
  t.is(typeof b, 'bigint');
  t.true(s <= b && b <= e, `submit ${s} <= start ${b} <= end ${e}`);
  const unprofiled = plain.submit(program.getKernel('empty'), [], [1]);
  throwsExactly(t, () => unprofiled.profilingInfoStart, Error, 'ERR_PROFILING_NOT_ENABLED');
  throwsExactly(t, () => new SyclQueue(cpu, { property: 'fast' }), addon.SyclQueueCreationError, 'ERR_QUEUE_CREATION');
  throwsExactly(t, () => new SyclQueue(cpu, { properties: 'in_order' }), TypeError, 'ERR_INVALID_ARG_TYPE');
  y.free();
  x.free();
});

onCpu(title("fill takes one element's bytes as a TypedArray or DataView of 1, 2, 4, 8 or 16 bytes (complex128), copied at the call"), async (t) => {
  const queue = new SyclQueue(cpu);
  const m = new MemoryUSMShared(256, { queue });
  queue.fill(m, new Float64Array([1.5, -2]));
  const doubles = new Float64Array(m.buffer);
  t.true(doubles.every((v, i) => v === (i % 2 === 0 ? 1.5 : -2)), 'complex128 (1.5 - 2i) in every 16 bytes');
  queue.fill(m, new Uint8Array([9]), 3);
  t.deepEqual([...new Uint8Array(m.buffer, 0, 4)], [9, 9, 9, 0]);
  // A view's own bytes, not its whole buffer; copied at the call.
  const backing = new Uint8Array([1, 2, 3, 4, 5, 6]);
  const pattern = new Uint16Array(backing.buffer, 2, 1);
  const pending = queue.fillAsync(m, pattern, 4);
  backing.fill(0);
  await pending;
  t.deepEqual([...new Uint8Array(m.buffer, 0, 10)], [3, 4, 3, 4, 3, 4, 3, 4, 0, 0], 'bytes 2..3 of the buffer, 4 times; the rest as -2.0 left it');
  for (const bad of [new Uint8Array(3), new Float64Array(4), new Uint8Array(0)]) {
    throwsExactly(t, () => queue.fill(m, bad), RangeError, 'ERR_INVALID_ARG_VALUE');
  }
  throwsExactly(t, () => queue.fill(m, new ArrayBuffer(4)), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => queue.fill(m, new Float64Array([1, 2]), 17), RangeError, 'ERR_INVALID_RANGE');
  m.free();
});

onCpu(title('queue memcpy, memset, fill and barriers, sync and async'), async (t) => {
  const queue = new SyclQueue(cpu);
  const a = new MemoryUSMShared(1024, { queue });
  const b = new MemoryUSMDevice(1024, { queue });
  const c = new MemoryUSMShared(1024, { queue });
  queue.fill(a, kernelArg.float32(2.5));
  t.true(new Float32Array(a.buffer).every((v) => v === 2.5));
  queue.memcpy(b, a, 512);
  queue.memset(c, 7);
  const copied = queue.memcpyAsync(c, b, 256);
  const barrier = queue.submitBarrier([copied]);
  barrier.wait();
  t.true(new Float32Array(c.buffer, 0, 64).every((v) => v === 2.5));
  t.true(new Uint8Array(c.buffer, 256).every((v) => v === 7));
  await queue.fillAsync(c, kernelArg.uint16(0xabcd), 8);
  t.deepEqual([...new Uint16Array(c.buffer, 0, 9)], [...Array(8).fill(0xabcd), new Uint16Array(a.buffer)[8]]);
  await queue.memsetAsync(c, 1, 4);
  t.deepEqual([...new Uint8Array(c.buffer, 0, 5)], [1, 1, 1, 1, 0xcd]);
  throwsExactly(t, () => queue.memcpy(c, a, 2048), RangeError, 'ERR_INVALID_RANGE');
  throwsExactly(t, () => queue.fill(c, kernelArg.float64(1), 1000), RangeError, 'ERR_INVALID_RANGE');
  throwsExactly(t, () => queue.memset(c, 256), RangeError, 'ERR_INVALID_FILL_VALUE');
  throwsExactly(t, () => queue.memcpy(new Uint8Array(4), a, 4), TypeError, 'ERR_NOT_USM');
  throwsExactly(t, () => queue.fill(c, 1.5), TypeError, 'ERR_INVALID_ARG_TYPE');
  t.true(queue.submitBarrier() instanceof SyclEvent);
  a.free();
  b.free();
  c.free();
});

onCpu(title('free() of memory a pending kernel uses defers the release'), async (t) => {
  const { queue, program } = setup();
  const n = 1 << 18;
  const y = new MemoryUSMShared(n * 4, { queue });
  const x = new MemoryUSMShared(n * 4, { queue });
  new Float32Array(x.buffer).fill(1);
  const view = new Float32Array(y.buffer);
  const pending = queue.submitAsync(program.getKernel('saxpy'), [y, x, kernelArg.float32(4)], [n]);
  y.free();
  t.is(view.length, 0, 'free() detached the buffer at once');
  x.free();
  const event = await pending;
  t.is(event.executionStatus, 'complete');
});

onCpu(title('a kernel writing out of bounds on the CPU device'), (t) => {
  // The OpenCL CPU runtime runs kernels on host threads with no bounds checks: a write a
  // little past a small allocation lands in the runtime's own padding or in other heap
  // memory, undetected. What is guaranteed here is that a kernel's own fault (a write far
  // outside any mapping) kills the process (SIGSEGV) rather than passing silently; this
  // test runs that in a child process and checks it did not exit cleanly.
  const script = `
    const a = require(${JSON.stringify(fileURLToPath(new URL('../index.js', import.meta.url)))});
    const q = new a.SyclQueue(${JSON.stringify(cpu.filterString)});
    const p = a.createProgramFromSource(q, '__kernel void far(__global int *p) { p[(long)1 << 40] = 1; }');
    const m = new a.MemoryUSMShared(64, { queue: q });
    q.submit(p.getKernel('far'), [m], [1]);
    console.log('survived');`;
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 120000 });
  t.not(child.status, 0, `the child exited with ${child.status} (signal ${child.signal})`);
  t.false(child.stdout.includes('survived'));
});

test('the kernel API is exported and typed arguments are described', (t) => {
  for (const name of ['createProgramFromSource', 'createProgramFromSpirv', 'createProgramFromPtx', 'createProgramFromCuda']) {
    t.is(typeof addon[name], 'function', name);
  }
  t.is(kernelArg.int32(5).type, 'int32');
  t.is(kernelArg.uint64(5).value, 5n);
  t.is(kernelArg.local(64).type, 'local');
  t.throws(() => new addon.KernelArg(), { code: 'ERR_CONSTRUCT_CALL_REQUIRED' });
  t.throws(() => new SyclProgram(), { code: 'ERR_CONSTRUCT_CALL_REQUIRED' });
});

onCpu(title('sync submits: a completed event that serves as a dependency, order kept on an in-order queue'), async (t) => {
  const { queue, program } = setup();
  const saxpy = program.getKernel('saxpy');
  const n = 4096;
  const x = new MemoryUSMShared(n * 4, { queue });
  const y = new MemoryUSMShared(n * 4, { queue });
  new Float32Array(x.buffer).fill(1);
  new Float32Array(y.buffer).fill(0);
  // Out of order, no profiling: the event is complete when submit returns.
  const done = queue.submit(saxpy, [y, x, kernelArg.float32(2)], [n]);
  t.is(done.executionStatus, 'complete');
  t.notThrows(() => done.wait());
  t.true(done.syclQueue === queue);
  t.true(new Float32Array(y.buffer).every((v) => v === 2));
  // It serves as a dependency of every operation that takes one.
  const after = await queue.submitAsync(saxpy, [y, x, kernelArg.float32(1)], [n], undefined, [done]);
  t.is(after.executionStatus, 'complete');
  t.true(new Float32Array(y.buffer).every((v) => v === 3));
  queue.memcpy(x, y, 16, [done]);
  queue.fill(x, kernelArg.float32(1), 4, [done]);
  queue.submitBarrier([done]).wait();
  t.is(queue.submit(saxpy, [y, x, kernelArg.float32(1)], [n], undefined, [done]).executionStatus, 'complete');
  t.true(new Float32Array(y.buffer).every((v) => v === 4));
  // An in-order queue: a sync submit runs after the queue's earlier asynchronous work.
  const ordered = new SyclQueue(cpu, { property: 'in_order' });
  const inOrder = createProgramFromSource(ordered, SOURCE).getKernel('saxpy');
  const a = new MemoryUSMShared(1 << 22, { queue: ordered });
  const b = new MemoryUSMShared(1 << 22, { queue: ordered });
  const items = (1 << 22) / 4;
  new Float32Array(a.buffer).fill(1);
  for (let round = 0; round < 8; round++) {
    const filled = ordered.fillAsync(b, kernelArg.float32(5 + round));
    ordered.submit(inOrder, [b, a, kernelArg.float32(1)], [items]);
    t.true(new Float32Array(b.buffer).every((v) => v === 6 + round), `round ${round}: the fill ran before the kernel`);
    await filled;
  }
  for (const m of [x, y, a, b]) m.free();
});

onCpu(title('a submit made while another encodes its arguments (an interface getter that submits) gets its own'), (t) => {
  const { queue, program } = setup();
  const saxpy = program.getKernel('saxpy');
  const n = 1024;
  const x = new MemoryUSMShared(n * 4, { queue });
  const y = new MemoryUSMShared(n * 4, { queue });
  const z = new MemoryUSMShared(n * 4, { queue });
  new Float32Array(x.buffer).fill(1);
  new Float32Array(y.buffer).fill(0);
  new Float32Array(z.buffer).fill(0);
  let nested = 0;
  const sneaky = {
    get __sycl_usm_array_interface__() {
      // Runs while the outer submit is encoding: a submit of its own, with other ranges.
      nested += 1;
      queue.submit(saxpy, [z, x, kernelArg.float32(7)], [n / 2]);
      return y.__sycl_usm_array_interface__;
    },
  };
  queue.submit(saxpy, [sneaky, x, kernelArg.float32(3)], [n]);
  t.is(nested, 1);
  t.true(new Float32Array(y.buffer).every((v) => v === 3), 'the outer submit kept its own arguments and range');
  const zs = new Float32Array(z.buffer);
  t.true(zs.subarray(0, n / 2).every((v) => v === 7) && zs.subarray(n / 2).every((v) => v === 0), 'the nested one ran over its own range');
  for (const m of [x, y, z]) m.free();
});
