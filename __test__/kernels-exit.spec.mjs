// What happens to kernels still running when their process or worker ends, and programs
// with no kernels. Each ending runs in a child process: the process must end with its own
// status (0 after process.exit(0), 1 after an uncaught error), never with a signal, however
// much work is in flight; a worker's teardown waits for the work it started. The kernels
// are long (a loop of millions of steps each, 64 of them) so that they are still running
// when the child ends; the verdicts are exit statuses and counts, never times.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { addon, DEVICES, SyclQueue } from './helpers/addon.mjs';

const { createProgramFromSource, SyclProgramCompilationError } = addon;

const INDEX = fileURLToPath(new URL('../index.js', import.meta.url));
/** A hang guard only: the child's work takes a few seconds where it runs at all. */
const HANG_GUARD_MS = 300000;

const cpu = DEVICES.find((d) => d.backend === 'opencl' && d.deviceType === 'cpu');
const gpu = DEVICES.find((d) => d.backend === 'cuda');

// One long kernel per device kind: a loop whose result is stored, so it is not optimised
// away. `n` steps each.
const KINDS = [
  {
    name: 'OpenCL CPU',
    device: cpu,
    steps: 2000000,
    program: `a.createProgramFromSource(q, '__kernel void spin(__global int *o, int n) { int acc = 0; ' +
      'for (int i = 0; i < n; i++) acc = acc * 1664525 + 1013904223 + i; o[get_global_id(0)] = acc; }')`,
  },
  {
    name: 'CUDA',
    device: gpu,
    steps: 20000000,
    program: `a.createProgramFromCuda(q, 'extern "C" __global__ void spin(int *o, int n) { int acc = 0; ' +
      'for (int i = 0; i < n; i++) acc = acc * 1664525 + 1013904223 + i; o[threadIdx.x] = acc; }')`,
  },
];

/** The child's lines that put 64 long kernels in flight on `kind`'s device (`a`, `q`, `m`). */
function inFlight(kind, index = INDEX) {
  return `
    const a = require(${JSON.stringify(index)});
    const q = new a.SyclQueue(${JSON.stringify(kind.device.filterString)});
    const p = ${kind.program};
    const k = p.getKernel('spin');
    const m = new a.MemoryUSMShared(64 * 4, { queue: q });
    for (let i = 0; i < 64; i++) q.submitAsync(k, [m, a.kernelArg.int32(${kind.steps})], [1]).catch(() => {});
    console.log('submitted');`;
}

function child(script) {
  return spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: HANG_GUARD_MS });
}

function ended(t, run, status, what) {
  const detail = `${what}: status ${run.status}, signal ${run.signal}; stderr: ${run.stderr.slice(-2000)}`;
  t.true(run.stdout.includes('submitted'), detail);
  t.is(run.signal, null, detail);
  t.is(run.status, status, detail);
}

for (const kind of KINDS) {
  const on = kind.device ? test : test.skip;
  const title = (text) => (kind.device ? `${text} [${kind.device.filterString}]` : `${text} [no ${kind.name} device: skipped]`);

  on(title('process.exit(0) with 64 long kernels in flight ends with status 0, not SIGSEGV'), (t) => {
    ended(t, child(`${inFlight(kind)}\n    process.exit(0);`), 0, 'process.exit(0)');
  });

  on(title('process.exit(7) with kernels in flight ends with status 7'), (t) => {
    ended(t, child(`${inFlight(kind)}\n    process.exit(7);`), 7, 'process.exit(7)');
  });

  on(title('an uncaught error with kernels in flight ends with status 1, not SIGSEGV'), (t) => {
    const run = child(`${inFlight(kind)}\n    throw new Error('boom: uncaught');`);
    ended(t, run, 1, 'an uncaught error');
    t.true(run.stderr.includes('boom: uncaught'), 'node reported the error itself');
  });

  on(title('a worker terminated with kernels in flight: its teardown waits for them, and the main thread ends with 0'), (t) => {
    // The worker's memory is held by its running kernels; its teardown waits for them and
    // then gives everything back, so once terminate() resolves nothing of it is in use.
    const script = `
      const { Worker } = require('node:worker_threads');
      const a = require(${JSON.stringify(INDEX)});
      const worker = new Worker(${JSON.stringify(`${inFlight(kind)}
        require('node:worker_threads').parentPort.postMessage('running');
        setInterval(() => {}, 1000);`)}, { eval: true, stdout: false });
      worker.on('message', async () => {
        await worker.terminate();
        const s = a.poolStats();
        console.log('in use after terminate: ' + (s.device.inUseBytes + s.host.inUseBytes + s.shared.inUseBytes));
      });`;
    const run = child(script);
    ended(t, run, 0, 'the main thread returned');
    t.regex(run.stdout, /in use after terminate: 0\n/, run.stdout);
  });
}

// --- Programs with no kernels: dpctl builds them; asking for a kernel is the lookup error.

const onCpu = cpu ? test : test.skip;
const cpuTitle = (text) => (cpu ? `${text} [${cpu.filterString}]` : `${text} [no OpenCL CPU device present: skipped]`);

onCpu(cpuTitle("createProgramFromSource(queue, '') builds a program with no kernels (was SIGSEGV)"), (t) => {
  const run = child(`
    const a = require(${JSON.stringify(INDEX)});
    const q = new a.SyclQueue(${JSON.stringify(cpu?.filterString)});
    const p = a.createProgramFromSource(q, '');
    let code;
    try { p.getKernel('k'); } catch (e) { code = e.code; }
    console.log(JSON.stringify({ names: p.kernelNames, has: p.hasKernel('k'), code }));`);
  t.is(run.signal, null, run.stderr);
  t.is(run.status, 0, run.stderr);
  t.deepEqual(JSON.parse(run.stdout), { names: [], has: false, code: 'ERR_KERNEL_NOT_FOUND' });
});

onCpu(cpuTitle('a source of blanks, comments or helper functions only is a program with no kernels'), (t) => {
  const queue = new SyclQueue(cpu);
  for (const source of [' ', '\n\t\n', '// nothing here\n', 'int twice(int x) { return 2 * x; }']) {
    const program = createProgramFromSource(queue, source);
    t.deepEqual(program.kernelNames, [], JSON.stringify(source));
    t.false(program.hasKernel('twice'));
    const err = t.throws(() => program.getKernel('twice'), { code: 'ERR_KERNEL_NOT_FOUND' });
    t.regex(err.message, /no kernel named 'twice' \(it has: none\)/);
  }
  // A source that does not compile is still the build error, with the compiler's log.
  t.throws(() => createProgramFromSource(queue, 'this is not OpenCL C'), { instanceOf: SyclProgramCompilationError });
});
