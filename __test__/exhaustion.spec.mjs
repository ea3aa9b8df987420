// Running out of memory: each kind allocated until the runtime refuses, in a child process
// whose address space is capped (so the machine itself never runs short), must give a coded
// USMAllocationError, never a crash or an abort, and the process must recover; and with
// blocks cached in the pool, an allocation that fits only once the pool gives them back
// must succeed (the pool trims itself and retries).
//
// How the cap works: the child warms up (runtime loaded, worker threads started), then sets
// its own soft RLIMIT_AS (`prlimit --pid`) to its current virtual size + K blocks of 256 MiB
// + a 192 MiB reserve. The reserve is smaller than a block, so exactly K blocks fit and the
// next is refused by the runtime, and V8 and the runtime's threads keep 192 MiB to breathe:
// with less, V8's own garbage collector aborts the process (`Committing semi space failed`,
// `std::bad_alloc` from its marking threads), which says nothing about this library.
// MALLOC_ARENA_MAX=2 stops glibc from reserving 64 MiB of address space for each new
// thread's arena, which would eat the reserve. Blocks are never touched, so the requested
// total (at most 1 GiB of address space) costs no physical memory.
//
// The CPU device (opencl:cpu) only: on a GPU, device memory is not address space.
import test from 'ava';
import os from 'node:os';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { getDevices } from './helpers/addon.mjs';

const INDEX = fileURLToPath(new URL('../index.js', import.meta.url));
const MiB = 2 ** 20;
const GiB = 2 ** 30;
const BLOCK = 256 * MiB; // the largest pooled size class
const K = 3;
const RESERVE = 192 * MiB;
const KINDS = ['device', 'shared', 'host'];

const CPU = (() => {
  try {
    return getDevices('opencl:cpu').length > 0;
  } catch {
    return false;
  }
})();
const PRLIMIT = spawnSync('prlimit', ['--version'], { encoding: 'utf8' }).status === 0;
const WHY_NOT = process.platform !== 'linux' ? 'not Linux' : !PRLIMIT ? 'no prlimit (util-linux) on PATH' : !CPU ? 'no opencl:cpu device' : null;

const CHILD = `
'use strict';
const a = require(${JSON.stringify(INDEX)});
const fs = require('node:fs');
const { spawnSync } = require('node:child_process');
const MiB = 2 ** 20;
const { kind, mode, block, k, reserve, request } = JSON.parse(process.env.EXHAUSTION_ARGS);
const vsz = () => Number(/VmSize:\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
const Class = { host: a.MemoryUSMHost, shared: a.MemoryUSMShared, device: a.MemoryUSMDevice }[kind];
const queue = new a.SyclQueue('opencl:cpu');
const out = { kind, mode };
const describe = (e) => e && { name: e.constructor && e.constructor.name, code: e.code, isUSMAllocationError: e instanceof a.USMAllocationError, isError: e instanceof Error, message: String(e.message) };
const stats = () => a.poolStats()[kind];

async function main() {
  // Warm up: the runtime, the pool, the libuv and runtime threads, sync and async paths.
  for (let i = 0; i < 4; i++) {
    const w = new Class(MiB, { queue });
    await w.memsetAsync(1);
    w.copyToHost();
    await w.copyToHostAsync();
    w.memset(2);
    w.free();
  }
  await new Promise((r) => setTimeout(r, 50));
  a.poolTrim();
  const base = vsz();
  const limit = base + k * block + reserve;
  const set = spawnSync('prlimit', ['--pid', String(process.pid), '--as=' + limit + ':']);
  const limits = fs.readFileSync('/proc/self/limits', 'utf8');
  out.limitSet = set.status === 0 && new RegExp('Max address space\\\\s+' + limit + '\\\\s').test(limits);
  if (!out.limitSet) {
    out.limitError = String(set.stderr) + limits;
    return;
  }

  // Allocate until refusal.
  const held = [];
  let refusal = null;
  try {
    for (let i = 0; i < 4 * k; i++) held.push(new Class(block, { queue }));
  } catch (e) {
    refusal = e;
  }
  out.count = held.length;
  out.refusal = describe(refusal);

  if (mode === 'refuse') {
    // A request larger than everything left is refused the same way.
    try {
      new Class(16 * 1024 * MiB, { queue }).free();
      out.huge = 'allocated';
    } catch (e) {
      out.huge = describe(e);
    }
    for (const m of held) m.free();
    out.trimmed = a.poolTrim();
    // Recovery: the same blocks again, then real work on fresh memory, sync and async.
    const again = [];
    try {
      for (let i = 0; i < held.length; i++) again.push(new Class(block, { queue }));
    } catch (e) {
      out.againError = describe(e);
    }
    out.again = again.length;
    for (const m of again) m.free();
    a.poolTrim();
    const m = new Class(16 * MiB + 3, { queue });
    m.memset(0x5a);
    await m.memsetAsync(0xa5);
    const bytes = await m.copyToHostAsync();
    out.works = bytes.length === 16 * MiB + 3 && bytes[0] === 0xa5 && bytes[16 * MiB + 2] === 0xa5 && m.toBytes()[12345] === 0xa5;
    m.free();
  } else {
    // Every block freed goes to the pool's cache: the address space stays taken.
    for (const m of held) m.free();
    const cached = stats();
    out.cachedBefore = cached.cachedBytes;
    out.freeBefore = limit - vsz();
    try {
      const m = new Class(request, { queue });
      m.memset(0x11);
      out.request = 'ok';
      out.pointerOk = typeof m.pointer === 'bigint' && m.nbytes === request;
      m.free();
    } catch (e) {
      out.request = describe(e);
    }
    out.cachedAfter = stats().cachedBytes;
  }
  out.inUseEnd = stats().inUseBytes;
}

main().then(
  () => console.log('EXHAUSTION_RESULT ' + JSON.stringify(out)),
  (e) => {
    console.log('EXHAUSTION_RESULT ' + JSON.stringify({ ...out, thrown: describe(e), stack: e && e.stack }));
  },
);
`;

function runChild(args) {
  const child = spawnSync(process.execPath, ['-e', CHILD], {
    env: {
      ...process.env,
      EXHAUSTION_ARGS: JSON.stringify({ block: BLOCK, k: K, reserve: RESERVE, ...args }),
      ONEAPI_DEVICE_SELECTOR: 'opencl:cpu',
      DPCTL_MEMORY_POOL: '1',
      MALLOC_ARENA_MAX: '2',
    },
    encoding: 'utf8',
    timeout: 180_000,
  });
  const line = (child.stdout ?? '').split('\n').find((l) => l.startsWith('EXHAUSTION_RESULT '));
  return { child, out: line ? JSON.parse(line.slice('EXHAUSTION_RESULT '.length)) : null };
}

/** No crash, no abort, no fatal message; a result line that says the cap was in force. */
function cleanExit(t, child, out) {
  t.is(child.signal, null, `the child died of ${child.signal}:\n${child.stderr}`);
  t.is(child.status, 0, `exit ${child.status}:\n${child.stderr}`);
  t.notRegex(child.stderr ?? '', /FATAL|terminate called|Aborted|bad_alloc|panicked/, 'nothing fatal on stderr');
  t.truthy(out, `no result line:\n${child.stdout}\n${child.stderr}`);
  if (!out) return false;
  t.falsy(out.thrown, `the child threw: ${out.thrown && out.thrown.message}\n${out.stack}`);
  t.true(out.limitSet, `the address-space cap was not set: ${out.limitError}`);
  return !out.thrown && out.limitSet;
}

function isAllocationError(t, err, what) {
  t.truthy(err, `${what}: nothing was refused`);
  if (!err) return;
  t.is(err.code, 'ERR_USM_ALLOCATION', `${what}: ${err.name} ${err.message}`);
  t.true(err.isUSMAllocationError, `${what}: a USMAllocationError (got ${err.name})`);
  t.true(err.isError, `${what}: an Error`);
  t.is(err.name, 'USMAllocationError', what);
}

function register(title, fn) {
  if (WHY_NOT) test.skip(`${title} [${WHY_NOT}: skipped]`, () => {});
  else test.serial(title, fn);
}

test('the cap keeps every child far below half of this machine\'s memory', (t) => {
  const requested = K * BLOCK + RESERVE;
  t.true(requested <= Math.min(os.totalmem() / 2, 4 * GiB), `${requested / MiB} MiB of address space`);
  t.true(RESERVE < BLOCK, 'the reserve is smaller than a block, so the cap is reached by our blocks');
  t.true(RESERVE < 200 * MiB && 200 * MiB <= BLOCK, 'a 200 MiB request does not fit the reserve alone, but is pooled');
});

for (const kind of KINDS) {
  register(`${kind}: allocating until refusal gives USMAllocationError (ERR_USM_ALLOCATION), no crash, and the process recovers`, (t) => {
    const { child, out } = runChild({ kind, mode: 'refuse' });
    if (!cleanExit(t, child, out)) return;
    t.log(`${out.count} blocks of ${BLOCK / MiB} MiB before the refusal; recovered ${out.again}`);
    t.true(out.count >= 1 && out.count <= K, `${out.count} blocks of ${BLOCK / MiB} MiB fitted under a cap of ${K} blocks + ${RESERVE / MiB} MiB`);
    isAllocationError(t, out.refusal, 'the refused block');
    t.regex(out.refusal?.message ?? '', new RegExp(`${BLOCK}|USM-${kind}|${kind}`), 'the message says what was refused');
    isAllocationError(t, out.huge, 'a 16 GiB request');
    t.true(out.trimmed >= out.count * BLOCK, `poolTrim() released the ${out.count} freed blocks (${out.trimmed} bytes)`);
    t.is(out.again, out.count, `after free() the same ${out.count} blocks are allocated again${out.againError ? `; refused: ${out.againError.message}` : ''}`);
    t.true(out.works, 'fresh memory works: memset, memsetAsync, copyToHostAsync, toBytes');
    t.is(out.inUseEnd, 0, 'nothing is left in use');
  });

  // `pooled`: the size class the pool allocates for the request, what must fit.
  for (const [request, pooled, note] of [
    [200 * MiB, 224 * MiB, 'a pooled size (224 MiB class)'],
    [512 * MiB, 512 * MiB, 'a large pooled size (512 MiB class), given the cache back and retried too'],
  ]) {
    register(`${kind}: with the cap taken by cached blocks, a ${request / MiB} MiB allocation succeeds after the pool gives them back (${note})`, (t) => {
      const { child, out } = runChild({ kind, mode: 'retry', request });
      if (!cleanExit(t, child, out)) return;
      isAllocationError(t, out.refusal, 'filling the cap');
      t.true(out.cachedBefore >= out.count * BLOCK, `the ${out.count} freed blocks are cached (${out.cachedBefore / MiB} MiB)`);
      // The premise: without the cached blocks released, the request cannot fit.
      // (Measured against the block the pool allocates: each Node version lays out its own
      // address space, and some give a few MiB back after the fill.)
      t.true(out.freeBefore < pooled, `only ${(out.freeBefore / MiB).toFixed(0)} MiB of address space is free, less than the ${pooled / MiB} MiB block the request needs`);
      t.true(out.freeBefore + out.cachedBefore >= pooled + 32 * MiB, 'and it fits once the cache is given back');
      t.is(out.request, 'ok', `the ${request / MiB} MiB allocation was refused although the pool held ${out.cachedBefore / MiB} MiB it could give back: ${JSON.stringify(out.request)}`);
      if (out.request === 'ok') {
        t.true(out.pointerOk);
        t.true(out.cachedAfter < out.cachedBefore, 'the pool gave its blocks back');
      }
      t.is(out.inUseEnd, 0, 'nothing is left in use');
    });
  }
}
