#!/usr/bin/env node
// Installs Intel's SYCL runtime (with its OpenCL CPU device) from PyPI into a versioned
// per-user cache, unless one is already there or an installed oneAPI is named by
// DPCTL_MEMORY_SYCL_ROOT / SYCL_ROOT / CMPLR_ROOT / ONEAPI_ROOT. What it installs, and the
// sha256 of every wheel, is `runtime.json` (pip checks them: --require-hashes).
//
// Safe to run from several clones at once, and to interrupt: it installs into a staging
// folder (which also holds pip's downloads) and renames it into place; SIGINT, SIGTERM and
// SIGHUP remove the staging folder, and every run first removes what an earlier run that
// died left behind. Progress: pip's own output (its bar on a terminal) and, when stdout is
// not a terminal, a line every few seconds with the bytes written so far.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const os = require('node:os');
const { spawn, spawnSync } = require('node:child_process');

const MANIFEST = require('../runtime.json');

const RUNTIME_VERSION = MANIFEST.version;
const WHEELS = MANIFEST.wheels.map((wheel) => ({ ...wheel, version: wheel.version || RUNTIME_VERSION }));
const REQUIREMENTS = WHEELS.map((wheel) => `${wheel.name}==${wheel.version}`);
const MARKER = '.dpctl-memory-complete';
// What a complete cache records in its marker: a cache made with other packages is redone.
const MARKER_TEXT = `${REQUIREMENTS.join('\n')}\n`;
const STAGING_PREFIX = '.staging-';
// Inside a staging folder: who is filling it ({ pid, host }), so that another run can tell
// a live install from a dead one's leftovers.
const OWNER_FILE = '.dpctl-memory-owner.json';
// A staging folder without an owner file is a dead run's (or an older script's) unless it is
// this young: its owner may be between creating it and writing the file.
const OWNERLESS_GRACE_MS = 60 * 1000;
const HEARTBEAT_MS = 5000;
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];

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

function processIsAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** Bytes under `p` (files only; what cannot be read counts 0: pip moves files as we look). */
function sizeOf(p) {
  let stat;
  try {
    stat = fs.lstatSync(p);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.size;
  let total = 0;
  let entries = [];
  try {
    entries = fs.readdirSync(p);
  } catch {
    return 0;
  }
  for (const entry of entries) total += sizeOf(path.join(p, entry));
  return total;
}

const megabytes = (bytes) => `${(bytes / 2 ** 20).toFixed(0)} MB`;

/** Whether the staging folder `dir` belongs to no live install. */
function isAbandonedStaging(dir) {
  let owner;
  try {
    owner = JSON.parse(fs.readFileSync(path.join(dir, OWNER_FILE), 'utf8'));
  } catch {
    try {
      return Date.now() - fs.statSync(dir).mtimeMs > OWNERLESS_GRACE_MS;
    } catch {
      return false;
    }
  }
  // An install on another host (a shared home folder) cannot be checked from here.
  if (owner.host !== os.hostname()) return false;
  return !Number.isInteger(owner.pid) || !processIsAlive(owner.pid);
}

/**
 * Removes what interrupted or crashed installs left in the cache folder `root`: staging
 * folders no live install owns, and outdated caches that a dead run had moved aside
 * (`sycl-runtime-*.stale-<pid>`). Returns the names removed.
 */
function removeLeftovers(root = cacheRoot(), { log = console.log } = {}) {
  let entries;
  try {
    entries = fs.readdirSync(root);
  } catch {
    return [];
  }
  const removed = [];
  for (const name of entries) {
    const full = path.join(root, name);
    let abandoned = false;
    if (name.startsWith(STAGING_PREFIX)) abandoned = isAbandonedStaging(full);
    else {
      const aside = /^sycl-runtime-.*\.stale-(\d+)$/.exec(name);
      abandoned = aside !== null && !processIsAlive(Number(aside[1]));
    }
    if (!abandoned) continue;
    const bytes = sizeOf(full);
    fs.rmSync(full, { recursive: true, force: true });
    removed.push(name);
    log(`dpctl-memory: removed ${full} (${megabytes(bytes)}), left by an install that did not finish`);
  }
  return removed;
}

/** The pip requirements file: every wheel pinned to its version and sha256. */
function requirementsText() {
  return WHEELS.map((wheel) => `${wheel.name}==${wheel.version} --hash=sha256:${wheel.sha256}\n`).join('');
}

/** Runs pip into `staging`; resolves with how it ended, or the signal that interrupted it. */
function runPip(python, staging) {
  const requirements = path.join(staging, 'requirements.txt');
  fs.writeFileSync(requirements, requirementsText());
  // pip's downloads and unpacking go into the staging folder too: measured by the
  // heartbeat, and removed with it when the install is interrupted.
  const tmp = path.join(staging, '.tmp');
  fs.mkdirSync(tmp);
  const args = ['-m', 'pip', 'install', '--require-hashes', '--no-deps', '--no-compile', '--no-warn-script-location',
    '--disable-pip-version-check', '--prefix', staging, '-r', requirements];
  return new Promise((resolve) => {
    // PIP_ROOT_USER_ACTION: no venv advice when root runs it (CI); older pips ignore it.
    const env = { PIP_ROOT_USER_ACTION: 'ignore', ...process.env, TMPDIR: tmp };
    const child = spawn(python, args, { stdio: 'inherit', env });
    let interrupted = null;
    const onSignal = (signal) => {
      // A terminal's Ctrl-C reaches pip too; a signal sent to this process alone does not.
      interrupted = signal;
      child.kill(signal);
    };
    for (const signal of SIGNALS) process.on(signal, onSignal);
    const started = Date.now();
    const heartbeat = process.stdout.isTTY ? null : setInterval(() => {
      const seconds = (Date.now() - started) / 1000;
      const bytes = sizeOf(staging);
      console.log(`dpctl-memory: runtime install: ${megabytes(bytes)} downloaded and unpacked so far ` +
        `(${megabytes(bytes / seconds)}/s, ${seconds.toFixed(0)} s)`);
    }, HEARTBEAT_MS);
    const done = (outcome) => {
      if (heartbeat) clearInterval(heartbeat);
      for (const signal of SIGNALS) process.off(signal, onSignal);
      fs.rmSync(tmp, { recursive: true, force: true });
      resolve({ ...outcome, interrupted });
    };
    child.on('error', (error) => done({ error }));
    child.on('close', (status, signal) => done({ status, signal }));
  });
}

async function install({ quiet = false } = {}) {
  const oneapi = installedOneApi();
  if (oneapi) {
    if (!quiet) console.log(`dpctl-memory: using the installed oneAPI at ${oneapi}`);
    return oneapi;
  }
  const dir = runtimeDir();
  removeLeftovers(cacheRoot());
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
  const staging = fs.mkdtempSync(path.join(cacheRoot(), `${STAGING_PREFIX}${RUNTIME_VERSION}-`));
  fs.writeFileSync(path.join(staging, OWNER_FILE), JSON.stringify({ pid: process.pid, host: os.hostname() }));
  console.log(`dpctl-memory: installing SYCL runtime ${RUNTIME_VERSION} from PyPI into ${dir} (about 1 GB, once)`);
  const outcome = await runPip(python, staging);
  if (outcome.interrupted || outcome.status !== 0) fs.rmSync(staging, { recursive: true, force: true });
  if (outcome.interrupted) {
    console.error(`dpctl-memory: runtime install interrupted (${outcome.interrupted}); removed ${staging}`);
    // End as the signal would have ended this process without the handler.
    process.kill(process.pid, outcome.interrupted);
    throw new Error(`dpctl-memory: runtime install interrupted (${outcome.interrupted})`);
  }
  if (outcome.error) throw new Error(`dpctl-memory: could not run ${python}: ${outcome.error.message}`);
  if (outcome.status !== 0) {
    throw new Error(
      `dpctl-memory: pip failed (${outcome.signal || `exit ${outcome.status}`}) installing ${REQUIREMENTS.join(', ')}. ` +
        'If pip says the hashes do not match, the download was corrupted or substituted and was refused: ' +
        'run the install again, and report it if it persists.');
  }
  fs.rmSync(path.join(staging, OWNER_FILE), { force: true });
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

module.exports = { install, removeLeftovers, requirementsText, runtimeDir, installedOneApi, RUNTIME_VERSION };

const HELP = `Usage: npx dpctl-memory-install-runtime [--help]

Installs Intel's SYCL runtime ${RUNTIME_VERSION} (${WHEELS.map((wheel) => wheel.name).join(', ')})
from PyPI with \`python3 -m pip\` (wheels pinned by sha256), once per user, and prints
the folder it is in. About 1.3 GB.

  into:    \$DPCTL_MEMORY_CACHE/sycl-runtime-${RUNTIME_VERSION}
           (default \${XDG_CACHE_HOME:-~/.cache}/dpctl-memory/sycl-runtime-${RUNTIME_VERSION})
  skipped: when it is already there, or when an installed oneAPI is named by
           DPCTL_MEMORY_SYCL_ROOT, SYCL_ROOT, CMPLR_ROOT or ONEAPI_ROOT
  python:  $PYTHON, else python3, else python (pip's PIP_* variables apply)

Not needed on a machine that only uses NVIDIA GPUs (served through the CUDA driver).
Here: ${runtimeDir()}
`;

if (require.main === module) {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  if (args.length > 0) {
    process.stderr.write(`dpctl-memory-install-runtime: unknown argument '${args[0]}'\n\n${HELP}`);
    process.exit(2);
  }
  install().then(
    (dir) => console.log(dir),
    (err) => {
      console.error(err.message);
      process.exit(1);
    },
  );
}
