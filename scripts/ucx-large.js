#!/usr/bin/env node
// The UCX transport at large sizes, kept out of npm test (minutes, and 3 GiB of memory):
// two Node processes (__test__/fixtures/ucx-peer.mjs), 1 B .. 1 GiB doubling, each message
// echoed back and checked byte for byte, over loopback TCP and shared memory.
//   node scripts/ucx-large.js [maxBytes=1073741824]
'use strict';
const path = require('node:path');
const { fork } = require('node:child_process');

const PEER = path.join(__dirname, '..', '__test__', 'fixtures', 'ucx-peer.mjs');
const max = Number(process.argv[2] || 2 ** 30);
const sizes = [];
for (let s = 1; s <= max; s *= 2) sizes.push(s);

function run(role, args, env) {
  const child = fork(PEER, [role, ...args], { env: { ...process.env, ...env, UCX_PEER_MAX_BYTES: String(max) } });
  const next = () => new Promise((resolve) => child.once('message', resolve));
  return { child, next };
}

async function main() {
  for (const [name, tls] of [['tcp', 'tcp,self'], ['shm', 'shm,self,tcp']]) {
    const server = run('server', ['127.0.0.1'], { UCX_TLS: tls });
    const { port } = await server.next();
    const started = Date.now();
    const client = run('client', ['127.0.0.1', String(port), ...sizes.map(String)], { UCX_TLS: tls });
    const report = await client.next();
    if (report.error) {
      console.log(`ucx-large ${name}: FAILED: ${report.error}`);
      process.exit(1);
    }
    console.log(`ucx-large ${name}: ${report.checked.length} sizes, 1 B .. ${report.checked.at(-1)} B, echoed and checked (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    await server.next();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
