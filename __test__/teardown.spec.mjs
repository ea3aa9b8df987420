// Teardown: whatever a program leaves behind (memory objects never freed, blocks in the
// pool's cache, staging and scratch) goes back to the runtime when its environments end and
// at process exit, so that a leak checker (compute-sanitizer --leak-check full on a GPU)
// sees nothing of the library's. Each case is a child process run with
// DPCTL_MEMORY_EXIT_REPORT=1, whose last stderr line says what the process still held from
// the runtimes after the exit hook: blocks of the pool (live, cached or being given back)
// and the bytes of staging buffers and scratch.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DEVICES, HAS_DEVICE } from './helpers/addon.mjs';

const INDEX = fileURLToPath(new URL('../index.js', import.meta.url));
const ZERO = { blocks: 0, bytes: 0, staging: 0, scratch: 0 };

/** Runs `body` (CommonJS, with `a` the addon unless `load` is false, and `FILTER` the
 * device's filter string) in a child node. */
function child(body, { load = true, device = DEVICES[0] } = {}) {
  const script = `${load ? `const a = require(${JSON.stringify(INDEX)});\n` : ''}const { Worker } = require('node:worker_threads');\nconst INDEX = ${JSON.stringify(INDEX)};\nconst FILTER = ${JSON.stringify(device?.filterString ?? '')};\n${body}`;
  const run = spawnSync(process.execPath, ['-e', script], {
    env: { ...process.env, DPCTL_MEMORY_EXIT_REPORT: '1' },
    encoding: 'utf8',
    // A hang guard only.
    timeout: 120_000,
  });
  const lines = (run.stderr ?? '').trim().split('\n');
  const last = lines.at(-1) ?? '';
  const match = /^dpctl-memory exit: (\{.*\})$/.exec(last);
  return { status: run.status, signal: run.signal, stdout: run.stdout, stderr: run.stderr, held: match ? JSON.parse(match[1]) : null };
}

// Live objects of every kind, blocks in the cache, copies of 3 MiB (through the pinned
// staging buffers on CUDA) and an async copy (its scratch).
const LEAVE_BEHIND = `
  const q = new a.SyclQueue(FILTER);
  const kept = [];
  for (const C of [a.MemoryUSMDevice, a.MemoryUSMHost, a.MemoryUSMShared]) {
    for (const n of [100, 70000, 3 * 2 ** 20 + 5]) {
      const m = new C(n, { queue: q });
      m.memset(7);
      m.copyFromHost(new Uint8Array(n).fill(9));
      if (m.toBytes()[n - 1] !== 9) throw new Error('the copy did not land');
      kept.push(m);
      new C(n + 1, { queue: q }).free();
    }
  }
  globalThis.kept = kept;
  const s = a.poolStats();
  const inUse = s.device.inUseBytes + s.host.inUseBytes + s.shared.inUseBytes;
  const cached = s.device.cachedBlocks + s.host.cachedBlocks + s.shared.cachedBlocks;
  console.log('left ' + inUse + ' in use, ' + cached + ' cached');
`;

function register(title, fn) {
  if (!HAS_DEVICE) test.skip(`${title} [no SYCL/CUDA device present: skipped]`, () => {});
  else test(title, fn);
}

function assertLeftSomething(t, r) {
  const m = /left (\d+) in use, (\d+) cached/.exec(r.stdout);
  t.truthy(m, `the child did not say what it left: ${r.stdout}\n${r.stderr}`);
  if (m) t.true(Number(m[1]) > 0 && (Number(m[2]) > 0 || process.env.DPCTL_MEMORY_POOL === '0'), 'the child left live and cached memory behind');
}

for (const device of DEVICES) {
  register(`${device.filterString}: a normal exit gives back every block, live or cached, the staging buffers and the scratch`, (t) => {
    const r = child(
      `${LEAVE_BEHIND}
      (async () => { await kept[1].copyToHostAsync(); await kept[2].copyFromHostAsync(new Uint8Array(3 * 2 ** 20 + 5)); })();`,
      { device },
    );
    t.is(r.status, 0, r.stderr);
    assertLeftSomething(t, r);
    t.deepEqual(r.held, ZERO, r.stderr);
  });

  register(`${device.filterString}: process.exit() with live objects gives everything back and keeps its status`, (t) => {
    const r = child(`${LEAVE_BEHIND}\nsetImmediate(() => process.exit(7));`, { device });
    t.is(r.status, 7, r.stderr);
    assertLeftSomething(t, r);
    t.deepEqual(r.held, ZERO, r.stderr);
  });
}

register('an uncaught error with live objects gives everything back and exits 1', (t) => {
  const r = child(`${LEAVE_BEHIND}\nsetImmediate(() => { throw new Error('boom'); });`);
  t.is(r.status, 1);
  t.regex(r.stderr, /boom/);
  assertLeftSomething(t, r);
  t.deepEqual(r.held, ZERO, r.stderr);
});

register("a terminated worker's objects are freed when it ends; the main thread's at exit", (t) => {
  const r = child(`${LEAVE_BEHIND}
    const worker = new Worker(${'`'}const { parentPort, workerData } = require('node:worker_threads'); const a = require(workerData);
      const q = new a.SyclQueue(); globalThis.mine = [];
      for (const C of [a.MemoryUSMDevice, a.MemoryUSMHost, a.MemoryUSMShared]) { const m = new C(1 << 20, { queue: q }); m.memset(1); mine.push(m); new C(4096, { queue: q }).free(); }
      parentPort.postMessage('ready'); setInterval(() => {}, 1000);${'`'}, { eval: true, workerData: INDEX });
    const before = a.poolStats().device.inUseBytes;
    worker.once('message', async () => {
      const during = a.poolStats().device.inUseBytes;
      await worker.terminate();
      const after = a.poolStats().device.inUseBytes;
      console.log('worker held ' + (during - before) + ', after ' + (after - before));
    });`);
  t.is(r.status, 0, r.stderr);
  assertLeftSomething(t, r);
  t.regex(r.stdout, /worker held 1048576, after 0/, r.stdout + r.stderr);
  t.deepEqual(r.held, ZERO, r.stderr);
});

register('memory shared by a worker that ends is not freed under the token; opened after, it is intact', (t) => {
  const r = child(`
    const worker = new Worker(${'`'}const { parentPort, workerData } = require('node:worker_threads'); const a = require(workerData);
      const m = new a.MemoryUSMShared(4096); m.memset(0x5a); globalThis.m = m;
      parentPort.postMessage(m.share({ timeout: 60000 }));${'`'}, { eval: true, workerData: INDEX });
    worker.once('message', async (token) => {
      await worker.terminate();
      const opened = a.openShared(token);
      const bytes = opened.toBytes();
      console.log('opened ' + bytes.length + ' ' + bytes.every((b) => b === 0x5a));
      opened.free();
    });`);
  t.is(r.status, 0, r.stderr);
  t.regex(r.stdout, /opened 4096 true/, r.stdout + r.stderr);
  t.deepEqual(r.held, ZERO, r.stderr);
});

register('a process whose main thread never loads the addon: the last worker ends and the exit finds nothing held', (t) => {
  const r = child(
    `const w = new Worker(${'`'}const a = require(require('node:worker_threads').workerData); const q = new a.SyclQueue();
      globalThis.k = [new a.MemoryUSMDevice(5000, { queue: q }), new a.MemoryUSMHost(5000, { queue: q })]; new a.MemoryUSMShared(9000, { queue: q }).free();${'`'}, { eval: true, workerData: INDEX });
    w.on('exit', (code) => console.log('worker exit ' + code));`,
    { load: false },
  );
  t.is(r.status, 0, r.stderr);
  t.regex(r.stdout, /worker exit 0/);
  t.deepEqual(r.held, ZERO, r.stderr);
});

register('the exit report counts what is really still held (control: a share token never opened holds its block)', (t) => {
  const r = child(`const m = new a.MemoryUSMDevice(3000); m.memset(1); globalThis.token = m.share({ timeout: 600000 }); m.free();`);
  t.is(r.status, 0, r.stderr);
  t.truthy(r.held, r.stderr);
  t.is(r.held?.blocks, 1, 'the block the token holds');
  t.true(r.held?.bytes >= 3000);
});
