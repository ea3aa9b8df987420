// mem.sharedBuffer: host and shared memory as one SharedArrayBuffer that postMessage hands
// to workers without a token, that TypedArrays and Atomics use there, and whose allocation
// is released once, after the last thread drops it. Where Node lacks external
// SharedArrayBuffers (Node 20), a coded error names the versions that have them; the
// suite's Node matrix runs the rest on Node 22, 24 and 26.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { eachDevice, queueFor, KINDS, MemoryUSMDevice, MemoryUSMHost, nodeHasSharedBuffers } from './helpers/addon.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const HOST_KINDS = KINDS.filter((k) => k.hostAccessible);

const SUPPORTED = nodeHasSharedBuffers();
const whereSupported = SUPPORTED ? test : test.skip;
const whereUnsupported = SUPPORTED ? test.skip : test;
const NOTE = SUPPORTED ? '' : ` [Node ${process.version} has no external SharedArrayBuffer; Node 22.23.5, 24.16 and 26.1 and later have it: skipped]`;

whereUnsupported(`on a Node without external SharedArrayBuffers, ERR_SHARED_BUFFER_UNSUPPORTED names this Node and the versions that have them${SUPPORTED ? ' [this Node has them: skipped]' : ''}`, (t) => {
  const mem = new MemoryUSMHost(16);
  const error = t.throws(() => mem.sharedBuffer);
  t.is(error.code, 'ERR_SHARED_BUFFER_UNSUPPORTED');
  t.true(error.message.includes(process.version), error.message);
  t.regex(error.message, /Node 24\.16, 26\.1 and later/);
  t.regex(error.message, /mem\.share\(\)/, 'says what works instead');
  mem.free();
});

for (const { kind, Class } of HOST_KINDS) {
  eachDevice(whereSupported, `${kind}: sharedBuffer is one SharedArrayBuffer over the same bytes as buffer${NOTE}`, (t, device) => {
    const mem = new Class(64, { queue: queueFor(device) });
    const sab = mem.sharedBuffer;
    t.true(sab instanceof SharedArrayBuffer);
    t.is(sab.byteLength, 64);
    t.is(mem.sharedBuffer, sab, 'the same object on every read');
    new Uint8Array(mem.buffer).fill(7);
    new Uint8Array(sab)[3] = 99;
    const back = new Uint8Array(64);
    mem.copyToHost(back);
    t.is(back[0], 7, 'writes through buffer are seen through the shared buffer');
    t.is(back[3], 99, 'writes through the shared buffer reach the memory');
    mem.free();
    t.is(sab.byteLength, 64, 'free() cannot take a SharedArrayBuffer back: it stays whole');
    t.is(t.throws(() => mem.sharedBuffer).code, 'ERR_USM_FREED');
  });
}

eachDevice(whereSupported, `a worker gets the buffer by postMessage and both sides count with Atomics${NOTE}`, async (t, device) => {
  const mem = new MemoryUSMHost(8, { queue: queueFor(device) });
  mem.memset(0);
  const counter = new Int32Array(mem.sharedBuffer);
  const worker = new Worker(`
    const { parentPort } = require('node:worker_threads');
    parentPort.once('message', (sab) => {
      const counter = new Int32Array(sab);
      for (let i = 0; i < 1000; i += 1) Atomics.add(counter, 0, 1);
      // Wait until the main thread has counted too, then report what both did.
      Atomics.wait(counter, 1, 0);
      parentPort.postMessage(Atomics.load(counter, 0));
    });`, { eval: true });
  const reported = new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  worker.postMessage(mem.sharedBuffer);
  for (let i = 0; i < 1000; i += 1) Atomics.add(counter, 0, 1);
  Atomics.store(counter, 1, 1);
  Atomics.notify(counter, 1);
  t.is(await reported, 2000, 'no increment lost between the threads');
  const back = new Int32Array(2);
  mem.copyToHost(back);
  t.deepEqual(Array.from(back), [2000, 1], 'the library reads what both threads wrote');
  await worker.terminate();
  mem.free();
});

// (Memory another library's exporter owns is refused too: a cargo test of the model's
// `shared_view`, since nothing on the CPU device here allocates USM but this library.)
whereSupported(`device memory cannot be a SharedArrayBuffer${NOTE}`, (t) => {
  const device = new MemoryUSMDevice(16);
  t.is(t.throws(() => device.sharedBuffer).code, 'ERR_NOT_HOST_ACCESSIBLE');
  device.free();
});

whereSupported(`the allocation is released once, after the main thread and both workers dropped it${NOTE}`, (t) => {
  const child = spawnSync(process.execPath, ['--expose-gc', path.join(HERE, 'fixtures', 'shared-buffer-release.mjs')], {
    encoding: 'utf8', timeout: 5 * 60 * 1000,
  });
  t.is(child.status, 0, child.stderr);
  const steps = JSON.parse(child.stdout.trim().split('\n').pop());
  t.is(steps.counted, 2, 'each worker saw the buffer');
  t.is(steps.afterMainDropped, steps.baseline + (1 << 20), 'held while the workers have it, though freed and dropped here');
  t.is(steps.afterFirstWorkerDropped, steps.baseline + (1 << 20), 'held while one worker still has it');
  t.is(steps.afterLastDropped, steps.baseline, 'released once the last thread dropped it');
  t.deepEqual([steps.allocations, steps.frees], [1, 1], 'allocated once, freed once');
});

whereSupported(`a process ends with its own status while workers still hold the buffer${NOTE}`, (t) => {
  const script = `
    const { Worker } = require('node:worker_threads');
    const { MemoryUSMShared } = require(${JSON.stringify(path.join(HERE, '..', 'index.js'))});
    const mem = new MemoryUSMShared(1 << 16);
    const worker = new Worker("const { parentPort } = require('node:worker_threads'); parentPort.once('message', (b) => { globalThis.kept = b; parentPort.postMessage(1); })", { eval: true });
    worker.postMessage(mem.sharedBuffer);
    worker.once('message', () => {
      mem.free();
      if (process.argv[1] === 'exit') process.exit(3);
      else worker.unref();
    });`;
  for (const how of ['exit', 'end']) {
    const child = spawnSync(process.execPath, ['-e', script, how], { encoding: 'utf8', timeout: 5 * 60 * 1000 });
    t.is(child.status, how === 'exit' ? 3 : 0, `${how}: ${child.stderr}`);
    t.is(child.signal, null);
  }
});
