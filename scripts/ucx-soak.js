#!/usr/bin/env node
// The UCX transport's leak checks, at full size (npm test runs a short version in
// __test__/transport.spec.mjs): 1,000 transfers in flight at once, then 10^4 connect/close
// cycles, in one process over loopback; then back-to-back cycles of connect + 8-byte send +
// graceful close to an idle listener in another process (__test__/fixtures/ucx-hostile.mjs:
// every connection must be accepted, every send delivered before its close); then the
// worker's counts, the open fds and RSS against their baselines. Exits 1 when something is
// left over or a connection is not made.
//   node scripts/ucx-soak.js [cycles=10000] [inFlight=1000] [size=65536] [crossCycles=2000]
// The large sizes (1 B .. 1 GiB, two processes) are scripts/ucx-large.js.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { fork } = require('node:child_process');
const { ucx } = require(path.resolve(__dirname, '..'));

const fds = () => fs.readdirSync('/proc/self/fd').length;
const rssMiB = () => process.memoryUsage().rss / 2 ** 20;

async function pair() {
  const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
  const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: listener.port }), listener.accept()]);
  listener.close();
  return { client, server };
}

async function inFlight(count, size) {
  const { client, server } = await pair();
  const receives = [];
  const sends = [];
  for (let i = 0; i < count; i++) receives.push(server.recv(new Uint8Array(size), { tag: BigInt(i) }));
  for (let i = 0; i < count; i++) sends.push(client.send(new Uint8Array(size).fill(i & 0xff), { tag: BigInt(i) }));
  await Promise.all(sends);
  const got = await Promise.all(receives);
  if (got.some((r, i) => r.nbytes !== size || r.tag !== BigInt(i))) throw new Error('a transfer in flight came back wrong');
  await client.close();
  await server.close();
}

async function cycles(count) {
  const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
  for (let i = 0; i < count; i++) {
    const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: listener.port }), listener.accept()]);
    await client.close();
    await server.close();
    if (i % 1000 === 999) console.log(`ucx-soak: ${i + 1} cycles, fds ${fds()}, RSS ${rssMiB().toFixed(1)} MiB`);
  }
  listener.close();
}

/** `count` cycles of connect + 8-byte send + close to a listener in another process. */
async function crossCycles(count) {
  const fixture = path.resolve(__dirname, '..', '__test__', 'fixtures', 'ucx-hostile.mjs');
  const child = fork(fixture, ['listener', '127.0.0.1'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    const { port, error } = await new Promise((resolve) => child.once('message', resolve));
    if (error) throw new Error(`the listener process: ${error}`);
    for (let i = 0; i < count; i++) {
      const endpoint = await ucx.connect({ host: '127.0.0.1', port });
      await endpoint.send(new Uint8Array(8), { tag: 1n });
      await endpoint.close();
      if (i % 1000 === 999) console.log(`ucx-soak: ${i + 1} cycles to another process, fds ${fds()}`);
    }
  } finally {
    child.kill();
  }
}

async function main() {
  const [cycleCount = 10000, inFlightCount = 1000, size = 65536, crossCount = 2000] = process.argv.slice(2).filter((a) => !a.startsWith('--')).map(Number);
  // Warm-up: the worker, its transports and the first connection exist before the baseline.
  await inFlight(10, 1024);
  await cycles(20);
  const base = { fds: fds(), rss: rssMiB(), info: ucx.info() };
  console.log(`ucx-soak: baseline fds ${base.fds}, RSS ${base.rss.toFixed(1)} MiB`);
  await inFlight(inFlightCount, size);
  console.log(`ucx-soak: ${inFlightCount} transfers of ${size} B in flight at once: done`);
  await cycles(cycleCount);
  await crossCycles(crossCount);
  console.log(`ucx-soak: ${crossCount} connect + send + close cycles to an idle listener in another process: all accepted`);
  await new Promise((r) => setTimeout(r, 200));
  const end = { fds: fds(), rss: rssMiB(), info: ucx.info() };
  console.log(`ucx-soak: end fds ${end.fds}, RSS ${end.rss.toFixed(1)} MiB, worker ${JSON.stringify(end.info)}`);
  const leaks = [];
  if (end.fds > base.fds) leaks.push(`fds ${base.fds} -> ${end.fds}`);
  for (const k of ['inFlight', 'ucxRequests', 'endpoints', 'listeners']) if (end.info[k] !== 0) leaks.push(`${k} ${end.info[k]}`);
  // RSS: allocator caches and JIT make a few MiB of drift normal; a leak per cycle would be far more.
  if (end.rss > base.rss + 64) leaks.push(`RSS ${base.rss.toFixed(1)} -> ${end.rss.toFixed(1)} MiB`);
  if (leaks.length) {
    console.log(`ucx-soak: LEAK: ${leaks.join(', ')}`);
    process.exit(1);
  }
  console.log('ucx-soak: no leak (fds, worker counts, RSS within 64 MiB of the baseline)');
  process.exit(0);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
