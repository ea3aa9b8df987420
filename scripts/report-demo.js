#!/usr/bin/env node
'use strict';
// The picture of the report in docs/observe.md (docs/report.png): a small workload on the CPU
// device with a recorded history (a model's weights, batches that come and go, a leak of
// shared memory), its report, and Chromium's screenshot of the page.
//
//   node scripts/report-demo.js [outDir]      (default: docs/; needs chromium on PATH)
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const m = require('..');
const { renderHtml } = require('./report.js');

const outDir = path.resolve(process.argv[2] ?? path.join(__dirname, '..', 'docs'));
const MiB = 2 ** 20;
const queue = new m.SyclQueue(process.env.DEMO_DEVICE ?? 'opencl:cpu');
const leaked = [];

function loadWeights() {
  return [0, 1, 2, 3].map(() => new m.MemoryUSMDevice(24 * MiB, { queue }));
}
function stageBatch(i) {
  const input = new m.MemoryUSMHost((4 + (i % 5)) * MiB, { queue });
  const activations = new m.MemoryUSMDevice((8 + (i % 7) * 2) * MiB, { queue });
  return [input, activations];
}
function cacheResult(i) {
  // The leak the report finds: one shared block per batch, never freed.
  if (i % 4 === 0) leaked.push(new m.MemoryUSMShared(3 * MiB, { queue }));
}

m.recordMemoryHistory({ maxEntries: 100_000 });
const weights = loadWeights();
let inFlight = [];
for (let i = 0; i < 120; i++) {
  inFlight.push(...stageBatch(i));
  cacheResult(i);
  if (inFlight.length > 8 + (i % 10)) for (const b of inFlight.splice(0, 4)) b.free();
  if (i === 80) m.poolTrim();
}
for (const b of inFlight) b.free();
inFlight = [];
weights[3].free();
const snapshot = m.memorySnapshot();
m.recordMemoryHistory({ enabled: false });

fs.mkdirSync(outDir, { recursive: true });
const page = path.join(outDir, 'report-demo.html');
fs.writeFileSync(page, renderHtml(snapshot, { title: 'dpctl-memory report: demo workload' }));
const chromium = process.env.CHROME_BIN ?? 'chromium';
const shot = spawnSync(chromium, ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--window-size=1180,1400', `--screenshot=${path.join(outDir, 'report.png')}`, `file://${page}`], { encoding: 'utf8' });
fs.rmSync(page);
if (shot.status !== 0) {
  console.error(`report-demo: ${chromium} failed: ${shot.stderr || shot.error}`);
  process.exit(1);
}
console.log(`report-demo: wrote ${path.join(outDir, 'report.png')}`);
for (const b of [...weights.slice(0, 3), ...leaked]) b.free();
