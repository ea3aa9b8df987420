#!/usr/bin/env node
// Installs Intel's SYCL runtime (with its OpenCL CPU device) from PyPI into a versioned
// per-user cache, unless one is already there or an installed oneAPI is named by
// DPCTL_MEMORY_SYCL_ROOT / SYCL_ROOT / CMPLR_ROOT / ONEAPI_ROOT. Idempotent and safe to run from several clones at once:
// it installs into a temporary folder and renames it into place.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const os = require('node:os');
const { spawnSync } = require('node:child_process');

const RUNTIME_VERSION = '2025.3.3';
// The four runtime wheels, plus the libraries they need that pip's --no-deps leaves out:
// the UR adapters need libumf (umf) and libhwloc (tcmlib); the OpenCL CPU device needs libtbb.
const REQUIREMENTS = [
  `intel-sycl-rt==${RUNTIME_VERSION}`,
  `intel-cmplr-lib-ur==${RUNTIME_VERSION}`,
  `intel-cmplr-lib-rt==${RUNTIME_VERSION}`,
  `intel-opencl-rt==${RUNTIME_VERSION}`,
  'umf==1.0.3',
  'tbb==2022.3.1',
  'tcmlib==1.6.0',
];
const MARKER = '.dpctl-memory-complete';
// What a complete cache records in its marker: a cache made with other packages is redone.
const MARKER_TEXT = `${REQUIREMENTS.join('\n')}\n`;

function cacheRoot() {
  if (process.env.DPCTL_MEMORY_CACHE) return process.env.DPCTL_MEMORY_CACHE;
  const xdg = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(xdg, 'dpctl-memory');
}

function runtimeDir() {
  return path.join(cacheRoot(), `sycl-runtime-${RUNTIME_VERSION}`);
}

function installedOneApi() {
  // The same variables, in the same order, as src/provider/sycl/locate.rs (ROOT_VARS).
  for (const name of ['DPCTL_MEMORY_SYCL_ROOT', 'SYCL_ROOT', 'CMPLR_ROOT', 'ONEAPI_ROOT']) {
    const root = process.env[name];
    if (!root) continue;
    for (const candidate of [root, path.join(root, 'compiler', 'latest')]) {
      if (fs.existsSync(path.join(candidate, 'include', 'sycl', 'sycl.hpp'))) return candidate;
    }
  }
  return null;
}

function isComplete(dir) {
  try {
    return fs.readFileSync(path.join(dir, MARKER), 'utf8') === MARKER_TEXT;
  } catch {
    return false;
  }
}

function findPython() {
  for (const exe of [process.env.PYTHON, 'python3', 'python'].filter(Boolean)) {
    const probe = spawnSync(exe, ['-m', 'pip', '--version'], { stdio: 'ignore' });
    if (probe.status === 0) return exe;
  }
  return null;
}

function install({ quiet = false } = {}) {
  const oneapi = installedOneApi();
  if (oneapi) {
    if (!quiet) console.log(`dpctl-memory: using the installed oneAPI at ${oneapi}`);
    return oneapi;
  }
  const dir = runtimeDir();
  if (isComplete(dir)) {
    if (!quiet) console.log(`dpctl-memory: SYCL runtime ${RUNTIME_VERSION} is cached at ${dir}`);
    return dir;
  }
  const python = findPython();
  if (!python) {
    throw new Error(
      'dpctl-memory: installing the SYCL runtime needs Python 3 with pip (python3 -m pip); ' +
        'install it, or point ONEAPI_ROOT at an installed oneAPI');
  }
  fs.mkdirSync(cacheRoot(), { recursive: true });
  const staging = fs.mkdtempSync(path.join(cacheRoot(), `.staging-${RUNTIME_VERSION}-`));
  console.log(`dpctl-memory: installing SYCL runtime ${RUNTIME_VERSION} from PyPI into ${dir} (about 1 GB, once)`);
  const args = ['-m', 'pip', 'install', '--quiet', '--no-deps', '--no-compile', '--no-warn-script-location',
    '--disable-pip-version-check', '--prefix', staging, ...REQUIREMENTS];
  const result = spawnSync(python, args, { stdio: 'inherit' });
  if (result.status !== 0) {
    fs.rmSync(staging, { recursive: true, force: true });
    throw new Error(`dpctl-memory: pip failed (exit ${result.status}) installing ${REQUIREMENTS.join(', ')}`);
  }
  fs.writeFileSync(path.join(staging, MARKER), MARKER_TEXT);
  if (fs.existsSync(dir) && !isComplete(dir)) {
    // An incomplete or outdated cache: move it aside and drop it.
    const stale = `${dir}.stale-${process.pid}`;
    fs.renameSync(dir, stale);
    fs.rmSync(stale, { recursive: true, force: true });
  }
  try {
    fs.renameSync(staging, dir);
  } catch (err) {
    // Another process finished first: keep its copy.
    fs.rmSync(staging, { recursive: true, force: true });
    if (!isComplete(dir)) throw err;
  }
  return dir;
}

module.exports = { install, runtimeDir, installedOneApi, RUNTIME_VERSION };

if (require.main === module) {
  try {
    const dir = install();
    console.log(dir);
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
