// The native hand-off (include/dpctl_memory.h): the example addon in examples/handoff,
// compiled here with the machine's C compiler against Node's own headers, takes memory
// objects from a napi_value, writes through the pointer on the CPU, refuses look-alikes
// and freed objects with their statuses, and holds memory with a reference past free()
// and GC until it releases it; on a CUDA device (the GPU suite) it launches a kernel
// through the driver on the memory's own context and stream. A test addon of two files,
// C and C++ (fixtures/handoff), checks what crosses files, misuse of references (in child
// processes) and two installed copies of the package.
import test from 'ava';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

function cxxCompiler() {
  for (const cxx of [process.env.CXX, 'c++', 'g++', 'clang++'].filter(Boolean)) {
    try {
      execFileSync(cxx, ['--version'], { stdio: 'ignore' });
      return cxx;
    } catch {}
  }
  return undefined;
}

const include = nodeInclude();
const cc = compiler();
const cxx = cxxCompiler();
const why = !include ? "Node's headers (node_api.h) are not on this machine" : !cc ? 'no C compiler' : undefined;
// The folders the test addons are built in: removed when the file's tests are done (a
// loaded addon's file may go; its mapping stays), so nothing is left in the temp folder.
const builtIn = [];
test.after.always(() => {
  for (const dir of builtIn) rmSync(dir, { recursive: true, force: true });
});
function buildFolder(prefix) {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  builtIn.push(dir);
  return dir;
}

let example;
function build() {
  if (example) return example;
  const out = path.join(buildFolder('dpctl-memory-handoff-'), 'handoff.node');
  execFileSync(cc, ['-shared', '-fPIC', '-O2', '-Wall', '-Werror', '-Wno-unused-function', `-I${include}`, `-I${path.join(ROOT, 'include')}`,
    path.join(ROOT, 'examples', 'handoff', 'addon.c'), '-o', out, '-ldl'], { stdio: 'pipe' });
  example = require(out);
  return example;
}

// The test addon of two files (__test__/fixtures/handoff): take.c (C) takes references,
// give.cc (C++) reads and releases them, so every check below crosses files and languages.
const FIXTURE = path.join(ROOT, '__test__', 'fixtures', 'handoff');
let fixturePath;
function buildFixture() {
  if (fixturePath) return require(fixturePath);
  const dir = buildFolder('dpctl-memory-handoff-fixture-');
  const flags = ['-fPIC', '-pthread', '-O2', '-Wall', '-Werror', `-I${include}`, `-I${path.join(ROOT, 'include')}`];
  execFileSync(cc, ['-c', ...flags, path.join(FIXTURE, 'take.c'), '-o', path.join(dir, 'take.o')], { stdio: 'pipe' });
  execFileSync(cxx, ['-c', ...flags, path.join(FIXTURE, 'give.cc'), '-o', path.join(dir, 'give.o')], { stdio: 'pipe' });
  const out = path.join(dir, 'fixture.node');
  execFileSync(cxx, ['-shared', '-pthread', path.join(dir, 'take.o'), path.join(dir, 'give.o'), '-o', out], { stdio: 'pipe' });
  fixturePath = out;
  return require(out);
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

const twoFiles = why || !cxx || !cpu ? test.skip : test;
const twoFilesSerial = why || !cxx || !cpu ? test.skip : test.serial;
const twoTitle = (text) => (!why && !cxx && cpu ? `${text} [no C++ compiler: skipped]` : title(text));

// Issue 39.11: the header kept the function table in a `static` per C file, so a file that
// had not called dpctl_memory_get itself read nothing (DPCTL_MEMORY_ARG) and released
// nothing: 100 MiB held after 100 rounds.
twoFilesSerial(twoTitle('a reference taken in one file (C) is read and released in another (C++)'), (t) => {
  const fixture = buildFixture();
  const queue = new SyclQueue(cpu);
  const before = addon.poolStats().shared.inUseBytes;
  const counts = { held: 0, read: 0, released: 0 };
  for (let round = 0; round < 100; round++) {
    const mem = new MemoryUSMShared(1 << 20, { queue });
    mem.memset(1);
    if (fixture.hold(0, mem) === 0) counts.held++;
    mem.free();
    if (fixture.sum(0) === 1 << 20) counts.read++;
    if (fixture.release(0) === 0) counts.released++;
  }
  t.deepEqual(counts, { held: 100, read: 100, released: 100 });
  t.is(addon.poolStats().shared.inUseBytes - before, 0, 'every reference was released');
  // And from a thread of the addon's own.
  const mem = new MemoryUSMShared(1 << 20, { queue });
  t.is(fixture.hold(2, mem), 0);
  mem.free();
  t.is(fixture.releaseOnThread(2), 0);
  t.is(fixture.staleRelease(2), 6, 'released once only');
  t.is(addon.poolStats().shared.inUseBytes - before, 0, 'released from another thread');
});

// Issue 39.11: a plain object carrying a hand-off value read from a memory object (live,
// or freed since) was accepted as that memory; the value is bound to the object it came
// from now, and its memory is looked up when it is read.
twoFiles(twoTitle('a hand-off value is memory only on the object it was read from, while that object lives'), (t) => {
  const fixture = buildFixture();
  const queue = new SyclQueue(cpu);
  const mem = new MemoryUSMShared(64, { queue });
  const other = new MemoryUSMShared(64, { queue });
  const value = mem.__dpctl_memory_handoff__;
  t.is(fixture.status(mem), 0);
  t.is(fixture.status({ __dpctl_memory_handoff__: value }), 1, "a live object's value on a plain object");
  t.is(fixture.hold(1, { __dpctl_memory_handoff__: value }), 1, 'no reference through a look-alike');
  t.is(fixture.info(1), 5, 'the slot stays empty (DPCTL_MEMORY_ARG)');
  Object.defineProperty(other, '__dpctl_memory_handoff__', { value });
  t.is(fixture.status(other), 1, "another memory object carrying this one's value");
  mem.free();
  t.is(fixture.status({ __dpctl_memory_handoff__: value }), 1, "a freed object's value on a plain object");
  Object.defineProperty(mem, '__dpctl_memory_handoff__', { value });
  t.is(fixture.status(mem), 2, 'a value read before free() says DPCTL_MEMORY_FREED afterwards');
  other.free();
  const frozen = Object.freeze(new MemoryUSMShared(64, { queue }));
  t.is(fixture.status(frozen), 0, 'a frozen object is branded too');
  frozen.free();
});

// The version gate the header's first two fields keep: an addon built against a header of
// another version (here the same header saying 1) is told so, and reads nothing.
run(title('an addon built against another version of the header gets DPCTL_MEMORY_VERSION'), (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-handoff-v1-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const header = readFileSync(path.join(ROOT, 'include', 'dpctl_memory.h'), 'utf8');
  const older = header.replace(/#define DPCTL_MEMORY_API_VERSION \d+/, '#define DPCTL_MEMORY_API_VERSION 1');
  t.not(older, header);
  writeFileSync(path.join(dir, 'dpctl_memory.h'), older);
  const out = path.join(dir, 'older.node');
  execFileSync(cc, ['-shared', '-fPIC', '-O2', `-I${include}`, `-I${dir}`, path.join(ROOT, 'examples', 'handoff', 'addon.c'), '-o', out, '-ldl'],
    { stdio: 'pipe' });
  const olderAddon = require(out);
  const mem = new MemoryUSMShared(64, { queue: new SyclQueue(cpu) });
  t.is(olderAddon.status(mem), 3);
  t.is(olderAddon.hold(mem), 3, 'no reference either');
  t.is(olderAddon.heldSum(), -1);
  mem.free();
});

const PACKAGE = path.join(ROOT, 'index.js');

function child(t, script) {
  const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 120_000 });
  t.is(result.signal, null, `the child ended by ${result.signal}: ${result.stderr}`);
  t.is(result.status, 0, result.stderr);
  return JSON.parse(result.stdout);
}

// Issue 39.11: a reference read after its release, or released twice, was a dangling
// pointer (SIGSEGV); references are ids now, checked by the library that made them.
twoFiles(twoTitle('a released reference read or released again is DPCTL_MEMORY_RELEASED, in a child process'), (t) => {
  buildFixture();
  const out = child(t, `
    const A = require(${JSON.stringify(PACKAGE)});
    const fixture = require(${JSON.stringify(fixturePath)});
    const queue = new A.SyclQueue(${JSON.stringify(cpu.filterString)});
    const out = {};
    const first = new A.MemoryUSMShared(4096, { queue });
    out.hold = fixture.hold(0, first);
    first.free();
    out.release = fixture.release(0);
    out.staleRelease = [fixture.staleRelease(0), fixture.staleRelease(0)];
    out.staleInfo = fixture.staleInfo(0);
    // A new reference in the same slot is not the released one's to release.
    const second = new A.MemoryUSMShared(4096, { queue });
    second.memset(1);
    out.again = fixture.hold(0, second);
    out.staleAgain = [fixture.staleInfo(0), fixture.staleRelease(0)];
    second.free();
    out.stillHeld = fixture.sum(0);
    out.releaseLast = fixture.release(0);
    // A slot that never held a reference: releasing nothing is fine, reading it is not.
    out.empty = [fixture.release(1), fixture.info(1)];
    process.stdout.write(JSON.stringify(out));
  `);
  t.deepEqual(out, {
    hold: 0, release: 0, staleRelease: [6, 6], staleInfo: 6, again: 0, staleAgain: [6, 6], stillHeld: 4096, releaseLast: 0,
    empty: [0, 5],
  });
});

const NODE_FILE = `${require('../package.json').napi.binaryName}.linux-x64-gnu.node`;
const SHIM_FILE = 'dpctl_memory_shim.so';
// Every SYCL shim built here (2026's too, where its runtime is installed).
const SHIM_FILES = [SHIM_FILE, 'dpctl_memory_shim_sycl9.so'].filter((file) => existsSync(path.join(ROOT, file)));
const installed = existsSync(path.join(ROOT, NODE_FILE)) && existsSync(path.join(ROOT, SHIM_FILE));
const twoCopies = installed ? twoFiles : test.skip;

// Issue 39.11: the header said "one dpctl-memory addon per process" though two installed
// copies of the package are supported: each hand-off value and each reference now names
// the copy that made it, so one addon serves both.
twoCopies(twoTitle('one addon takes, reads and releases references of two installed copies of the package'), (t) => {
  buildFixture();
  const copy = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-handoff-copy-'));
  t.teardown(() => rmSync(copy, { recursive: true, force: true }));
  for (const file of ['index.js', 'package.json', NODE_FILE, ...SHIM_FILES]) copyFileSync(path.join(ROOT, file), path.join(copy, file));
  cpSync(path.join(ROOT, 'lib'), path.join(copy, 'lib'), { recursive: true });
  const out = child(t, `
    const A = require(${JSON.stringify(PACKAGE)});
    const B = require(${JSON.stringify(path.join(copy, 'index.js'))});
    const fixture = require(${JSON.stringify(fixturePath)});
    const filter = ${JSON.stringify(cpu.filterString)};
    const used = (X) => X.poolStats().shared.inUseBytes;
    const before = [used(A), used(B)];
    const a = new A.MemoryUSMShared(1 << 20, { queue: new A.SyclQueue(filter) });
    const b = new B.MemoryUSMShared(1 << 20, { queue: new B.SyclQueue(filter) });
    a.memset(1);
    b.memset(2);
    const out = { distinct: A.MemoryUSMShared !== B.MemoryUSMShared };
    out.status = [fixture.status(a), fixture.status(b)];
    const decoy = new A.MemoryUSMShared(64, { queue: new A.SyclQueue(filter) });
    Object.defineProperty(decoy, '__dpctl_memory_handoff__', { value: b.__dpctl_memory_handoff__ });
    out.crossed = fixture.status(decoy);
    decoy.free();
    out.hold = [fixture.hold(0, a), fixture.hold(1, b)];
    a.free();
    b.free();
    out.sums = [fixture.sum(0), fixture.sum(1)];
    out.held = [used(A) - before[0] >= 1 << 20, used(B) - before[1] >= 1 << 20];
    out.release = [fixture.release(0), fixture.release(1)];
    out.left = [used(A) - before[0], used(B) - before[1]];
    out.stale = [fixture.staleInfo(0), fixture.staleInfo(1)];
    process.stdout.write(JSON.stringify(out));
  `);
  t.deepEqual(out, {
    distinct: true, status: [0, 0], crossed: 1, hold: [0, 0], sums: [1 << 20, 2 << 20], held: [true, true],
    release: [0, 0], left: [0, 0], stale: [6, 6],
  });
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
