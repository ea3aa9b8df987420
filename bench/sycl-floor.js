// The C++ floor of a sync kernel submit (bench/peers/sycl_floor.cpp): built once with g++
// against the SYCL runtime the addon uses (its headers and libraries in the cache), into
// the cache beside it, then run as a peer of the CPU section. Reports a missing peer when
// g++, the runtime or its headers are not there.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { spawnSync } = require('node:child_process');
const { childResult } = require('./lib');

const SOURCE = path.join(__dirname, 'peers', 'sycl_floor.cpp');

/** Builds the probe if needed: `{ exe, env }` or `{ error }`. */
function buildFloor() {
  let runtime;
  try {
    runtime = require('../scripts/install-runtime.js').runtimeDir();
  } catch (err) {
    return { error: err.message };
  }
  const include = path.join(runtime, 'include');
  const lib = path.join(runtime, 'lib');
  if (!fs.existsSync(path.join(include, 'sycl', 'sycl.hpp'))) return { error: `no SYCL headers under ${include}` };
  const text = fs.readFileSync(SOURCE);
  const hash = crypto.createHash('sha256').update(text).update(runtime).digest('hex').slice(0, 16);
  const exe = path.join(path.dirname(runtime), `bench-sycl-floor-${hash}`);
  const env = { ...process.env, LD_LIBRARY_PATH: [lib, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') };
  const icd = path.join(lib, 'libintelocl.so');
  if (fs.existsSync(icd)) env.OCL_ICD_FILENAMES = icd;
  delete env.ONEAPI_DEVICE_SELECTOR;
  if (fs.existsSync(exe)) return { exe, env };
  const partial = `${exe}.${process.pid}.tmp`;
  const args = ['-O2', '-std=c++17', '-DSYCL_DISABLE_FSYCL_SYCLHPP_WARNING', '-isystem', include, SOURCE, '-o', partial, `-L${lib}`, `-Wl,-rpath,${lib}`, '-lsycl', '-lOpenCL'];
  const r = spawnSync(process.env.CXX || 'g++', args, { encoding: 'utf8' });
  if (r.error) return { error: `g++: ${r.error.message}` };
  if (r.status !== 0) return { error: `g++ exited ${r.status}: ${(r.stderr || '').trim().split('\n').slice(-3).join(' | ')}` };
  fs.renameSync(partial, exe);
  return { exe, env };
}

/** Runs the probe with `timing` (bench/config.js): the peer's JSON, or a missing/error status. */
function runFloor(timing, timeoutS) {
  const built = buildFloor();
  if (built.error) return { status: 'missing', error: built.error };
  const args = [timing.warmupCalls, timing.batchTargetMs, timing.maxBatch, timing.warmupBatches, timing.repeats].map(String);
  const r = spawnSync(built.exe, args, { env: built.env, encoding: 'utf8', timeout: timeoutS * 1000, killSignal: 'SIGKILL' });
  return childResult(r, 'the floor probe');
}

module.exports = { runFloor };
