#!/usr/bin/env node
// The UCX transport's leak checks, at full size (npm test runs a short version in
// __test__/transport.spec.mjs): 1,000 transfers in flight at once, then 10^4 connect/close
// cycles, in one process over loopback; then the worker's counts, the open fds and RSS
// against their baselines. Exits 1 when something is left over.
//   node scripts/ucx-soak.js [cycles=10000] [inFlight=1000] [size=65536]
// The large sizes (1 B .. 1 GiB, two processes) are scripts/ucx-large.js.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
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

async function main() {
  const [cycleCount = 10000, inFlightCount = 1000, size = 65536] = process.argv.slice(2).filter((a) => !a.startsWith('--')).map(Number);
  // Warm-up: the worker, its transports and the first connection exist before the baseline.
  await inFlight(10, 1024);
  await cycles(20);
  const base = { fds: fds(), rss: rssMiB(), info: ucx.info() };
  console.log(`ucx-soak: baseline fds ${base.fds}, RSS ${base.rss.toFixed(1)} MiB`);
  await inFlight(inFlightCount, size);
  console.log(`ucx-soak: ${inFlightCount} transfers of ${size} B in flight at once: done`);
  await cycles(cycleCount);
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
