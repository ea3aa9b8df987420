// Sharing memory between worker threads: share + open + free across two workers,
// message passing included (target: at most 10 us per round trip on the CPU device),
// and a copy into memory opened from a token against the same copy into memory
// allocated in the same worker (target: within 5 %).
//
//   node bench/share.js [--rounds N]
'use strict';
const { Worker, MessageChannel } = require('node:worker_threads');
const path = require('node:path');
const addon = require('../index.js');
const { answer } = require('./lib.js');

const WORKER = path.join(__dirname, 'share-worker.js');
const argRounds = process.argv.indexOf('--rounds');
const ROUNDS = argRounds > 0 ? Number(process.argv[argRounds + 1]) : 20_000;
const BATCHES = 5;
const TARGET_US = 10;
const COPY_BYTES = 64 << 20;
const COPY_TARGET = 0.05;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * Median ns per round trip of sharing and of posting a number instead, over `BATCHES`
 * runs of `rounds` each, `window` messages in flight; the two alternate batch by batch in
 * the same pair of workers, so that load from elsewhere falls on both alike.
 */
async function roundTrips(window, rounds) {
  const sender = new Worker(WORKER, { workerData: { role: 'sender' } });
  const receiver = new Worker(WORKER, { workerData: { role: 'receiver' } });
  const times = { share: [], plain: [] };
  try {
    for (let batch = -1; batch < BATCHES; batch++) {
      for (const mode of ['share', 'plain']) {
        const { port1, port2 } = new MessageChannel();
        receiver.postMessage({ port: port2, mode }, [port2]);
        sender.postMessage({ port: port1, mode, rounds: batch < 0 ? rounds / 10 : rounds, window, nbytes: 4096 }, [port1]);
        const ns = await answer(sender);
        if (batch >= 0) times[mode].push(ns); // the first batch warms up
      }
    }
  } finally {
    await Promise.all([sender.terminate(), receiver.terminate()]);
  }
  return { share: median(times.share), plain: median(times.plain) };
}

async function copyRates() {
  const worker = new Worker(WORKER, { workerData: { role: 'copier' } });
  const m = new addon.MemoryUSMHost(COPY_BYTES);
  try {
    worker.postMessage({ op: 'copyRates', token: m.share(), rounds: 31 });
    return await answer(worker);
  } finally {
    m.free();
    await worker.terminate();
  }
}

async function main() {
  const device = new addon.SyclQueue().syclDevice;
  console.log(`device ${device.filterString} (${device.name}); ${ROUNDS} round trips x ${BATCHES} batches, median`);
  const rows = [];
  const row = (name, value, note) => {
    rows.push({ name, value, note });
    console.log(`${name.padEnd(58)} ${value.padStart(12)}  ${note}`);
  };
  for (const window of [1, 32]) {
    const times = await roundTrips(window, ROUNDS);
    const shared = times.share / 1000;
    const plain = times.plain / 1000;
    const what = window === 1 ? 'one in flight' : `${window} in flight`;
    row(`share+post+open+free+ack round trip (${what})`, `${shared.toFixed(2)} us`, `target <= ${TARGET_US} us: ratio ${(TARGET_US / shared).toFixed(2)}x ${shared <= TARGET_US ? 'met' : 'NOT met'}`);
    row(`  the same with a number posted instead (${what})`, `${plain.toFixed(2)} us`, `message passing alone; sharing adds ${(shared - plain).toFixed(2)} us`);
  }
  const rates = await copyRates();
  const gbps = (seconds) => COPY_BYTES / median(seconds) / 1e9;
  const shared = gbps(rates.shared);
  const ordinary = gbps(rates.ordinary);
  const ratio = shared / ordinary;
  row('copyFromHost 64 MiB into memory opened from a token', `${shared.toFixed(2)} GB/s`, '(in a worker)');
  row('copyFromHost 64 MiB into memory allocated in that worker', `${ordinary.toFixed(2)} GB/s`, `ratio ${ratio.toFixed(3)}; target within ${COPY_TARGET * 100} %: ${Math.abs(1 - ratio) <= COPY_TARGET ? 'met' : 'NOT met'}`);
  return rows;
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
