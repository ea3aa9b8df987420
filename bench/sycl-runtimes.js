#!/usr/bin/env node
// The SYCL 2026 runtime against the default 2025 one, in the same run (issue 42): the CPU
// section's cases of ours (bench/round.js cpu) on each runtime in turn, rounds alternating
// which goes first, the 2026 one named by DPCTL_MEMORY_SYCL_ROOT as a user would; then the
// first use (a fresh process's first queue and allocation), a SYCL-source kernel's first
// and repeated build (2026 only), and each runtime's size on disk.
// ratio = the 2025 runtime's time / the 2026 one's (above 1: 2026 is faster; for bandwidth,
// 2026's GB/s / 2025's). Needs both runtimes installed (npm test installs both; else
// `npx dpctl-memory-install-runtime --sycl 2026`) and the addon built with both shims.
// Usage: node bench/sycl-runtimes.js   (BENCH_QUICK=1: one round, fewer repeats)
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const { spawnSync } = require('node:child_process');
const config = require('./config');
const { median, childResult } = require('./lib');
const { runtimeDir, isComplete, RUNTIMES } = require('../scripts/install-runtime.js');

const ROOT_VARS = ['DPCTL_MEMORY_SYCL_ROOT', 'SYCL_ROOT', 'CMPLR_ROOT', 'ONEAPI_ROOT'];
const sides = [
  { name: `2025 (${RUNTIMES.default.version})`, dir: runtimeDir(RUNTIMES.default), spec: RUNTIMES.default, env: {} },
  { name: `2026 (${RUNTIMES[2026].version})`, dir: runtimeDir(RUNTIMES[2026]), spec: RUNTIMES[2026], env: { DPCTL_MEMORY_SYCL_ROOT: runtimeDir(RUNTIMES[2026]) } },
];

function envOf(side) {
  const env = { ...process.env };
  for (const name of ROOT_VARS) delete env[name];
  return { ...env, ...side.env };
}

/** One round of the CPU section on `side`'s runtime: id -> { ns, samples }. */
function round(side) {
  const r = spawnSync(process.execPath, [path.join(__dirname, 'round.js'), 'cpu'], {
    encoding: 'utf8', maxBuffer: 256 << 20, env: envOf(side), timeout: config.peerTimeoutS * 1000, killSignal: 'SIGKILL',
  });
  const result = childResult(r, `bench/round.js on ${side.name}`);
  if (result.status === 'missing' || result.status === 'error') throw new Error(result.error);
  return result.ours;
}

/** Milliseconds from a fresh process's start to its first queue and allocation. */
function firstUse(side) {
  const script = `const m = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    const q = new m.SyclQueue('opencl:cpu'); new m.MemoryUSMShared(64, { queue: q }).free();
    console.log(JSON.stringify({ ms: performance.now(), driver: q.syclDevice.driverVersion }));`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: envOf(side) });
  if (r.status !== 0) throw new Error(`first use on ${side.name}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

// A SYCL-source kernel's build (the kernel_compiler extension, 2026 only): the first build
// of a source in a fresh process, then the same source again in that process.
const SYCL_SOURCE = `#include <sycl/sycl.hpp>
namespace syclext = sycl::ext::oneapi::experimental;
extern "C" SYCL_EXTERNAL SYCL_EXT_ONEAPI_FUNCTION_PROPERTY((syclext::nd_range_kernel<1>))
void axpy(float *y, const float *x, float a) {
  size_t i = sycl::ext::oneapi::this_work_item::get_nd_item<1>().get_global_linear_id();
  y[i] = a * x[i] + y[i];
}`;

/**
 * Milliseconds of the first and the second build of SYCL_SOURCE in a fresh process on
 * `side`; `extraEnv` turns the runtime's persistent cache on.
 */
function syclSourceBuilds(side, extraEnv = {}) {
  const script = `const m = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    const q = new m.SyclQueue('opencl:cpu');
    const times = [];
    for (let i = 0; i < 2; i++) {
      const t0 = performance.now();
      m.createProgramFromSycl(q, ${JSON.stringify(SYCL_SOURCE)}).getKernel('axpy');
      times.push(performance.now() - t0);
    }
    console.log(JSON.stringify(times));`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...envOf(side), ...extraEnv } });
  if (r.status !== 0) throw new Error(`SYCL-source builds on ${side.name}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

function duBytes(dir) {
  const r = spawnSync('du', ['-sb', dir], { encoding: 'utf8' });
  return r.status === 0 ? Number(r.stdout.split(/\s/)[0]) : NaN;
}

function main() {
  for (const side of sides) {
    if (!isComplete(side.dir, side.spec)) {
      console.error(`bench/sycl-runtimes: ${side.name} is not installed at ${side.dir} (npm test installs both; or npx dpctl-memory-install-runtime --sycl 2026)`);
      process.exit(2);
    }
  }
  if (!fs.existsSync(path.join(__dirname, '..', 'dpctl_memory_shim_sycl9.so'))) {
    console.error('bench/sycl-runtimes: dpctl_memory_shim_sycl9.so is not built: npm run build with the 2026 runtime installed');
    process.exit(2);
  }
  const rounds = config.cpu.rounds;
  const samples = sides.map(() => ({}));
  const firsts = sides.map(() => []);
  let driver = [];
  for (let i = 0; i < rounds; i++) {
    // Alternate which runtime goes first, so that drift falls on both.
    const order = i % 2 === 0 ? [0, 1] : [1, 0];
    for (const s of order) {
      for (const [id, r] of Object.entries(round(sides[s]))) {
        if (r.error) continue;
        (samples[s][id] ||= []).push(...r.samples);
      }
      const first = firstUse(sides[s]);
      firsts[s].push(first.ms);
      driver[s] = first.driver;
    }
  }
  const rows = [];
  for (const id of Object.keys(samples[0]).filter((k) => samples[1][k])) {
    const [a, b] = [median(samples[0][id]), median(samples[1][id])];
    rows.push({ case: id, [sides[0].name]: `${(a / 1000).toFixed(2)} us`, [sides[1].name]: `${(b / 1000).toFixed(2)} us`, ratio: +(a / b).toFixed(2) });
  }
  const [f0, f1] = firsts.map((ms) => median(ms));
  rows.push({ case: 'first use (process start to first queue + allocation)', [sides[0].name]: `${f0.toFixed(0)} ms`, [sides[1].name]: `${f1.toFixed(0)} ms`, ratio: +(f0 / f1).toFixed(2) });
  const builds = [];
  for (let i = 0; i < rounds; i++) builds.push(syclSourceBuilds(sides[1]));
  const [first, second] = [median(builds.map((b) => b[0])), median(builds.map((b) => b[1]))];
  rows.push({ case: 'SYCL-source kernel: first build in a process', [sides[0].name]: 'cannot (no SYCL-source compilation)', [sides[1].name]: `${first.toFixed(0)} ms`, ratio: null });
  rows.push({ case: 'SYCL-source kernel: the same source built again', [sides[0].name]: 'cannot', [sides[1].name]: `${second.toFixed(0)} ms`, ratio: null });
  // With the runtime's persistent cache (a fresh folder): a first process fills it, a second
  // one builds from it.
  const cacheDir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'dpctl-memory-sycl-cache-'));
  try {
    const cached = { SYCL_CACHE_PERSISTENT: '1', SYCL_CACHE_DIR: cacheDir };
    const filling = syclSourceBuilds(sides[1], cached);
    const reading = syclSourceBuilds(sides[1], cached);
    rows.push({ case: 'SYCL-source kernel, SYCL_CACHE_PERSISTENT=1: built again in the process', [sides[0].name]: 'cannot', [sides[1].name]: `${filling[1].toFixed(0)} ms`, ratio: null });
    rows.push({ case: 'SYCL-source kernel, SYCL_CACHE_PERSISTENT=1: first build of a new process', [sides[0].name]: 'cannot', [sides[1].name]: `${reading[0].toFixed(0)} ms`, ratio: null });
  } finally {
    fs.rmSync(cacheDir, { recursive: true, force: true });
  }
  const [d0, d1] = sides.map((side) => duBytes(side.dir));
  rows.push({ case: 'installed size', [sides[0].name]: `${(d0 / 2 ** 30).toFixed(2)} GiB`, [sides[1].name]: `${(d1 / 2 ** 30).toFixed(2)} GiB`, ratio: +(d0 / d1).toFixed(2) });
  console.log(`SYCL runtimes on the OpenCL CPU device (drivers ${driver.join(' / ')}), ${rounds} round(s); ratio = 2025 time / 2026 time (above 1: 2026 faster)`);
  console.table(rows);
  console.log("dpctl's create_kernel_bundle_from_sycl_source is not a peer here: it is unreleased (dpctl HEAD, not in PyPI's 0.22.1)");
  const slower = rows.filter((row) => row.ratio !== null && row.ratio < 0.9);
  console.log(slower.length === 0 ? 'no case is more than 10% slower on 2026' : `slower on 2026 by more than 10%: ${slower.map((row) => `${row.case} (${row.ratio})`).join(', ')}`);
}

main();
