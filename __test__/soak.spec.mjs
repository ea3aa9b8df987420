// A short soak (scripts/soak.js with few cycles, its kernel and UCX cycles included), and the test of the defect it exists to
// catch: memory objects dropped without free() must be bounded by garbage collection.
//
// The full soak is `npm run soak` (10^6 cycles, a few minutes). Here: a few thousand
// cycles of the same program in a child `node --expose-gc`, whose every check must pass;
// then, each in a child node WITHOUT --expose-gc (so only V8's own heuristics collect),
// 1,500 dropped 1 MiB host or shared objects, each touched and followed by a turn of the
// event loop, never freed: RSS must grow by less than 256 MiB (1,500 MiB were dropped, so a
// host allocation that V8 does not know about shows as 1 GiB or more).
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { HAS_DEVICE, addon } from './helpers/addon.mjs';

const SOAK = fileURLToPath(new URL('../scripts/soak.js', import.meta.url));
const MiB = 2 ** 20;
const BURST = 1500;
const BURST_BOUND_MIB = 256;
const UCX = (() => {
  try {
    return addon.ucx.available().available === true;
  } catch {
    return false;
  }
})();

/** The environment of a child: no inherited --expose-gc, no soak settings from outside. */
function childEnv(extra = {}) {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('SOAK_')) delete env[key];
  if (env.NODE_OPTIONS) env.NODE_OPTIONS = env.NODE_OPTIONS.replace(/--expose[-_]gc/g, '');
  return { ...env, ...extra };
}

function lastJson(stdout, prefix) {
  const line = stdout.split('\n').reverse().find((l) => l.startsWith(prefix));
  return line ? JSON.parse(line.slice(prefix.length)) : null;
}

function register(title, fn) {
  if (!HAS_DEVICE) test.skip(`${title} [no SYCL/CUDA device present: skipped]`, () => {});
  else test.serial(title, fn);
}

register('short soak: every check of scripts/soak.js passes (data, detached buffers, surviving views, freed errors, async, GC bound, in-use 0, RSS)', (t) => {
  const child = spawnSync(process.execPath, ['--expose-gc', SOAK], {
    // The bursts run in the tests below; everything else as in `npm run soak`.
    env: childEnv({ SOAK_CYCLES: '6000', SOAK_WARMUP: '1500', SOAK_CHECKPOINTS: '2', SOAK_BURST: '0', SOAK_QUIET: '1' }),
    encoding: 'utf8',
    timeout: 240_000,
    maxBuffer: 64 * MiB,
  });
  const result = lastJson(child.stdout ?? '', 'SOAK_RESULT ');
  t.truthy(result, `no SOAK_RESULT line (exit ${child.status}, signal ${child.signal}):\n${child.stdout}\n${child.stderr}`);
  if (!result) return;
  const f = result.figures;
  t.log(`${f.cycles} cycles in ${f.seconds.toFixed(1)} s; rss baseline ${f.rssBaselineMiB.toFixed(1)} MiB, end ${f.rssEndMiB.toFixed(1)} MiB, peak ${f.rssPeakMiB.toFixed(1)} MiB; dropped memory awaiting GC at most ${f.peakGarbageMiB.toFixed(1)} MiB`);
  for (const c of result.checks) {
    if (c.name === 'gc-bound-burst') {
      t.is(c.skipped, 'SOAK_BURST=0');
      continue;
    }
    if (c.name === 'ucx' && !UCX) {
      t.regex(String(c.skipped), /UCX does not load/);
      continue;
    }
    t.is(c.skipped, null, `${c.name} was not exercised: ${c.skipped}`);
    t.true(c.assertions > 0, `${c.name} asserted nothing`);
    t.is(c.failures, 0, `${c.name}: ${c.failures} of ${c.assertions} failed; first: ${c.first}`);
  }
  t.deepEqual(f.inUseEnd, { device: 0, host: 0, shared: 0 }, 'poolStats() in-use bytes at the end');
  t.true(f.counts.dropped > 0 && f.counts.freed > 0 && f.counts.asyncFreedInFlight > 0, JSON.stringify(f.counts));
  t.true(f.counts.kernels > 0 && (f.counts.ucxCycles > 0 || !UCX), `kernel and UCX cycles ran: ${JSON.stringify(f.counts)}`);
  t.is(child.status, result.ok ? 0 : 1, 'the exit status says whether every check passed');
  t.regex(child.stdout, /^\d+ passed, \d+ failed, \d+ skipped$/m, 'the summary line');
});

register('the soak fails when memory leaks (control: SOAK_INJECT=leak keeps every 50th allocation alive unseen)', (t) => {
  const child = spawnSync(process.execPath, ['--expose-gc', SOAK], {
    env: childEnv({ SOAK_CYCLES: '3000', SOAK_WARMUP: '1000', SOAK_CHECKPOINTS: '1', SOAK_BURST: '0', SOAK_QUIET: '1', SOAK_INJECT: 'leak' }),
    encoding: 'utf8',
    timeout: 240_000,
    maxBuffer: 64 * MiB,
  });
  const result = lastJson(child.stdout ?? '', 'SOAK_RESULT ');
  t.truthy(result, `no SOAK_RESULT line (exit ${child.status}):\n${child.stderr}`);
  if (!result) return;
  t.is(child.status, 1, 'a failed check exits 1');
  t.false(result.ok);
  const inUse = result.checks.find((c) => c.name === 'in-use-zero');
  t.true(inUse.failures > 0, 'in-use-zero sees the leaked allocations');
  t.true(result.figures.leakedInjected >= 3000 / 50 - 1);
});

/** Runs `soak.js --burst kind touch n` in a node without --expose-gc. */
function burst(kind, touch, n = BURST, extraEnv = {}) {
  const child = spawnSync(process.execPath, [SOAK, '--burst', kind, touch, String(n)], {
    env: childEnv(extraEnv),
    encoding: 'utf8',
    timeout: 240_000,
  });
  return { child, result: lastJson(child.stdout ?? '', 'BURST_RESULT ') };
}

const CASES = [
  ['host', 'buffer', 'MemoryUSMHost objects written through `buffer`'],
  ['shared', 'buffer', 'MemoryUSMShared objects written through `buffer`'],
  ['host', 'memset', 'MemoryUSMHost objects filled by memset, `buffer` never read'],
  ['shared', 'memset', 'MemoryUSMShared objects filled by memset, `buffer` never read'],
];

for (const [kind, touch, what] of CASES) {
  register(`GC bounds dropped memory: ${BURST} dropped 1 MiB ${what}, no free(), no gc(), grow RSS by < ${BURST_BOUND_MIB} MiB`, (t) => {
    const { child, result } = burst(kind, touch);
    t.is(child.status, 0, `exit ${child.status} (signal ${child.signal}): ${child.stderr}`);
    t.truthy(result, `no BURST_RESULT line: ${child.stdout}`);
    if (!result) return;
    t.false(result.gcExposed, 'the child runs without --expose-gc');
    const growth = result.growth / MiB;
    t.log(`rss ${(result.before / MiB).toFixed(1)} -> peak ${(result.peak / MiB).toFixed(1)} MiB (+${growth.toFixed(1)}) in ${result.ms} ms on ${result.device}; pool hits ${result.hits}, misses ${result.misses}`);
    t.true(growth < BURST_BOUND_MIB, `RSS grew by ${growth.toFixed(1)} MiB while ${BURST} MiB were dropped: dropped ${kind} memory is not bounded by GC (not reported to V8?)`);
    t.true(result.peak < 1024 * MiB, `peak RSS ${(result.peak / MiB).toFixed(1)} MiB`);
  });
}

register('the burst measure sees memory that is really held (control: 1,500 kept 1 MiB host objects grow RSS by > 1 GiB)', (t) => {
  const { child, result } = burst('host', 'buffer', BURST, { SOAK_BURST_KEEP: '1' });
  t.is(child.status, 0, `exit ${child.status} (signal ${child.signal}): ${child.stderr}`);
  t.truthy(result, `no BURST_RESULT line: ${child.stdout}`);
  if (!result) return;
  t.log(`kept: rss ${(result.before / MiB).toFixed(1)} -> peak ${(result.peak / MiB).toFixed(1)} MiB`);
  t.true(result.kept === BURST, 'the child kept every object');
  t.true(result.growth > 1024 * MiB, `RSS grew by only ${(result.growth / MiB).toFixed(1)} MiB with 1,500 MiB held and touched`);
});
