// kernelArg.float16: a half, rounded as a Float16Array element rounds it, where Node has
// Float16Array (24 and later; feature-detected), for OpenCL C `half` parameters (the device
// needs cl_khr_fp16, aspect 'fp16'; a device without it is refused, a cargo test over the
// fake provider) and as a two-byte fill pattern. Elsewhere a coded error names the Node
// that has it.
import test from 'ava';
import { addon, DEVICES, MemoryUSMShared, SyclQueue } from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';

const { createProgramFromSource, kernelArg } = addon;

const HAS_F16 = typeof globalThis.Float16Array === 'function';
const cpu = DEVICES.find((d) => d.backend === 'opencl' && d.deviceType === 'cpu');
const onF16 = HAS_F16 ? test : test.skip;
const withoutF16 = HAS_F16 ? test.skip : test;
const f16Note = HAS_F16 ? '' : ` [Node ${process.version} has no Float16Array; Node 24 and later have it: skipped]`;
const halfDevice = cpu !== undefined && cpu.aspects.includes('fp16');
const onF16Cpu = HAS_F16 && cpu ? test : test.skip;
const onHalfDevice = HAS_F16 && halfDevice ? test : test.skip;
const deviceNote = !HAS_F16 ? f16Note : halfDevice ? ` [${cpu.filterString}]` : ' [no OpenCL CPU device with cl_khr_fp16 present: skipped]';

const SOURCE = `
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel void widen(__global float *out, half x, half y) { out[0] = (float)x; out[1] = (float)y; }
__kernel void narrow(__global float *out, float x) { out[0] = x; }`;

/** The bits of `value` as a Float16Array element. */
const bitsOf = (value) => new Uint16Array(globalThis.Float16Array.of(value).buffer)[0];

onF16(`kernelArg.float16 is a 'float16' scalar of the given number${f16Note}`, (t) => {
  const arg = kernelArg.float16(1.5);
  t.is(arg.type, 'float16');
  t.is(arg.value, 1.5);
  t.is(String(arg), '<KernelArg float16 1.5>');
  throwsExactly(t, () => kernelArg.float16('1.5'), TypeError, 'ERR_KERNEL_ARG_TYPE');
  throwsExactly(t, () => kernelArg.float16(1n), TypeError, 'ERR_KERNEL_ARG_TYPE');
});

withoutF16(`without Float16Array, kernelArg.float16 is a coded error naming the Node that has it${HAS_F16 ? ' [this Node has Float16Array: skipped]' : ''}`, (t) => {
  const error = throwsExactly(t, () => kernelArg.float16(1.5), TypeError, 'ERR_KERNEL_ARG_TYPE');
  t.regex(error.message, /Float16Array/);
  t.regex(error.message, /Node 24/);
  t.true(error.message.includes(process.version), error.message);
});

onHalfDevice(`a half parameter gets the value as Float16Array rounds it${deviceNote}`, (t) => {
  const queue = new SyclQueue(cpu);
  const program = createProgramFromSource(queue, SOURCE);
  const out = new MemoryUSMShared(8, { queue });
  queue.submit(program.getKernel('widen'), [out, kernelArg.float16(-2.5), kernelArg.float16(1 / 3)], [1]);
  t.deepEqual([...new Float32Array(out.buffer)], [-2.5, globalThis.Float16Array.of(1 / 3)[0]]);
  t.not(new Float32Array(out.buffer)[1], Math.fround(1 / 3), 'rounded to half precision, not float');
  throwsExactly(t, () => queue.submit(program.getKernel('widen'), [out, kernelArg.uint16(bitsOf(1)), kernelArg.float16(1)], [1]), TypeError, 'ERR_KERNEL_ARG_TYPE');
  throwsExactly(t, () => queue.submit(program.getKernel('narrow'), [out, kernelArg.float16(1)], [1]), TypeError, 'ERR_KERNEL_ARG_TYPE');
  out.free();
});

onF16Cpu(`fill takes a float16 pattern: two bytes per element, on any device${cpu ? ` [${cpu.filterString}]` : ' [no OpenCL CPU device present: skipped]'}${f16Note}`, async (t) => {
  const queue = new SyclQueue(cpu);
  const mem = new MemoryUSMShared(16, { queue });
  mem.memset(0xee);
  queue.fill(mem, kernelArg.float16(-2.5), 5);
  const halves = new Uint16Array(mem.buffer);
  t.deepEqual([...halves.subarray(0, 5)], new Array(5).fill(bitsOf(-2.5)));
  t.is(halves[5], 0xeeee, 'the sixth element is untouched');
  await queue.fillAsync(mem, kernelArg.float16(65504));
  t.deepEqual([...new globalThis.Float16Array(mem.buffer)], new Array(8).fill(65504), 'all of it when no count is given');
  mem.free();
});
