// SYCL-source kernels (issue 42; dpctl's create_kernel_bundle_from_sycl_source and its
// tests in test_sycl_program.py): free-function kernels compiled at run time by the DPC++
// 2026 runtime, virtual headers, registered template instantiations, a compiler error with
// its log, and SyclDevice.canCompile. The builds run where the device can compile SYCL
// (npm test's SYCL 2026 pass); on the 2025 runtime the coded refusal is what is checked.
import test from 'ava';
import { addon, DEVICES, MemoryUSMDevice, MemoryUSMShared, SyclQueue } from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';

const { createProgramFromSycl, createProgramFromSource, kernelArg, SyclProgramCompilationError } = addon;
const cpu = DEVICES.find((d) => d.backend === 'opencl' && d.deviceType === 'cpu');
const compiles = cpu !== undefined && cpu.canCompile('sycl');
const onSycl = compiles ? test.serial : test.serial.skip;
const onOldRuntime = cpu !== undefined && !compiles ? test : test.skip;
const where = compiles ? ` [${cpu.filterString}]` : cpu ? ' [the SYCL runtime here cannot compile SYCL source (npm test\'s SYCL 2026 pass can): skipped]' : ' [no OpenCL CPU device: skipped]';
const whereOld = cpu !== undefined && !compiles ? ` [${cpu.filterString}]` : cpu ? ' [this runtime compiles SYCL source: skipped]' : ' [no OpenCL CPU device: skipped]';

// dpctl's test kernel, in the same shape: an nd_range free function over USM pointers, a
// helper from a virtual header, and a template instantiated by a registered name.
const SOURCE = `
#include <sycl/sycl.hpp>
#include "math_ops.hpp"
#include "math_template_ops.hpp"
namespace syclext = sycl::ext::oneapi::experimental;

extern "C" SYCL_EXTERNAL SYCL_EXT_ONEAPI_FUNCTION_PROPERTY((syclext::nd_range_kernel<1>))
void vector_add(int *in1, int *in2, int *out) {
  sycl::nd_item<1> item = sycl::ext::oneapi::this_work_item::get_nd_item<1>();
  size_t i = item.get_global_linear_id();
  out[i] = math_op(in1[i], in2[i]);
}

template <typename T>
SYCL_EXTERNAL SYCL_EXT_ONEAPI_FUNCTION_PROPERTY((syclext::nd_range_kernel<1>))
void vector_add_template(T *in1, T *in2, T *out) {
  sycl::nd_item<1> item = sycl::ext::oneapi::this_work_item::get_nd_item<1>();
  size_t i = item.get_global_linear_id();
  out[i] = math_op_template(in1[i], in2[i]);
}

extern "C" SYCL_EXTERNAL SYCL_EXT_ONEAPI_FUNCTION_PROPERTY((syclext::nd_range_kernel<1>))
void axpy(float *y, const float *x, float a) {
  size_t i = sycl::ext::oneapi::this_work_item::get_nd_item<1>().get_global_linear_id();
  y[i] = a * x[i] + y[i];
}
`;
const HEADERS = {
  'math_ops.hpp': 'int math_op(int a, int b) { return a + b; }',
  'math_template_ops.hpp': 'template <typename T> T math_op_template(T a, T b) { return a + b; }',
};

let built;
const program = () => {
  built ??= createProgramFromSycl(new SyclQueue(cpu), SOURCE, { headers: HEADERS, registeredNames: ['vector_add_template<int>'], options: '-fno-fast-math' });
  return built;
};

onSycl(`a SYCL-source program with headers and a registered template runs its kernels, as dpctl's test does${where}`, async (t) => {
  const p = program();
  const q = p.syclQueue;
  t.deepEqual(p.kernelNames, ['vector_add_template<int>'], 'the registered names it has (free functions are found by name)');
  t.true(p.hasKernel('vector_add'));
  t.true(p.hasKernel('vector_add_template<int>'));
  t.false(p.hasKernel('vector_add_template<float>'), 'not registered, not built');
  const n = 16 * 8;
  const in1 = Int32Array.from({ length: n }, (_, i) => i);
  const in2 = Int32Array.from({ length: n }, (_, i) => 3 * i - 7);
  for (const name of ['vector_add', 'vector_add_template<int>']) {
    const kernel = p.getKernel(name);
    t.is(kernel.numArgs, 3);
    const [a, b, out] = [new MemoryUSMDevice(n * 4, { queue: q }), new MemoryUSMDevice(n * 4, { queue: q }), new MemoryUSMDevice(n * 4, { queue: q })];
    const copies = [a.copyFromHostAsync(in1), b.copyFromHostAsync(in2)];
    await Promise.all(copies);
    await q.submitAsync(kernel, [a, b, out], [n], [16]);
    const got = new Int32Array(out.copyToHost().buffer);
    t.deepEqual([...got], [...in1].map((v, i) => v + in2[i]), name);
    for (const m of [a, b, out]) m.free();
  }
  // A scalar argument through kernelArg.
  const x = new MemoryUSMShared(64 * 4, { queue: q });
  const y = new MemoryUSMShared(64 * 4, { queue: q });
  new Float32Array(x.buffer).fill(2);
  new Float32Array(y.buffer).fill(1);
  q.submit(p.getKernel('axpy'), [y, x, kernelArg.float32(3)], [64], [16]);
  t.true(new Float32Array(y.buffer).every((v) => v === 7));
  throwsExactly(t, () => p.getKernel('vector_sub'), Error, 'ERR_KERNEL_NOT_FOUND');
  x.free();
  y.free();
});

onSycl(`a compiler error is SyclProgramCompilationError with the compiler's message in its log${where}`, (t) => {
  const broken = SOURCE.replace('get_global_linear_id();\n  out[i] = math_op(', 'get_global_linear_id()\n  out[i] = math_op(');
  t.not(broken, SOURCE);
  const error = t.throws(() => createProgramFromSycl(new SyclQueue(cpu), broken, { headers: HEADERS }));
  t.true(error instanceof SyclProgramCompilationError);
  t.is(error.code, 'ERR_PROGRAM_COMPILATION');
  t.regex(error.log, /error: expected ';' at end of declaration/);
  // A header the source includes but that is not given.
  const missing = t.throws(() => createProgramFromSycl(new SyclQueue(cpu), SOURCE, { headers: { 'math_ops.hpp': HEADERS['math_ops.hpp'] } }));
  t.is(missing.code, 'ERR_PROGRAM_COMPILATION');
  t.regex(missing.log, /math_template_ops\.hpp/);
});

test('createProgramFromSycl checks its arguments before anything is built', (t) => {
  const q = cpu ? new SyclQueue(cpu) : null;
  const bad = [
    [() => createProgramFromSycl({}, SOURCE), 'ERR_INVALID_ARG_TYPE'],
    [() => createProgramFromSycl(q, 42), 'ERR_INVALID_ARG_TYPE'],
    [() => createProgramFromSycl(q, SOURCE, { defines: [] }), 'ERR_INVALID_ARG_TYPE'],
    [() => createProgramFromSycl(q, SOURCE, { headers: 'math_ops.hpp' }), 'ERR_INVALID_ARG_TYPE'],
    [() => createProgramFromSycl(q, SOURCE, { headers: [['a.hpp']] }), 'ERR_INVALID_ARG_TYPE'],
    [() => createProgramFromSycl(q, SOURCE, { headers: [['a.hpp', 1]] }), 'ERR_INVALID_ARG_TYPE'],
    [() => createProgramFromSycl(q, SOURCE, { headers: [['a.hpp', ''], ['a.hpp', '']] }), 'ERR_INVALID_ARG_TYPE'],
    [() => createProgramFromSycl(q, SOURCE, { headers: { '': '' } }), 'ERR_INVALID_ARG_TYPE'],
    [() => createProgramFromSycl(q, SOURCE, { registeredNames: 'f<int>' }), 'ERR_INVALID_ARG_TYPE'],
    [() => createProgramFromSycl(q, SOURCE, { registeredNames: [1] }), 'ERR_INVALID_ARG_TYPE'],
    [() => createProgramFromSycl(q, SOURCE, { options: [1] }), 'ERR_INVALID_ARG_TYPE'],
  ];
  for (const [call, code] of bad) {
    const error = t.throws(call);
    t.is(error.code, code, error.message);
    t.true(error instanceof TypeError, error.message);
  }
});

onOldRuntime(`on a runtime that cannot compile SYCL source it is ERR_PROGRAMS_UNSUPPORTED naming the runtime that can${whereOld}`, (t) => {
  const error = t.throws(() => createProgramFromSycl(new SyclQueue(cpu), SOURCE, { headers: HEADERS }));
  t.is(error.code, 'ERR_PROGRAMS_UNSUPPORTED');
  t.regex(error.message, /DPC\+\+ 2026 runtime \(libsycl\.so\.9: `npx dpctl-memory-install-runtime --sycl 2026`/);
});

test(`SyclDevice.canCompile answers for each language dpctl names, and refuses others${cpu ? ` [${cpu.filterString}]` : ' [no OpenCL CPU device: skipped]'}`, (t) => {
  if (!cpu) return t.pass();
  for (const [language, expected] of [['opencl', true], ['ocl', true], ['spirv', true], ['spv', true], ['sycl', compiles], ['ptx', false], ['cuda', false]]) {
    t.is(cpu.canCompile(language), expected, language);
  }
  // What canCompile says is what a build does.
  t.notThrows(() => createProgramFromSource(new SyclQueue(cpu), '__kernel void k(void) {}'));
  throwsExactly(t, () => cpu.canCompile('fortran'), TypeError, 'ERR_INVALID_ARG_VALUE');
  throwsExactly(t, () => cpu.canCompile('OpenCL'), TypeError, 'ERR_INVALID_ARG_VALUE');
  throwsExactly(t, () => cpu.canCompile(null), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => addon.SyclDevice.prototype.canCompile.call({}, 'sycl'), TypeError, 'ERR_INVALID_THIS');
});
