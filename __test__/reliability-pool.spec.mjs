// Reliability of the pool and of the host scratch of async copies: the bounce buffers of
// copies from plain ArrayBuffers are counted by poolStats(), released by poolTrim() and
// freed on their own when idle; a request the runtime refuses beside the cache (a large
// pooled block, or an alignment above 256 that the pool does not cache) gets the cache
// back and a retry.
//
// Serial: the tests read the process-wide statistics. The RSS and address-space cases
// run in child processes, so nothing else of this process distorts them.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { HAS_DEVICE } from './helpers/addon.mjs';

const require = createRequire(import.meta.url);
const addon = require('../index.js');
const { poolStats, poolTrim, MemoryUSMHost } = addon;

const MiB = 2 ** 20;
const INDEX_JS = fileURLToPath(new URL('../index.js', import.meta.url));
const POOL_ON = !['0', 'false', 'off', 'no'].includes((process.env.DPCTL_MEMORY_POOL ?? '').trim().toLowerCase());
const HAS_PRLIMIT = spawnSync('prlimit', ['--version']).status === 0;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function serial(title, fn, { needsPool = false, needsPrlimit = false } = {}) {
  if (!HAS_DEVICE) return test.skip(`${title} [no SYCL/CUDA device present: skipped]`, () => {});
  if (needsPool && !POOL_ON) return test.skip(`${title} [DPCTL_MEMORY_POOL turns the pool off: skipped]`, () => {});
  if (needsPrlimit && !HAS_PRLIMIT) return test.skip(`${title} [no prlimit here: skipped]`, () => {});
  return test.serial(title, fn);
}

/** Runs `script` in a child node; returns the JSON of its last line of output. */
function child(t, script, args = []) {
  const r = spawnSync(process.execPath, [...args, '-e', script], { encoding: 'utf8', timeout: 120_000 });
  t.is(r.signal, null, `killed by ${r.signal}: ${r.stderr}`);
  t.is(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

serial('poolStats() reports the idle scratch of async copies; poolTrim() frees and counts it', async (t) => {
  poolTrim();
  t.deepEqual(poolStats().scratch, { blocks: 0, bytes: 0 });
  const m = new MemoryUSMHost(8 * MiB);
  await m.copyFromHostAsync(new Uint8Array(8 * MiB));
  t.deepEqual(poolStats().scratch, { blocks: 1, bytes: 8 * MiB }, 'the bounce buffer is kept for the next copy');
  await m.copyToHostAsync(new ArrayBuffer(8 * MiB));
  t.deepEqual(poolStats().scratch, { blocks: 1, bytes: 8 * MiB }, 'and reused by it');
  // A SharedArrayBuffer is copied directly: no scratch.
  await m.copyToHostAsync(new SharedArrayBuffer(8 * MiB));
  t.deepEqual(poolStats().scratch, { blocks: 1, bytes: 8 * MiB });
  m.free();
  const cached = poolStats().host.cachedBytes;
  t.is(poolTrim(), cached + 8 * MiB, 'the cached block and the scratch');
  t.deepEqual(poolStats().scratch, { blocks: 0, bytes: 0 });
  t.is(poolTrim(), 0);
});

serial('a burst of async copies keeps a bounded number of idle scratch blocks', async (t) => {
  poolTrim();
  const m = new MemoryUSMHost(16 * 1024);
  const source = new Uint8Array(16 * 1024);
  // Each copy of a plain ArrayBuffer holds a scratch block of its own until it settles.
  await Promise.all(Array.from({ length: 2000 }, () => m.copyFromHostAsync(source)));
  const { blocks } = poolStats().scratch;
  t.true(blocks >= 1 && blocks <= 64, `${blocks} idle blocks kept`);
  m.free();
  poolTrim();
});

serial('idle scratch is freed on its own after a few seconds', async (t) => {
  poolTrim();
  const m = new MemoryUSMHost(4 * MiB);
  // Before the copy: the scratch goes idle after this, so it cannot be freed sooner than
  // its idle time (5 s) after it, however loaded the machine.
  const start = Date.now();
  await m.copyToHostAsync(new ArrayBuffer(4 * MiB));
  m.free();
  t.is(poolStats().scratch.bytes, 4 * MiB);
  // The bound only ends a wait for a reaper that never comes.
  while (poolStats().scratch.bytes > 0 && Date.now() - start < 120_000) await sleep(100);
  const waited = Date.now() - start;
  t.deepEqual(poolStats().scratch, { blocks: 0, bytes: 0 }, `still kept after ${waited} ms`);
  t.true(waited >= 3000, `kept for a while first (${waited} ms)`);
  poolTrim();
});

// The reviewed scenario: 256 MiB each way left the process ~256 MiB larger for good.
serial('after free(), gc() and poolTrim() the scratch of 256 MiB async copies is no longer resident', (t) => {
  const out = child(t, `
    const a = require(${JSON.stringify(INDEX_JS)});
    const MiB = 2 ** 20;
    const rss = () => process.memoryUsage().rss;
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    (async () => {
      new a.MemoryUSMHost(MiB).free(); a.poolTrim();
      const before = rss();
      await (async () => {
        const m = new a.MemoryUSMHost(256 * MiB);
        await m.copyToHostAsync(new ArrayBuffer(256 * MiB));
        await m.copyFromHostAsync(new ArrayBuffer(256 * MiB));
        m.free();
      })();
      await sleep(20); gc(); await sleep(20); gc();
      const scratch = a.poolStats().scratch;
      const trimmed = a.poolTrim();
      console.log(JSON.stringify({ before, after: rss(), scratch, trimmed, left: a.poolStats().scratch }));
    })();`, ['--expose-gc']);
  t.deepEqual(out.scratch, { blocks: 1, bytes: 256 * MiB });
  t.true(out.trimmed >= 256 * MiB, `poolTrim() counts the scratch (${out.trimmed})`);
  t.deepEqual(out.left, { blocks: 0, bytes: 0 });
  const grown = (out.after - out.before) / MiB;
  t.true(grown < 64, `RSS ${Math.round(out.before / MiB)} -> ${Math.round(out.after / MiB)} MiB`);
});

// The child fills the cache with 1 GiB, then caps its own address space (prlimit --pid)
// 128 MiB above what it maps: the request fits only once the cache is given back. Its V8
// keeps its young generation at its smallest, so that whether the heap grows under the
// cap (when a collection happens to come) cannot abort the child.
serial('a large request, and one the pool does not cache, get the cache back and a retry (address space capped)', (t) => {
  const out = child(t, `
    const a = require(${JSON.stringify(INDEX_JS)});
    const { spawnSync } = require('node:child_process');
    const fs = require('node:fs');
    const MiB = 2 ** 20;
    const vm = () => Number(/VmSize:\\s+(\\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
    const cap = (soft) => spawnSync('prlimit', ['--pid', String(process.pid), '--as=' + soft + ':']).status;
    const attempt = (nbytes, alignment) => {
      try { new a.MemoryUSMHost(nbytes, { alignment }).free(); return 'ok'; } catch (e) { return e.code; }
    };
    const out = {};
    for (const [name, nbytes, alignment] of [['big', 512 * MiB, 0], ['aligned', 256 * MiB, 4096]]) {
      const uncapped = cap('unlimited');
      const blocks = Array.from({ length: 4 }, () => new a.MemoryUSMHost(256 * MiB));
      for (const b of blocks) b.free();
      const cached = a.poolStats().host.cachedBytes;
      const capped = cap(vm() + 128 * MiB);
      out[name] = { uncapped, capped, cached, result: attempt(nbytes, alignment), after: a.poolStats().host.cachedBytes };
    }
    out.control = attempt(2048 * MiB, 0);
    console.log(JSON.stringify(out));`, ['--max-semi-space-size=1']);
  const cases = [
    ['big', '512 MiB (pooled: cached again once freed)', 512 * MiB],
    ['aligned', '256 MiB at alignment 4096 (not pooled)', 0],
  ];
  for (const [name, what, cachedAfter] of cases) {
    const r = out[name];
    t.deepEqual([r.uncapped, r.capped], [0, 0], `${name}: prlimit set the limits`);
    t.is(r.cached, 1024 * MiB, name);
    t.is(r.result, 'ok', `${what}, refused beside the cache, succeeds once the pool empties itself`);
    t.is(r.after, cachedAfter, `${name}: the cache was given back (the request did not simply fit)`);
  }
  t.is(out.control, 'ERR_USM_ALLOCATION', 'the cap bites: 2 GiB does not fit even with the cache empty');
}, { needsPool: true, needsPrlimit: true });
