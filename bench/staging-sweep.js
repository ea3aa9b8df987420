#!/usr/bin/env node
// Picks the staging threshold by measurement: pageable copies between a JS ArrayBuffer
// and GPU device memory at sizes around it, with staging forced on and forced off (each in
// its own process, since the setting is read once), printed side by side.
// Usage on a machine with an NVIDIA GPU: node bench/staging-sweep.js
'use strict';
const { spawnSync } = require('node:child_process');
const { MiB, sizeLabel, measure } = require('./lib');

const SIZES = [1 * MiB, 2 * MiB, 4 * MiB, 8 * MiB, 12 * MiB, 16 * MiB, 32 * MiB, 64 * MiB];
const TIMING = { warmupCalls: 3, batchTargetMs: 20, maxBatch: 1000, warmupBatches: 1, repeats: 7 };

function child() {
  const { MemoryUSMDevice, SyclQueue, getDevices } = require('..');
  const gpu = getDevices().find((d) => d.backend === 'cuda');
  if (!gpu) return {};
  const queue = new SyclQueue(gpu);
  const out = {};
  for (const n of SIZES) {
    const host = new Uint8Array(n).fill(3);
    const dev = new MemoryUSMDevice(n, { queue });
    const h2d = measure(() => dev.copyFromHost(host), TIMING).ns;
    const d2h = measure(() => dev.copyToHost(host), TIMING).ns;
    out[sizeLabel(n)] = { h2d: n / h2d, d2h: n / d2h };
    dev.free();
  }
  return out;
}

if (process.argv[2] === '--child') {
  process.stdout.write(JSON.stringify(child()));
} else {
  const run = (threshold) => {
    const env = { ...process.env, DPCTL_MEMORY_STAGING_THRESHOLD: String(threshold) };
    const r = spawnSync(process.execPath, [__filename, '--child'], { env, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(r.stderr);
    return JSON.parse(r.stdout);
  };
  const staged = run(1);
  const direct = run(0);
  if (Object.keys(staged).length === 0) {
    console.log('staging sweep: no CUDA device');
    process.exit(0);
  }
  console.log('size      | H2D staged | H2D direct | D2H staged | D2H direct   (GB/s)');
  for (const size of Object.keys(staged)) {
    const f = (x) => x.toFixed(2).padStart(10);
    console.log(`${size.padEnd(9)} | ${f(staged[size].h2d)} | ${f(direct[size].h2d)} | ${f(staged[size].d2h)} | ${f(direct[size].d2h)}`);
  }
}
