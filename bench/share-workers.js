// One 256 MiB allocation handed to 8 workers: mem.sharedBuffer posted to each (the peer:
// a share token per worker, opened there with openShared). Each worker views the memory,
// reads one byte per page (so a copy, were there one, would show), and answers. Reported:
// the median time from the first post to the last answer over several rounds, the two
// ways alternating in the same 8 workers; and what holding it costs: the process's RSS
// growth and each worker's external / arrayBuffers growth while all 8 hold it, set
// against the allocation's size (no copy either way: far below 256 MiB per worker).
// The shared-buffer rows need a Node with external SharedArrayBuffers (22.23.5, 24.16,
// 26.1 and later).
//
//   node --expose-gc bench/share-workers.js [--rounds N]
'use strict';
const { Worker } = require('node:worker_threads');
const addon = require('../index.js');
const { answer } = require('./lib.js');

const WORKERS = 8;
const NBYTES = 256 << 20;
const argRounds = process.argv.indexOf('--rounds');
const ROUNDS = argRounds > 0 ? Number(process.argv[argRounds + 1]) : 7;
const MiB = 1 << 20;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const WORKER_CODE = `
const { parentPort } = require('node:worker_threads');
const { openShared } = require(${JSON.stringify(require.resolve('../index.js'))});
let held;
const usage = () => { const u = process.memoryUsage(); return { external: u.external, arrayBuffers: u.arrayBuffers }; };
parentPort.on('message', ({ op, sab, token }) => {
  if (op === 'usage') { if (globalThis.gc) globalThis.gc(); return parentPort.postMessage(usage()); }
  if (op === 'drop') {
    if (held && held.free) held.free();
    held = undefined;
    return parentPort.postMessage(0);
  }
  let bytes;
  if (sab) { held = { sab }; bytes = new Uint8Array(sab); }
  else { held = openShared(token); bytes = new Uint8Array(held.buffer); }
  let sum = 0;
  for (let i = 0; i < bytes.length; i += 4096) sum += bytes[i];
  parentPort.postMessage(sum);
});`;

const all = (workers, message) => Promise.all(workers.map((w) => {
  const got = answer(w);
  w.postMessage(message);
  return got;
}));

async function main() {
  const queue = new addon.SyclQueue();
  const mem = new addon.MemoryUSMHost(NBYTES, { queue });
  mem.memset(1); // resident before anything is measured
  let sab;
  try {
    sab = mem.sharedBuffer;
  } catch (error) {
    console.log(`(Node ${process.version} has no mem.sharedBuffer: ${error.code}; only the token rows run)`);
  }
  const workers = Array.from({ length: WORKERS }, () => new Worker(WORKER_CODE, { eval: true }));
  const modes = {
    token: async () => Promise.all(workers.map((w) => {
      const got = answer(w);
      w.postMessage({ op: 'hold', token: mem.share() });
      return got;
    })),
  };
  if (sab) modes.sharedBuffer = async () => all(workers, { op: 'hold', sab });
  const times = Object.fromEntries(Object.keys(modes).map((m) => [m, []]));
  const growth = {};
  for (let round = -1; round < ROUNDS; round++) {
    for (const [name, hand] of Object.entries(modes)) {
      if (globalThis.gc) globalThis.gc();
      const before = { rss: process.memoryUsage().rss, workers: await all(workers, { op: 'usage' }) };
      const start = process.hrtime.bigint();
      const sums = await hand();
      const ns = Number(process.hrtime.bigint() - start);
      if (sums.some((s) => s !== NBYTES / 4096)) throw new Error(`${name}: a worker read other bytes: ${sums}`);
      const after = { rss: process.memoryUsage().rss, workers: await all(workers, { op: 'usage' }) };
      if (round >= 0) {
        times[name].push(ns);
        const g = (growth[name] ??= { rss: [], external: [], arrayBuffers: [] });
        g.rss.push((after.rss - before.rss) / WORKERS);
        g.external.push(median(after.workers.map((u, i) => u.external - before.workers[i].external)));
        g.arrayBuffers.push(median(after.workers.map((u, i) => u.arrayBuffers - before.workers[i].arrayBuffers)));
      }
      await all(workers, { op: 'drop' });
    }
  }
  await Promise.all(workers.map((w) => w.terminate()));
  mem.free();
  console.log(`Node ${process.version}; ${queue.syclDevice.filterString}; ${NBYTES / MiB} MiB to ${WORKERS} workers, ${ROUNDS} rounds, medians`);
  const peer = median(times.token);
  for (const name of Object.keys(modes)) {
    const g = growth[name];
    console.log(
      `${name.padEnd(13)} ${(median(times[name]) / 1e6).toFixed(2).padStart(7)} ms to all ${WORKERS} (ratio token/this ${(peer / median(times[name])).toFixed(2)}); ` +
        `per worker: RSS ${(median(g.rss) / MiB).toFixed(2)} MiB, external ${(median(g.external) / MiB).toFixed(2)} MiB, ` +
        `arrayBuffers ${(median(g.arrayBuffers) / MiB).toFixed(2)} MiB (allocation ${NBYTES / MiB} MiB)`,
    );
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
