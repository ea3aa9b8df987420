#!/usr/bin/env node
// Two GPUs of one host, ours against the CUDA runtime through CuPy in the same run
// (bench/peers/cuda_multigpu.py, same case ids), 256 MiB each way:
// - peer access on: copyFromDevice between the two GPUs after enablePeerAccess both ways,
//   against cudaMemcpyPeer after cudaDeviceEnablePeerAccess (target: at least 0.95x);
// - peer access off: copyFromDevice between the two GPUs, against the pinned host round
//   trip of the same run (GPU to a pinned MemoryUSMHost, then to the other GPU; target: at
//   least 0.9x), with CuPy's cudaMemcpyPeer without peer access as context;
// - the link: GB/s beside what `nvidia-smi topo -m` and `nvidia-smi nvlink -s` say.
// Skips, saying so, with fewer than two CUDA devices. Writes bench/results-multigpu-<host>-<date>.json.
// Usage, from the repository root with the addon built: node bench/multigpu.js
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { MiB, sizeLabel, measure, childResult } = require('./lib');

const SIZE = Number(process.env.MULTIGPU_SIZE || 256 * MiB);
// Few calls of 256 MiB fill a 20 ms batch: one call per batch, medians of 10.
const TIMING = { warmupCalls: 2, batchTargetMs: 20, maxBatch: 1, warmupBatches: 1, repeats: 10 };

function nvidiaSmi(args) {
  const r = spawnSync('nvidia-smi', args, { encoding: 'utf8', timeout: 30_000 });
  return r.error ? `nvidia-smi ${args.join(' ')}: ${r.error.message}` : `${r.stdout}${r.stderr}`.trim();
}

function runPeer(python) {
  const cfg = JSON.stringify({ size: SIZE, timing: TIMING });
  const r = spawnSync(python, [path.join(__dirname, 'peers', 'cuda_multigpu.py'), cfg], {
    env: { ...process.env, PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1' },
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    timeout: 600_000,
    killSignal: 'SIGKILL',
  });
  return childResult(r, r.error ? python : 'cuda_multigpu.py');
}

function main() {
  const m = require('..');
  const gpus = m.getDevices().filter((d) => d.backend === 'cuda');
  if (gpus.length < 2) {
    console.log(`multigpu bench: needs 2 CUDA devices, found ${gpus.length} (devices: ${m.getDevices().map((d) => d.filterString).join(', ') || 'none'}): skipped`);
    return;
  }
  const [g0, g1] = gpus;
  const lab = sizeLabel(SIZE);
  const queues = [new m.SyclQueue(g0), new m.SyclQueue(g1)];
  const dev = queues.map((queue, i) => {
    const d = new m.MemoryUSMDevice(SIZE, { queue });
    d.memset(i + 1);
    return d;
  });
  // The pinned host round trip: one host buffer registered (cuMemHostRegister, portable,
  // so both GPUs' contexts DMA to and from it), GPU a to it, then it to GPU b. (A
  // MemoryUSMHost is memory of one context: a copy from it into the other GPU's memory
  // would cross contexts and be staged, which is no pinned round trip.)
  const pinned = new Uint8Array(SIZE);
  const registration = m.registerHost(pinned, { queue: queues[0] });
  const ours = {};
  const checks = [['the round trip\'s host buffer is registered (pinned)', registration.registered]];
  const failed = {};
  // A case that throws is reported, and the others still run.
  const run = (id, fn) => {
    try {
      ours[id] = measure(fn, TIMING).ns;
    } catch (err) {
      failed[id] = `${err.code ? `${err.code}: ` : ''}${err.message}`;
    }
  };
  const pairs = [[0, 1], [1, 0]];
  let possible = [false, false];
  try {
    for (const [a, b] of pairs) {
      run(`d2d.peer_off.${a}to${b}.${lab}`, () => dev[b].copyFromDevice(dev[a]));
      run(`d2d.pinned_roundtrip.${a}to${b}.${lab}`, () => {
        dev[a].copyToHost(pinned);
        dev[b].copyFromHost(pinned);
      });
    }
    possible = [g0.canAccessPeer(g1), g1.canAccessPeer(g0)];
    const can = possible[0] && possible[1];
    if (can) {
      g0.enablePeerAccess(g1);
      g1.enablePeerAccess(g0);
      for (const [a, b] of pairs) run(`d2d.peer_on.${a}to${b}.${lab}`, () => dev[b].copyFromDevice(dev[a]));
      g0.disablePeerAccess(g1);
      g1.disablePeerAccess(g0);
    }
    dev[0].memset(7);
    dev[1].copyFromDevice(dev[0]);
    const back = dev[1].copyToHost();
    checks.push(['bytes arrive', back[0] === 7 && back[SIZE - 1] === 7]);
  } finally {
    registration.unregister();
    for (const d of dev) d.free();
  }
  const python = process.env.BENCH_PYTHON || 'python3';
  const peer = runPeer(python);
  const theirs = peer.status === 'ok' ? Object.fromEntries(Object.entries(peer.results).map(([k, v]) => [k, v.ns])) : {};
  const gbs = (ns) => (ns ? (SIZE / ns).toFixed(1) : '-');
  const rows = [];
  for (const [a, b] of pairs) {
    const on = `d2d.peer_on.${a}to${b}.${lab}`;
    const off = `d2d.peer_off.${a}to${b}.${lab}`;
    const trip = `d2d.pinned_roundtrip.${a}to${b}.${lab}`;
    rows.push([on, ours[on], theirs[on], 'cudaMemcpyPeer (CuPy), peer on', 0.95]);
    rows.push([off, ours[off], ours[trip], 'our pinned host round trip', 0.9]);
    rows.push([off, ours[off], theirs[off], 'cudaMemcpyPeer (CuPy), peer off', undefined]);
    rows.push([trip, ours[trip], theirs[trip], 'CuPy pinned round trip', undefined]);
  }
  console.log(`multigpu bench: ${g0.filterString} (${g0.name}) and ${g1.filterString}, ${lab}, ratio = peer time / ours`);
  console.log(`peer access possible: 0 to 1 ${possible[0]}, 1 to 0 ${possible[1]} (the peer_on rows need both)`);
  console.log('case | ours GB/s | peer GB/s | peer | ratio | target | met');
  for (const [id, o, p, name, target] of rows) {
    const ratio = o && p ? p / o : undefined;
    const met = target === undefined || ratio === undefined ? '' : ratio >= target ? 'yes' : 'NO';
    console.log(`${id} | ${gbs(o)} | ${gbs(p)} | ${name} | ${ratio?.toFixed(2) ?? '-'} | ${target ?? ''} | ${met}`);
  }
  if (peer.status !== 'ok') console.log(`CuPy peer ${peer.status}: ${peer.error}`);
  for (const [what, ok] of checks) if (!ok) console.log(`CHECK FAILED: ${what}`);
  for (const [id, error] of Object.entries(failed)) console.log(`CASE FAILED: ${id}: ${error}`);
  const topo = nvidiaSmi(['topo', '-m']);
  const nvlink = nvidiaSmi(['nvlink', '-s']);
  console.log(`\nnvidia-smi topo -m:\n${topo}\n\nnvidia-smi nvlink -s:\n${nvlink}`);
  const out = path.join(__dirname, `results-multigpu-${os.hostname()}-${new Date().toISOString().slice(0, 10)}.json`);
  fs.writeFileSync(out, JSON.stringify({ size: SIZE, possible, ours, failed, peer, rows, checks, topo, nvlink }, null, 2));
  console.log(`wrote ${out}`);
  if (checks.some(([, ok]) => !ok) || Object.keys(failed).length > 0) process.exitCode = 1;
}

main();
