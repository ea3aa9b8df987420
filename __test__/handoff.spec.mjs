// The native hand-off (include/dpctl_memory.h): the example addon in examples/handoff,
// compiled here with the machine's C compiler against Node's own headers, takes memory
// objects from a napi_value, writes through the pointer on the CPU, refuses look-alikes
// and freed objects with their statuses, and holds memory with a reference past free()
// and GC until it releases it; on a CUDA device (the GPU suite) it launches a kernel
// through the driver on the memory's own context and stream.
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { addon, DEVICES, MemoryUSMShared, MemoryUSMHost, MemoryUSMDevice, SyclQueue } from './helpers/addon.mjs';

const require = createRequire(import.meta.url);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Node's own headers: beside the running node (official builds, Debian's nodejs). */
function nodeInclude() {
  const candidates = [
    path.join(path.dirname(path.dirname(process.execPath)), 'include', 'node'),
    '/usr/include/node',
    '/usr/local/include/node',
  ];
  return candidates.find((dir) => existsSync(path.join(dir, 'node_api.h')));
}

function compiler() {
  for (const cc of [process.env.CC, 'cc', 'gcc', 'clang'].filter(Boolean)) {
    try {
      execFileSync(cc, ['--version'], { stdio: 'ignore' });
      return cc;
    } catch {}
  }
  return undefined;
}

const include = nodeInclude();
const cc = compiler();
const why = !include ? "Node's headers (node_api.h) are not on this machine" : !cc ? 'no C compiler' : undefined;
let example;
function build() {
  if (example) return example;
  const out = path.join(mkdtempSync(path.join(tmpdir(), 'dpctl-memory-handoff-')), 'handoff.node');
  execFileSync(cc, ['-shared', '-fPIC', '-O2', '-Wall', '-Werror', '-Wno-unused-function', `-I${include}`, `-I${path.join(ROOT, 'include')}`,
    path.join(ROOT, 'examples', 'handoff', 'addon.c'), '-o', out, '-ldl'], { stdio: 'pipe' });
  example = require(out);
  return example;
}

const cpu = DEVICES.find((d) => d.deviceType === 'cpu');
const run = why || !cpu ? test.skip : test;
const runSerial = why || !cpu ? test.skip : test.serial;
const title = (text) => (why ? `${text} [${why}: skipped]` : !cpu ? `${text} [no CPU device: skipped]` : `${text} [${cpu.filterString}]`);

run(title('the example addon writes through the pointer of every kind on the CPU device'), (t) => {
  const handoff = build();
  const queue = new SyclQueue(cpu);
  for (const Class of [MemoryUSMShared, MemoryUSMHost, MemoryUSMDevice]) {
    const mem = new Class(4096, { queue });
    t.is(handoff.fill(mem, 0x5a), 4096);
    t.true(mem.toBytes().every((b) => b === 0x5a), Class.name);
    const facts = handoff.describe(mem);
    t.is(facts.status, 0);
    t.is(facts.nbytes, 4096);
    t.is(facts.kind, { MemoryUSMDevice: 1, MemoryUSMShared: 2, MemoryUSMHost: 3 }[Class.name]);
    t.is(facts.backend, 1, 'SYCL');
    t.is(facts.filterString, cpu.filterString);
    t.true(facts.hasQueue, 'the sycl::queue pointer is given');
    t.true(facts.hostAccessible);
    mem.free();
  }
});

run(title('look-alikes and freed objects are refused with their statuses'), (t) => {
  const handoff = build();
  const mem = new MemoryUSMShared(64, { queue: new SyclQueue(cpu) });
  t.is(handoff.status(mem), 0);
  t.is(handoff.status({}), 1);
  t.is(handoff.status(42), 1);
  t.is(handoff.status({ __dpctl_memory_handoff__: {} }), 1, 'duck typing is refused');
  const stolen = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(MemoryUSMShared.prototype), '__dpctl_memory_handoff__');
  t.truthy(stolen);
  t.is(handoff.status({ get __dpctl_memory_handoff__() { return {}; } }), 1);
  mem.free();
  t.is(handoff.status(mem), 2, 'a freed object says so');
  t.throws(() => handoff.fill(mem, 1), { message: /status 2/ });
});

runSerial(title('a reference holds the memory past free() and GC until released'), async (t) => {
  const handoff = build();
  const queue = new SyclQueue(cpu);
  const before = addon.poolStats().shared.inUseBytes;
  let mem = new MemoryUSMShared(1000, { queue });
  new Uint8Array(mem.buffer).fill(3);
  t.is(handoff.hold(mem), 0);
  mem.free();
  mem = null;
  globalThis.gc?.();
  await new Promise((resolve) => setImmediate(resolve));
  t.is(handoff.heldSum(), 3000, 'the held bytes are intact');
  t.true(addon.poolStats().shared.inUseBytes >= before + 1000, 'the allocation is still in use');
  handoff.releaseHeld();
  t.is(handoff.heldSum(), -1);
});

const gpu = DEVICES.find((d) => d.backend === 'cuda');
const onGpu = why || !gpu ? test.skip : test;
const gpuTitle = (text) => (why ? `${text} [${why}: skipped]` : !gpu ? `${text} [no device with backend 'cuda': skipped]` : `${text} [${gpu.filterString}]`);

onGpu(gpuTitle('on CUDA the example addon launches a kernel on the hand-off\'s context and stream'), (t) => {
  const handoff = build();
  const queue = new SyclQueue(gpu);
  const mem = new MemoryUSMDevice((1 << 20) + 7, { queue });
  mem.memset(0);
  const facts = handoff.describe(mem);
  t.is(facts.status, 0);
  t.is(facts.backend, 2, 'CUDA');
  t.true(facts.hasQueue, 'the CUstream is given');
  t.false(facts.hostAccessible);
  t.is(handoff.cudaFill(mem, 0xa5), (1 << 20) + 7);
  t.true(mem.toBytes().every((b) => b === 0xa5), 'every byte written by the kernel');
  t.throws(() => handoff.fill(mem, 1), { message: /cannot be written from the CPU/ });
  mem.free();
  t.throws(() => handoff.cudaFill(mem, 1), { message: /status 2/ });
  if (cpu) t.throws(() => handoff.cudaFill(new MemoryUSMShared(64, { queue: new SyclQueue(cpu) }), 1), { message: /CUDA device/ });
});

test('the header ships with the package', (t) => {
  const manifest = require('../package.json');
  t.true(manifest.files.includes('include/dpctl_memory.h'));
  t.true(existsSync(path.join(ROOT, 'include', 'dpctl_memory.h')));
});
