// The Node libraries users already have, taking this memory without a copy:
// examples/arrow.mjs (apache-arrow) and examples/onnx.mjs (onnxruntime-node, CPU execution
// provider), at the versions scripts/clients/package-lock.json pins, installed into the
// per-user cache on first use (scripts/install-clients.js). Each example runs as written in
// a project of its own (a temporary folder whose node_modules links the cached libraries and
// this checkout), and each no-copy claim is checked in a child process of its own: the
// library's data is the memory's own ArrayBuffer, what is written through the memory object
// is what the library reads (and what the library writes, the memory object sees), and the
// process's RSS (for an inference, its peak) and V8's external memory do not grow by the
// data's size. Skipped, with the reason in the titles, where the libraries cannot be
// installed (DPCTL_MEMORY_SKIP_CLIENT_TEST=1, no npm, no registry) or there is no device.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { getDevices } = require('../index.js');
const { installClients, pinned } = require('../scripts/install-clients.js');

const VERSIONS = pinned();
const MiB = 2 ** 20;
const hasCpu = getDevices().some((d) => d.filterString === 'opencl:cpu:0');
// The CPU device where there is one; else the default device.
const env = hasCpu ? { ...process.env, ONEAPI_DEVICE_SELECTOR: 'opencl:cpu' } : process.env;

async function setup() {
  if (process.env.DPCTL_MEMORY_SKIP_CLIENT_TEST === '1') return { skip: 'DPCTL_MEMORY_SKIP_CLIENT_TEST=1' };
  if (getDevices().length === 0) return { skip: 'no device' };
  try {
    return { modules: await installClients({ log: (line) => console.log(`# ${line}`) }) };
  } catch (error) {
    return { skip: `${Object.keys(VERSIONS).join(' and ')} could not be installed: ${error.message.slice(0, 300)}` };
  }
}

const clients = await setup();
if (clients.skip) console.log(`# the client examples' tests are skipped: ${clients.skip}`);
// One at a time: each child holds up to 256 MiB, and the machine may have two cores.
const declare = (title, fn) => (clients.skip ? test.skip(`${title} [${clients.skip}: skipped]`, fn) : test.serial(title, fn));

/**
 * Runs `script` (an ES module's text) in a fresh project that has the cached libraries, this
 * checkout as `dpctl-memory` and `examples/<example>` beside it (`script` null: the example
 * itself); `flags` go to node, `argv` to the script.
 * Returns the child's result; the project is removed.
 */
function runInProject(t, example, script, { flags = [], argv = [] } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-clients-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(path.join(dir, 'node_modules'));
  for (const name of Object.keys(VERSIONS)) symlinkSync(path.join(clients.modules, name), path.join(dir, 'node_modules', name));
  symlinkSync(ROOT, path.join(dir, 'node_modules', 'dpctl-memory'));
  copyFileSync(path.join(ROOT, 'examples', example), path.join(dir, example));
  const file = script === null ? example : 'check.mjs';
  if (script !== null) writeFileSync(path.join(dir, file), script);
  // A hang guard only.
  return spawnSync(process.execPath, [...flags, file, ...argv], { cwd: dir, env, encoding: 'utf8', timeout: 240_000, killSignal: 'SIGKILL' });
}

/** The last line of a child's stdout as JSON, after asserting it exited cleanly. */
function result(t, child) {
  t.is(child.status, 0, `exit ${child.status} (${child.signal ?? 'no signal'}):\n${child.stderr}`);
  return JSON.parse(child.stdout.trim().split('\n').pop());
}

const ARROW = `apache-arrow ${VERSIONS['apache-arrow']}`;
const ONNX = `onnxruntime-node ${VERSIONS['onnxruntime-node']}`;

declare(`examples/arrow.mjs runs as written (${ARROW})`, (t) => {
  const child = runInProject(t, 'arrow.mjs', null);
  t.is(child.status, 0, child.stderr);
  t.is(child.stderr, '');
  t.deepEqual(child.stdout.trim().split('\n'), ['1000 {"x":1.5,"id":3}', '42', 'true', 'true']);
});

const ARROW_VIEWS = `
import { vectorOver, tableOver } from './arrow.mjs';
import { MemoryUSMHost, MemoryUSMShared } from 'dpctl-memory';
const SIZE = 64 * 2 ** 20;
const Kind = { host: MemoryUSMHost, shared: MemoryUSMShared }[process.argv[2]];
const mem = new Kind(SIZE);
new Float64Array(mem.buffer).fill(1);                 // every page touched: in RSS from here
globalThis.gc();
const before = process.memoryUsage();
const vector = vectorOver(mem, Float64Array);
const table = tableOver({ a: [mem, Float64Array] });
mem.copyFromHost(Float64Array.of(5));                 // written through the memory object
let sum = 0;
for (const value of vector) sum += value;             // Arrow reads every value
const tableSum = table.getChild('a').toArray().reduce((a, b) => a + b, 0);
globalThis.gc();
const after = process.memoryUsage();
vector.set(1, 7);                                     // written by Arrow
const seen = new Float64Array(mem.copyToHost().buffer)[1];
console.log(JSON.stringify({
  length: vector.length, sum, tableSum, seen,
  sameBuffer: vector.data[0].values.buffer === mem.buffer && table.getChild('a').data[0].values.buffer === mem.buffer,
  rss: after.rss - before.rss, external: after.external - before.external,
}));
mem.free();
`;

for (const kind of ['shared', 'host']) {
  declare(`${ARROW}: a vector and a table over 64 MiB of ${kind} memory are views of it, no copy (RSS and external memory do not grow by its size; Arrow reads what the memory object wrote, the memory object sees what Arrow wrote)`, (t) => {
    const facts = result(t, runInProject(t, 'arrow.mjs', ARROW_VIEWS, { flags: ['--expose-gc'], argv: [kind] }));
    t.log(`RSS ${(facts.rss / MiB).toFixed(1)} MiB, external ${(facts.external / MiB).toFixed(1)} MiB for 64 MiB of data`);
    const n = (64 * MiB) / 8;
    t.is(facts.length, n);
    t.true(facts.sameBuffer, "the vector's and the table's values are the memory's own ArrayBuffer");
    t.is(facts.sum, n - 1 + 5, 'Arrow read the value written through the memory object');
    t.is(facts.tableSum, n - 1 + 5);
    t.is(facts.seen, 7, 'the memory object sees what Arrow wrote');
    t.true(facts.rss < 32 * MiB, `RSS grew by ${facts.rss} bytes`);
    t.true(facts.external < 32 * MiB, `external memory grew by ${facts.external} bytes`);
  });
}

const ARROW_BATCH = `
import { makeVector, Table, Utf8, vectorFromArray } from 'apache-arrow';
import { batchToDevice, batchFromDevice } from './arrow.mjs';
const rows = 100_000;
const names = Array.from({ length: rows }, (_, i) => (i % 7 === 0 ? null : 'row ' + i.toString(36).repeat(1 + (i % 3))));
const batch = new Table({
  name: vectorFromArray(names, new Utf8()),
  v: makeVector(Float64Array.from({ length: rows }, (_, i) => i * 0.25)),
  k: makeVector(Int32Array.from({ length: rows }, (_, i) => -i)),
}).batches[0];
const onDevice = batchToDevice(batch);
const kinds = onDevice.flatMap((c) => [c.values, c.validity, c.offsets]).filter(Boolean).map((m) => m.getUsmType());
const back = batchFromDevice(onDevice);
const columns = back.batch.data.children;
const views = columns.flatMap((c) => [c.values, c.nullBitmap, c.valueOffsets]).filter((v) => v && v.byteLength > 0);
console.log(JSON.stringify({
  kinds: [...new Set(kinds)],
  buffers: kinds.length,
  same: JSON.stringify(back.batch.toArray()) === JSON.stringify(batch.toArray()),
  nulls: back.batch.getChild('name').nullCount,
  inHostMemory: views.every((v) => back.host.some((m) => m.buffer === v.buffer)),
  hostKinds: [...new Set(back.host.map((m) => m.getUsmType()))],
}));
for (const c of onDevice) for (const m of [c.values, c.validity, c.offsets]) m?.free();
for (const m of back.host) m.free();
`;

declare(`${ARROW}: a record batch's buffers (values, validity, offsets) go to MemoryUSMDevice memory and back, and the batch read in place from MemoryUSMHost memory is the same`, (t) => {
  const facts = result(t, runInProject(t, 'arrow.mjs', ARROW_BATCH));
  t.deepEqual(facts.kinds, ['device']);
  t.is(facts.buffers, 5, 'name: values, validity, offsets; v: values; k: values');
  t.true(facts.same, 'the batch came back unchanged');
  t.is(facts.nulls, Math.ceil(100_000 / 7));
  t.true(facts.inHostMemory, "every buffer of the new batch is a host memory object's own ArrayBuffer");
  t.deepEqual(facts.hostKinds, ['host']);
});

declare(`examples/onnx.mjs runs as written (${ONNX}, CPU execution provider)`, (t) => {
  const child = runInProject(t, 'onnx.mjs', null);
  t.is(child.status, 0, child.stderr);
  t.deepEqual(child.stdout.trim().split('\n'), ['17', '32 11']);
});

// One kind per process: the peak RSS before the inference is then the 128 MiB just touched.
const ONNX_INPUT = `
import ort from 'onnxruntime-node';
import { oneNodeModel, tensorOver } from './onnx.mjs';
import { MemoryUSMHost, MemoryUSMShared } from 'dpctl-memory';
const SIZE = 128 * 2 ** 20;
const Kind = { host: MemoryUSMHost, shared: MemoryUSMShared }[process.argv[2]];
const session = await ort.InferenceSession.create(oneNodeModel('ReduceSum', ['x'], 's', [1]), { executionProviders: ['cpu'] });
const small = new Kind(64);
small.memset(0);
await session.run({ x: tensorOver(small) });          // the session's first run, before measuring
const mem = new Kind(SIZE);
// Written by the CPU, so every page is in RSS from here (on a GPU, shared memory that the
// device wrote would migrate to the host when onnxruntime reads it: not a copy, but RSS).
new Float32Array(mem.buffer).fill(0);
const x = tensorOver(mem);
globalThis.gc();
const before = process.memoryUsage();
const peakBefore = process.resourceUsage().maxRSS * 1024;
const first = (await session.run({ x })).s.data[0];
mem.copyFromHost(Float32Array.of(1.5, 2.5));          // written through the memory object,
new Float32Array(mem.buffer)[SIZE / 4 - 1] = 4;       // and through its buffer, after the tensor was made
const second = (await session.run({ x })).s.data[0];
const peakAfter = process.resourceUsage().maxRSS * 1024;
globalThis.gc();
const after = process.memoryUsage();
console.log(JSON.stringify({ first, second, sameBuffer: x.data.buffer === mem.buffer, peak: peakAfter - peakBefore, rss: after.rss - before.rss, external: after.external - before.external }));
await session.release();
mem.free();
small.free();
`;

for (const kind of ['host', 'shared']) {
  declare(`${ONNX}: an input tensor over 128 MiB of ${kind} memory is read in place (the peak RSS and external memory do not grow by its size; the sum is of the bytes written through the memory object after the tensor was made)`, (t) => {
    const facts = result(t, runInProject(t, 'onnx.mjs', ONNX_INPUT, { flags: ['--expose-gc'], argv: [kind] }));
    t.log(`peak RSS ${(facts.peak / MiB).toFixed(1)} MiB, RSS ${(facts.rss / MiB).toFixed(1)} MiB, external ${(facts.external / MiB).toFixed(1)} MiB for 128 MiB of input`);
    t.true(facts.sameBuffer, "the tensor's data is the memory's own ArrayBuffer");
    t.is(facts.first, 0);
    t.is(facts.second, 8, 'onnxruntime summed the bytes written through the memory object');
    t.true(facts.peak < 64 * MiB, `the peak RSS grew by ${facts.peak} bytes during the inferences`);
    t.true(facts.rss < 64 * MiB, `RSS grew by ${facts.rss} bytes`);
    t.true(facts.external < 64 * MiB, `external memory grew by ${facts.external} bytes`);
  });
}

const ONNX_OUTPUT = `
import ort from 'onnxruntime-node';
import { oneNodeModel, tensorOver } from './onnx.mjs';
import { MemoryUSMHost, MemoryUSMShared } from 'dpctl-memory';
const SIZE = 64 * 2 ** 20;
const n = SIZE / 4;
const session = await ort.InferenceSession.create(oneNodeModel('Add', ['x', 'y'], 'z'), { executionProviders: ['cpu'] });
const x = new MemoryUSMHost(SIZE);
const y = new MemoryUSMShared(SIZE);
const z = new MemoryUSMShared(SIZE);
// Written by the CPU (see above): every page in RSS before the run.
new Float32Array(x.buffer).fill(0);
new Float32Array(y.buffer).fill(0);
new Uint8Array(z.buffer).fill(0xff);                  // NaN everywhere until onnxruntime writes it
x.copyFromHost(Float32Array.of(1, 2, 3));
new Float32Array(y.buffer).fill(0.5, n - 4);
const [tx, ty, tz] = [x, y, z].map(tensorOver);
const small = [64, 64, 64].map((bytes, i) => new [MemoryUSMHost, MemoryUSMShared, MemoryUSMShared][i](bytes));
for (const m of small) m.memset(0);
await session.run({ x: tensorOver(small[0]), y: tensorOver(small[1]) }, { z: tensorOver(small[2]) }); // first run
globalThis.gc();
const peakBefore = process.resourceUsage().maxRSS * 1024;
const results = await session.run({ x: tx, y: ty }, { z: tz });
const peakAfter = process.resourceUsage().maxRSS * 1024;
const written = new Float32Array(z.copyToHost().buffer);
let nan = 0;
for (const v of written) if (Number.isNaN(v)) nan++;
console.log(JSON.stringify({
  head: Array.from(written.subarray(0, 4)), tail: Array.from(written.subarray(n - 5)), nan,
  returnedIsCopy: results.z.data.buffer !== z.buffer && results.z.data[1] === 2,
  peak: peakAfter - peakBefore,
}));
await session.release();
for (const m of [x, y, z, ...small]) m.free();
`;

declare(`${ONNX}: an output preallocated in MemoryUSMShared memory (fetches) is written there in place; the returned tensor is a copy of it (the peak RSS grows by that copy only)`, (t) => {
  const facts = result(t, runInProject(t, 'onnx.mjs', ONNX_OUTPUT, { flags: ['--expose-gc'] }));
  t.log(`peak RSS ${(facts.peak / MiB).toFixed(1)} MiB for a 64 MiB output`);
  t.deepEqual(facts.head, [1, 2, 3, 0], 'the memory object sees what onnxruntime wrote');
  t.deepEqual(facts.tail, [0, 0.5, 0.5, 0.5, 0.5]);
  t.is(facts.nan, 0, 'every element was written');
  t.true(facts.returnedIsCopy, "onnxruntime-node returns a new tensor, a copy (the README says so)");
  t.true(facts.peak < 96 * MiB, `the peak RSS grew by ${facts.peak} bytes: more than the returned copy of 64 MiB`);
});
