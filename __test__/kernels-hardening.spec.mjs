// Kernel and queue paths against hostile arguments (issue 39: #3, #4, #10, #15): an
// argument list that changes while it is encoded, local memory beyond the device's, a
// replaced public getter, temporary handles of an argument that throws later, the user's
// own errors, revoked Proxies, a foreign `this`, and an event of another context. What
// can write into memory it was never given runs in a child process.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { addon, DEVICES, MemoryUSMShared, SyclQueue } from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';

const { createProgramFromSource, kernelArg, SyclProgram, SyclKernel, SyclEvent, KernelArg, HostRegistration, ErrorCode } = addon;

const INDEX = fileURLToPath(new URL('../index.js', import.meta.url));
const cpu = DEVICES.find((d) => d.backend === 'opencl' && d.deviceType === 'cpu');
const onCpu = cpu ? test : test.skip;
const title = (text) => (cpu ? `${text} [${cpu.filterString}]` : `${text} [no OpenCL CPU device present: skipped]`);

const SOURCE = `
__kernel void two(__global int *a, __global int *b) { a[0] = 1; b[0] = 1234; }
__kernel void one(__global int *a) { a[0] = 7; }
__kernel void empty(void) {}
// Writes every byte of its local memory, then sums it: out[0] = the sum.
__kernel void local_fill(__global long *out, __local uchar *scratch, int nbytes) {
  if (get_local_id(0) == 0) {
    for (int i = 0; i < nbytes; ++i) scratch[i] = (uchar)(i & 1);
    long s = 0;
    for (int i = 0; i < nbytes; ++i) s += scratch[i];
    out[0] = s;
  }
}
`;

let shared;
function setup() {
  if (!shared) {
    const queue = new SyclQueue(cpu);
    shared = { queue, program: createProgramFromSource(queue, SOURCE) };
  }
  return shared;
}

/** Runs `body` (a script's text, with `addon`, `queue`, `program`, `cpu` in scope) in a
 * child process; its last line of stdout is parsed as JSON. */
function child(body) {
  const script = `
    const addon = require(${JSON.stringify(INDEX)});
    const { MemoryUSMShared, SyclQueue, createProgramFromSource, kernelArg } = addon;
    const cpu = addon.getDevices().find((d) => d.backend === 'opencl' && d.deviceType === 'cpu');
    const queue = new SyclQueue(cpu);
    const program = createProgramFromSource(queue, ${JSON.stringify(SOURCE)});
    const report = (value) => process.stdout.write(JSON.stringify(value) + '\\n');
    const caught = (f) => { try { f(); return null; } catch (e) { return { name: e.constructor.name, code: e.code, message: e.message }; } };
    ${body}
  `;
  const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 120000 });
  const lines = run.stdout.trim().split('\n');
  return { status: run.status, signal: run.signal, stderr: run.stderr, result: run.status === 0 ? JSON.parse(lines[lines.length - 1]) : undefined };
}

// ---------------------------------------------------------------------------------------
// #3: an argument list that shrinks while it is encoded
// ---------------------------------------------------------------------------------------

onCpu(title('an argument list that shrinks while it is encoded: each argument as it was given, no other memory written'), (t) => {
  const run = child(`
    // The environment's first memory object: never passed to a kernel.
    const victim = new MemoryUSMShared(64, { queue });
    const a = new MemoryUSMShared(64, { queue });
    const b = new MemoryUSMShared(64, { queue });
    const view = (m) => new Int32Array(m.buffer);
    for (const m of [victim, a, b]) view(m).fill(0);
    const results = [];
    // 1. The exporter's getter shortens the array the submit is reading.
    {
      const args = [];
      const exporter = { get __sycl_usm_array_interface__() { args.length = 1; return a.__sycl_usm_array_interface__; } };
      args.push(exporter, b);
      const error = caught(() => queue.submit(program.getKernel('two'), args, [1]));
      results.push({ error, a: view(a)[0], b: view(b)[0], victim: view(victim)[0] });
    }
    view(a).fill(0); view(b).fill(0);
    // 2. A Proxy array whose length drops after its first read.
    {
      let reads = 0;
      const proxy = new Proxy([a, b], { get(target, key, receiver) { if (key === 'length') return ++reads === 1 ? 2 : 1; return Reflect.get(target, key, receiver); } });
      const error = caught(() => queue.submit(program.getKernel('two'), proxy, [1]));
      results.push({ error, a: view(a)[0], b: view(b)[0], victim: view(victim)[0] });
    }
    report(results);
  `);
  t.is(run.status, 0, run.stderr);
  for (const [i, r] of run.result.entries()) {
    t.is(r.error, null, `case ${i}: the submit ran with its arguments as given`);
    t.is(r.a, 1, `case ${i}: a`);
    t.is(r.b, 1234, `case ${i}: b`);
    t.is(r.victim, 0, `case ${i}: memory never passed is never written`);
  }
});

// ---------------------------------------------------------------------------------------
// #4: local memory beyond the device's, and the value getter
// ---------------------------------------------------------------------------------------

onCpu(title('the device says how much local memory it has (dpctl\'s local_mem_size)'), (t) => {
  t.is(typeof cpu.localMemSize, 'number');
  t.true(Number.isSafeInteger(cpu.localMemSize) && cpu.localMemSize > 0);
});

onCpu(title('kernelArg.local beyond the device\'s local memory is a coded RangeError, 2^32 + 16 bytes included (no wrap)'), (t) => {
  const run = child(`
    const out = new MemoryUSMShared(8, { queue });
    const k = program.getKernel('local_fill');
    const results = {};
    for (const [name, n] of [['wrap', 2 ** 32 + 16], ['over', cpu.localMemSize + 1], ['huge', Number.MAX_SAFE_INTEGER]]) {
      results[name] = caught(() => queue.submit(k, [out, kernelArg.local(n), kernelArg.int32(16384)], [1], [1]));
    }
    new BigInt64Array(out.buffer)[0] = -1n;
    results.fits = caught(() => queue.submit(k, [out, kernelArg.local(4096), kernelArg.int32(4096)], [1], [1]));
    results.sum = Number(new BigInt64Array(out.buffer)[0]);
    report(results);
  `);
  t.is(run.status, 0, `the child ended with ${run.status ?? run.signal}: ${run.stderr}`);
  for (const name of ['wrap', 'over', 'huge']) {
    const error = run.result[name];
    t.truthy(error, `${name}: refused`);
    t.is(error?.name, 'RangeError', name);
    t.is(error?.code, ErrorCode.InvalidSize, name);
    t.regex(error?.message ?? '', /local memory/, name);
  }
  t.is(run.result.fits, null);
  t.is(run.result.sum, 2048, 'the kernel had its 4096 bytes');
});

onCpu(title('a replaced KernelArg.prototype.value getter changes nothing a submission sends'), (t) => {
  // Before the fix the getter's 2^32 + 8 reached the runtime as 8 bytes: run apart.
  const run = child(`
    const out = new MemoryUSMShared(8, { queue });
    const local = kernelArg.local(256);
    let reads = 0;
    Object.defineProperty(addon.KernelArg.prototype, 'value', { configurable: true, get() { reads += 1; return 2 ** 32 + 8; } });
    const error = caught(() => queue.submit(program.getKernel('local_fill'), [out, local, kernelArg.int32(256)], [1], [1]));
    report({ error, reads, sum: Number(new BigInt64Array(out.buffer)[0]) });
  `);
  t.is(run.status, 0, `the child ended with ${run.status ?? run.signal}: ${run.stderr}`);
  t.is(run.result.error, null);
  t.is(run.result.reads, 0, 'the submission read the argument\'s own value');
  t.is(run.result.sum, 128, 'the kernel had its 256 bytes');
});

// ---------------------------------------------------------------------------------------
// #10: temporary handles of a later argument that throws, and the user's own errors
// ---------------------------------------------------------------------------------------

onCpu(title('an interface argument before one that throws leaves nothing in use (submit, memcpy, fill)'), (t) => {
  const run = child(`
    const MiB = 1 << 20;
    const inUse = () => addon.memoryStats(cpu).all.allocatedBytes.current;
    const before = inUse();
    const k = program.getKernel('two');
    const thrower = { get __sycl_usm_array_interface__() { throw new Error('boom'); } };
    const codes = new Set();
    for (let i = 0; i < 100; i++) {
      const m = new MemoryUSMShared(MiB, { queue });
      const exporter = { __sycl_usm_array_interface__: m.__sycl_usm_array_interface__ };
      for (const second of [thrower, 5, null]) {
        try { queue.submit(k, [exporter, second], [1]); } catch (e) { codes.add(e.code ?? e.message); }
      }
      try { queue.memcpy(exporter, thrower, 8); } catch (e) { codes.add(e.code ?? e.message); }
      try { queue.memcpy(exporter, 5, 8); } catch (e) { codes.add(e.code ?? e.message); }
      m.free();
    }
    report({ before, after: inUse(), codes: [...codes].sort() });
  `);
  t.is(run.status, 0, run.stderr);
  t.is(run.result.after, run.result.before, 'every temporary handle was given back');
  t.deepEqual(run.result.codes, [ErrorCode.KernelArgType, ErrorCode.NotUsm, 'boom'].sort());
});

onCpu(title('the user\'s own error thrown by an interface getter comes back as it was thrown (submit, memcpy, fill)'), (t) => {
  const { queue, program } = setup();
  const boom = new Error('boom');
  const thrower = {
    get __sycl_usm_array_interface__() {
      throw boom;
    },
  };
  const m = new MemoryUSMShared(64, { queue });
  t.throws(() => queue.submit(program.getKernel('one'), [thrower], [1]), { is: boom });
  t.throws(() => queue.memcpy(thrower, m, 8), { is: boom });
  t.throws(() => queue.memcpy(m, thrower, 8), { is: boom });
  t.throws(() => queue.fill(thrower, kernelArg.int32(1), 1), { is: boom });
  // As the constructors and asUsmMemory do.
  t.throws(() => new MemoryUSMShared(thrower), { is: boom });
  t.throws(() => addon.asUsmMemory(thrower), { is: boom });
  m.free();
});

// ---------------------------------------------------------------------------------------
// #15: revoked Proxies, a foreign `this`, an event of another context
// ---------------------------------------------------------------------------------------

const revoked = () => {
  const { proxy, revoke } = Proxy.revocable([], {});
  revoke();
  return proxy;
};
const revokedObject = () => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
};

onCpu(title('revoked Proxies on the kernel and queue paths are coded errors'), (t) => {
  const { queue, program } = setup();
  const k = program.getKernel('one');
  const m = new MemoryUSMShared(64, { queue });
  throwsExactly(t, () => queue.submit(k, revoked(), [1]), TypeError, ErrorCode.KernelArgType, 'args');
  throwsExactly(t, () => queue.submit(k, [revokedObject()], [1]), TypeError, ErrorCode.KernelArgType, 'an argument');
  throwsExactly(t, () => queue.submit(k, [m], revoked()), TypeError, ErrorCode.InvalidRange, 'the global range');
  throwsExactly(t, () => queue.submit(k, [m], [1], revoked()), TypeError, ErrorCode.InvalidRange, 'the local range');
  throwsExactly(t, () => queue.submit(k, [m], [1], undefined, revoked()), TypeError, ErrorCode.InvalidArgType, 'dependsOn');
  throwsExactly(t, () => queue.submit(k, [m], [1], undefined, [revokedObject()]), TypeError, ErrorCode.InvalidArgType, 'a dependency');
  throwsExactly(t, () => queue.memcpy(revokedObject(), m, 8), TypeError, ErrorCode.NotUsm, 'memcpy dst');
  throwsExactly(t, () => queue.memcpy(m, revokedObject(), 8), TypeError, ErrorCode.NotUsm, 'memcpy src');
  throwsExactly(t, () => queue.memcpy(m, m, 8, revoked()), TypeError, ErrorCode.InvalidArgType, 'memcpy dependsOn');
  throwsExactly(t, () => queue.fill(revokedObject(), kernelArg.int32(1), 1), TypeError, ErrorCode.NotUsm, 'fill dst');
  throwsExactly(t, () => queue.memset(revokedObject(), 0, 8), TypeError, ErrorCode.NotUsm, 'memset dst');
  throwsExactly(t, () => queue.submitBarrier(revoked()), TypeError, ErrorCode.InvalidArgType, 'barrier dependsOn');
  throwsExactly(t, () => createProgramFromSource(queue, SOURCE, revokedObject()), TypeError, ErrorCode.InvalidArgType, 'options');
  throwsExactly(t, () => createProgramFromSource(queue, SOURCE, { options: revoked() }), TypeError, ErrorCode.InvalidArgType, 'options.options');
  // A Proxy that claims 2^32 - 1 arguments is refused before any is read; one revoked while
  // it is read is the same coded error as one revoked before.
  let reads = 0;
  const long = new Proxy([m], { get: (target, key) => (key === 'length' ? 2 ** 32 - 1 : (reads++, target[key])) });
  throwsExactly(t, () => queue.submit(k, long, [1]), TypeError, ErrorCode.KernelArgCount, 'a claimed length');
  t.is(reads, 0);
  const { proxy, revoke } = Proxy.revocable([m, m], { get: (target, key) => (key === '0' ? (revoke(), target[0]) : target[key]) });
  throwsExactly(t, () => queue.submit(program.getKernel('two'), proxy, [1]), TypeError, ErrorCode.KernelArgType, 'revoked while read');
  m.free();
});

onCpu(title('a foreign this: profiling getters, toString, dispose and inspect hooks are ERR_INVALID_THIS'), (t) => {
  const foreign = [{}, Object.create(SyclEvent.prototype)];
  const getter = (Class, name) => Object.getOwnPropertyDescriptor(Class.prototype, name).get;
  const custom = Symbol.for('nodejs.util.inspect.custom');
  const dispose = Symbol.dispose ?? Symbol.for('nodejs.dispose');
  for (const self of foreign) {
    for (const name of ['profilingInfoSubmit', 'profilingInfoStart', 'profilingInfoEnd']) {
      throwsExactly(t, () => getter(SyclEvent, name).call(self), TypeError, ErrorCode.InvalidThis, name);
    }
    throwsExactly(t, () => SyclEvent.prototype.toString.call(self), TypeError, ErrorCode.InvalidThis, 'SyclEvent toString');
    throwsExactly(t, () => KernelArg.prototype.toString.call(self), TypeError, ErrorCode.InvalidThis, 'KernelArg toString');
    throwsExactly(t, () => HostRegistration.prototype[dispose].call(self), TypeError, ErrorCode.InvalidThis, 'HostRegistration dispose');
    for (const Class of [SyclProgram, SyclKernel, SyclEvent, KernelArg, HostRegistration]) {
      throwsExactly(t, () => Class.prototype[custom].call(self), TypeError, ErrorCode.InvalidThis, `${Class.name} inspect`);
    }
  }
  // The real objects still print.
  const { queue, program } = setup();
  t.regex(inspect(kernelArg.int32(3)), /int32/);
  t.regex(String(kernelArg.int64(3n)), /3n/);
  t.regex(String(queue.submit(program.getKernel('empty'), [], [1])), /complete/);
  t.regex(inspect(program), /SyclProgram/);
});

onCpu(title('an event of another context as a dependency is ERR_KERNEL_QUEUE_MISMATCH'), async (t) => {
  const { queue, program } = setup();
  const other = new SyclQueue(new addon.SyclContext(cpu), cpu);
  const otherProgram = createProgramFromSource(other, SOURCE);
  const m = new MemoryUSMShared(64, { queue: other });
  const pending = queue.submitAsync(program.getKernel('empty'), [], [1]);
  const foreign = [await pending, queue.submitBarrier(), pending];
  for (const [i, dep] of foreign.entries()) {
    throwsExactly(t, () => other.submit(otherProgram.getKernel('one'), [m], [1], undefined, [dep]), Error, ErrorCode.KernelQueueMismatch, `submit ${i}`);
    throwsExactly(t, () => other.memcpy(m, m, 8, [dep]), Error, ErrorCode.KernelQueueMismatch, `memcpy ${i}`);
    throwsExactly(t, () => other.fill(m, kernelArg.int32(1), 1, [dep]), Error, ErrorCode.KernelQueueMismatch, `fill ${i}`);
    throwsExactly(t, () => other.submitBarrier([dep]), Error, ErrorCode.KernelQueueMismatch, `barrier ${i}`);
    throwsExactly(t, () => other.submitAsync(otherProgram.getKernel('one'), [m], [1], undefined, [dep]), Error, ErrorCode.KernelQueueMismatch, `submitAsync ${i}`);
  }
  // Another queue of the same context is fine.
  const sibling = new SyclQueue(other.syclContext, cpu);
  const event = sibling.submitBarrier();
  new Int32Array(m.buffer)[0] = 0;
  other.submit(otherProgram.getKernel('one'), [m], [1], undefined, [event]);
  t.is(new Int32Array(m.buffer)[0], 7);
  m.free();
});

// An adversarial review after the fixes above: a global range of 2^64 work items or more
// wrapped to a count the OpenCL CPU device divided by (SIGFPE); a SPIR-V module with an
// instruction of word count 0 left the build spinning forever; a NUL in an OpenCL C
// source dropped what followed it without a word. Children: a crash or a hang is the bug.
onCpu(title('a global range of 2^64 work items or more is ERR_INVALID_RANGE, not SIGFPE'), (t) => {
  const run = child(`
    const m = new MemoryUSMShared(64, { queue });
    const k = program.getKernel('one');
    report([[2 ** 32, 2 ** 32, 1], [2 ** 32, 2 ** 32, 2], [2 ** 32, 2 ** 32, 2 ** 32]].map((g) => caught(() => queue.submit(k, [m], g))));`);
  t.is(run.signal, null, run.stderr);
  t.is(run.status, 0, run.stderr);
  for (const error of run.result) {
    t.is(error?.code, 'ERR_INVALID_RANGE');
    t.regex(error.message, /2\^64 work items or more/);
  }
});

onCpu(title('a malformed SPIR-V module and an OpenCL C source with a NUL are build errors, never a hang or a silent cut'), (t) => {
  const run = child(`
    const module = (...instructions) => new Uint32Array([0x07230203, 0x00010000, 0, 100, 0, ...instructions]);
    report({
      zero: caught(() => addon.createProgramFromSpirv(queue, module(0, 0, 0))),
      past: caught(() => addon.createProgramFromSpirv(queue, module((4 << 16) | 17, 1))),
      short: caught(() => addon.createProgramFromSpirv(queue, new Uint8Array(22))),
      nul: caught(() => createProgramFromSource(queue, '__kernel void a(__global int *x) { x[0] = 1; }\\0__kernel void b(__global int *x) { x[0] = 2; }')),
    });`);
  t.is(run.signal, null, `a hang guard killed it, or it crashed: ${run.stderr}`);
  t.is(run.status, 0, run.stderr);
  const { zero, past, short, nul } = run.result;
  for (const [error, text] of [[zero, /word count of 0/], [past, /runs past/], [short, /22 bytes/], [nul, /NUL character at offset 46/]]) {
    t.is(error?.name, 'SyclProgramCompilationError', JSON.stringify(error));
    t.is(error.code, 'ERR_PROGRAM_COMPILATION');
    t.regex(error.message, text);
  }
});
