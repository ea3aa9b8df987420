// Out-of-memory forensics, with the address-space cap of exhaustion.spec.mjs (see there
// for how the cap works): in a child whose RLIMIT_AS leaves room for exactly K blocks of
// 256 MiB on the CPU device, the refused allocation's USMAllocationError says what was
// asked, what the device has, what this process holds in use and in the pool, and whether
// a trim and retry ran; onOutOfMemory observers get the stats and (history on) a snapshot
// before the error is thrown; the stats count the refusals and the retry.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { getDevices } from './helpers/addon.mjs';

const INDEX = fileURLToPath(new URL('../index.js', import.meta.url));
const MiB = 2 ** 20;
const BLOCK = 256 * MiB;
const K = 3;
const RESERVE = 192 * MiB;

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
const { block, k, reserve } = JSON.parse(process.env.OOM_ARGS);
const vsz = () => Number(/VmSize:\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
const queue = new a.SyclQueue('opencl:cpu');
const out = {};
for (let i = 0; i < 4; i++) new a.MemoryUSMDevice(MiB, { queue }).free();
a.poolTrim();
const base = vsz();
const limit = base + k * block + reserve;
const set = spawnSync('prlimit', ['--pid', String(process.pid), '--as=' + limit + ':']);
out.limitSet = set.status === 0;
a.recordMemoryHistory({ maxEntries: 1000 });
const seen = [];
const stop = a.onOutOfMemory((info) => {
  seen.push({
    message: info.error.message,
    nbytes: info.nbytes,
    kind: info.kind,
    device: info.device,
    numOoms: info.stats && info.stats.device.numOoms,
    inUse: info.stats && info.stats.device.allocatedBytes.current,
    events: info.snapshot ? info.snapshot.events.map((e) => e.action) : null,
    liveBlocks: info.snapshot ? info.snapshot.liveBlocks.filter((b) => b.size === block).length : null,
  });
  throw new Error('an observer that throws changes nothing');
});
const warnings = [];
process.on('warning', (w) => warnings.push(w.code));
const held = [];
const attempt = (nbytes) => {
  const before = seen.length;
  try {
    return { memory: new a.MemoryUSMDevice(nbytes, { queue }) };
  } catch (e) {
    return { error: { code: e.code, name: e.name, message: e.message, toldFirst: seen.length === before + 1 && seen[before].message === e.message } };
  }
};
let refused;
for (let i = 0; i < 4 * k; i++) {
  const r = attempt(block);
  if (r.error) { refused = r.error; break; }
  held.push(r.memory);
}
out.count = held.length;
out.refused = refused;
held.pop().free();
out.cached = a.poolStats().device.cachedBytes;
out.retried = attempt(2 * block).error;
stop();
out.unobserved = attempt(2 * block).error;
out.seen = seen;
const stats = a.memoryStats(queue.syclDevice).device;
out.numOoms = stats.numOoms;
out.numAllocRetries = stats.numAllocRetries;
for (const m of held) m.free();
a.poolTrim();
setImmediate(() => {
  out.warnings = warnings;
  console.log('OOM_RESULT ' + JSON.stringify(out));
});
`;

function runChild() {
  const child = spawnSync(process.execPath, ['-e', CHILD], {
    env: {
      ...process.env,
      OOM_ARGS: JSON.stringify({ block: BLOCK, k: K, reserve: RESERVE }),
      ONEAPI_DEVICE_SELECTOR: 'opencl:cpu',
      DPCTL_MEMORY_POOL: '1',
      MALLOC_ARENA_MAX: '2',
    },
    encoding: 'utf8',
    timeout: 180_000,
  });
  const line = (child.stdout ?? '').split('\n').find((l) => l.startsWith('OOM_RESULT '));
  return { child, out: line ? JSON.parse(line.slice('OOM_RESULT '.length)) : null };
}

const title = 'a refused allocation says what was asked, free, held and retried; onOutOfMemory observers hear it first, with stats and a snapshot';
if (WHY_NOT) {
  test.skip(`${title} [${WHY_NOT}: skipped]`, () => {});
} else {
  test(title, (t) => {
    const { child, out } = runChild();
    t.is(child.signal, null, `the child died of ${child.signal}:\n${child.stderr}`);
    t.truthy(out, `no result line:\n${child.stdout}\n${child.stderr}`);
    if (!out) return;
    t.true(out.limitSet, 'the address-space cap was set');
    t.true(out.count >= 1 && out.count <= K, `${out.count} blocks fitted`);
    const device = getDevices('opencl:cpu')[0].filterString;
    // The first refusal: nothing was cached.
    t.like(out.refused, { code: 'ERR_USM_ALLOCATION', name: 'USMAllocationError', toldFirst: true });
    const first = out.refused.message;
    t.true(first.startsWith(`USM allocation of 256.00 MiB (${BLOCK} bytes) of device memory on ${device} (`), first);
    t.regex(first, /The device has [\d.]+ [KMGT]iB of memory, free memory unknown \(the runtime cannot tell\)/);
    t.true(first.includes(`this process holds ${(out.count * 256).toFixed(2)} MiB in use and 0 B cached in the pool on it`), first);
    t.regex(first, /no trim and retry ran/);
    // With one block cached: the pool gave it back, retried, and was refused again.
    t.is(out.cached, BLOCK);
    t.like(out.retried, { code: 'ERR_USM_ALLOCATION', toldFirst: true });
    t.regex(out.retried.message, /^USM allocation of 512\.00 MiB/);
    t.true(out.retried.message.includes(`holds ${((out.count - 1) * 256).toFixed(2)} MiB in use and 0 B cached`), 'what it holds after the trim');
    t.regex(out.retried.message, /The pool gave back the [\d.]+ MiB it had cached and retried: refused again\./);
    // Observers: told before each throw, with the stats and the recorded snapshot.
    t.is(out.seen.length, 2, 'removed observers hear nothing');
    t.like(out.seen[0], { nbytes: BLOCK, kind: 'device', device, numOoms: 1, inUse: out.count * BLOCK, liveBlocks: out.count });
    t.is(out.seen[0].events.at(-1), 'oom');
    t.true(out.seen[1].events.includes('retry') && out.seen[1].events.includes('trim'), out.seen[1].events.join(','));
    t.deepEqual(out.warnings.filter((w) => w === 'DPCTL_MEMORY_OOM_OBSERVER').length, 2, 'a throwing observer is reported as a warning');
    t.is(out.unobserved.code, 'ERR_USM_ALLOCATION');
    t.is(out.numOoms, 3);
    t.is(out.numAllocRetries, 1);
  });
}
