#!/usr/bin/env node
// Sweeps the staging pipeline's tunables for pageable copies (a plain JS Uint8Array to and
// from GPU device memory): chunk size, smallest chunk and lane count, each setting in its
// own process (the addon reads them once, from DPCTL_MEMORY_STAGING_*; see
// src/provider/cuda/staging.rs), plus the driver's own path (staging off) as the baseline.
// Prints every figure and the best setting per size and direction.
// Usage, from the repository root with the addon built: node bench/staging-sweep.js
// (SWEEP_QUICK=1: a smaller grid; SWEEP_SET=pipeline: the mid sizes, 1-32 MiB, with the
// pipelined path's settings against the lanes alone).
'use strict';
const { spawnSync } = require('node:child_process');
const { MiB, sizeLabel, measure } = require('./lib');

const PIPELINE_SET = process.env.SWEEP_SET === 'pipeline';
const SIZES = PIPELINE_SET ? [1 * MiB, 2 * MiB, 4 * MiB, 8 * MiB, 16 * MiB, 32 * MiB] : [1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB];
const TIMING = { warmupCalls: 2, batchTargetMs: 10, maxBatch: 200, warmupBatches: 1, repeats: 5 };
const quick = process.env.SWEEP_QUICK === '1';
const KiB = 1024;
const CHUNKS = quick ? [4 * MiB] : [2 * MiB, 4 * MiB, 8 * MiB];
const MIN_CHUNKS = quick ? [256 * KiB] : [128 * KiB, 256 * KiB, 512 * KiB, 1 * MiB];
const LANES = quick ? [8] : [4, 8, 16];

function child() {
  const { MemoryUSMDevice, SyclQueue, getDevices } = require('..');
  const gpu = getDevices().find((d) => d.backend === 'cuda');
  if (!gpu) return {};
  if (process.env.SWEEP_PROBE === '1') return { probe: true };
  const queue = new SyclQueue(gpu);
  const out = {};
  for (const n of SIZES) {
    const host = new Uint8Array(n).fill(3);
    const back = new Uint8Array(n);
    const dev = new MemoryUSMDevice(n, { queue });
    const h2d = measure(() => dev.copyFromHost(host), TIMING).ns;
    const d2h = measure(() => dev.copyToHost(back), TIMING).ns;
    if (back[0] !== 3 || back[n - 1] !== 3) throw new Error(`round trip of ${sizeLabel(n)} lost bytes`);
    out[sizeLabel(n)] = { h2d: n / h2d, d2h: n / d2h };
    dev.free();
  }
  return out;
}

function run(env) {
  const r = spawnSync(process.execPath, [__filename, '--child'], { env: { ...process.env, ...env }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`child ${JSON.stringify(env)} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** The pipelined path (up to DPCTL_MEMORY_STAGING_PIPELINE_MAX) against the lanes alone. */
function pipelineSettings() {
  const at = (name, env) => ({ name, env: { DPCTL_MEMORY_STAGING_THRESHOLD: '1', ...env } });
  return [
    at('lanes only (pipeline off)', { DPCTL_MEMORY_STAGING_PIPELINE_MAX: '0' }),
    at('defaults (pipelined H2D 8, D2H 32 MiB)', {}),
    at('both ways pipelined to 4 MiB', { DPCTL_MEMORY_STAGING_PIPELINE_MAX: String(4 * MiB) }),
    at('both ways pipelined to 8 MiB', { DPCTL_MEMORY_STAGING_PIPELINE_MAX: String(8 * MiB) }),
    at('both ways pipelined to 16 MiB', { DPCTL_MEMORY_STAGING_PIPELINE_MAX: String(16 * MiB) }),
    at('pipeline, min chunk 256 KiB', { DPCTL_MEMORY_STAGING_PIPELINE_MAX: String(32 * MiB), DPCTL_MEMORY_STAGING_MIN_CHUNK: String(256 * KiB) }),
    at('pipeline, min chunk 1 MiB', { DPCTL_MEMORY_STAGING_PIPELINE_MAX: String(32 * MiB), DPCTL_MEMORY_STAGING_MIN_CHUNK: String(MiB) }),
    at('pipeline, chunk 4 MiB', { DPCTL_MEMORY_STAGING_PIPELINE_MAX: String(32 * MiB), DPCTL_MEMORY_STAGING_CHUNK: String(4 * MiB) }),
    at('pipeline, 16 lanes', { DPCTL_MEMORY_STAGING_PIPELINE_MAX: String(32 * MiB), DPCTL_MEMORY_STAGING_LANES: '16' }),
    at('defaults, chunk 4 MiB', { DPCTL_MEMORY_STAGING_CHUNK: String(4 * MiB) }),
    at('defaults, chunk 4 MiB, min chunk 1 MiB', { DPCTL_MEMORY_STAGING_CHUNK: String(4 * MiB), DPCTL_MEMORY_STAGING_MIN_CHUNK: String(MiB) }),
  ];
}

function main() {
  const settings = [{ name: 'driver (staging off)', env: { DPCTL_MEMORY_STAGING_THRESHOLD: '0' } }];
  if (PIPELINE_SET) settings.push(...pipelineSettings());
  for (const lanes of PIPELINE_SET ? [] : LANES) {
    for (const chunk of CHUNKS) {
      for (const min of MIN_CHUNKS) {
        if (min > chunk) continue;
        settings.push({
          name: `lanes ${String(lanes).padStart(2)} chunk ${sizeLabel(chunk).padStart(6)} min ${sizeLabel(min).padStart(7)}`,
          env: {
            DPCTL_MEMORY_STAGING_THRESHOLD: '1',
            DPCTL_MEMORY_STAGING_LANES: String(lanes),
            DPCTL_MEMORY_STAGING_CHUNK: String(chunk),
            DPCTL_MEMORY_STAGING_MIN_CHUNK: String(min),
          },
        });
      }
    }
  }
  const labels = SIZES.map(sizeLabel);
  if (Object.keys(run({ DPCTL_MEMORY_STAGING_THRESHOLD: '0', SWEEP_PROBE: '1' })).length === 0) {
    console.log('staging sweep: no CUDA device');
    return;
  }
  console.log(`staging sweep: ${settings.length} settings, sizes ${labels.join(' ')} (GB/s, H2D / D2H)`);
  const header = `${'setting'.padEnd(38)} | ${labels.map((l) => l.padStart(13)).join(' | ')}`;
  console.log(header);
  console.log('-'.repeat(header.length));
  const results = [];
  for (const setting of settings) {
    const figures = run(setting.env);
    results.push({ setting, figures });
    const cells = labels.map((l) => `${figures[l].h2d.toFixed(1).padStart(6)}/${figures[l].d2h.toFixed(1).padEnd(6)}`);
    console.log(`${setting.name.padEnd(38)} | ${cells.join(' | ')}`);
  }
  const driver = results[0].figures;
  console.log('\nbest per size (ratio to the driver path in parentheses):');
  for (const l of labels) {
    for (const dir of ['h2d', 'd2h']) {
      const best = results.reduce((a, b) => (b.figures[l][dir] > a.figures[l][dir] ? b : a));
      const value = best.figures[l][dir];
      console.log(`  ${l.padEnd(8)} ${dir}: ${value.toFixed(1).padStart(6)} GB/s (${(value / driver[l][dir]).toFixed(2)}x) ${best.setting.name}`);
    }
  }
  // One setting serves every size: the best by the lowest worst ratio to each column's best.
  const columnBest = {};
  for (const l of labels) for (const dir of ['h2d', 'd2h']) columnBest[`${l}.${dir}`] = Math.max(...results.map((r) => r.figures[l][dir]));
  const score = (r) => Math.min(...labels.flatMap((l) => ['h2d', 'd2h'].map((dir) => r.figures[l][dir] / columnBest[`${l}.${dir}`])));
  const overall = results.slice(1).reduce((a, b) => (score(b) > score(a) ? b : a));
  console.log(`\nbest single setting (worst column at ${(score(overall) * 100).toFixed(0)}% of that column's best): ${overall.setting.name}`);
  console.log(`  env: ${Object.entries(overall.setting.env).map(([k, v]) => `${k}=${v}`).join(' ')}`);
}

if (process.argv[2] === '--child') {
  process.stdout.write(JSON.stringify(child()));
} else {
  main();
}
