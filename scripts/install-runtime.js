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
//
// What it installed is recorded (`.dpctl-memory-record` in the runtime folder): the sha256,
// size, inode and change time of every file of `lib/`, each checked first against the
// sha256 that pip's own RECORD of its wheel gives. The addon loads nothing of the cache
// unless its folders are private (owned by this user, writable by nobody else: the rules
// of ssh) and every file of `lib/` is the recorded one (src/provider/sycl/locate.rs). A
// cache made before records is checked against pip's RECORDs and recorded on the next run.
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const os = require('node:os');
const { spawn, spawnSync } = require('node:child_process');

const MANIFEST = require('../runtime.json');

/**
 * A runtime this script installs, from a section of runtime.json: its version, its wheels
 * (a wheel without a version is of the runtime's), their pip requirements and the marker a
 * complete cache of it holds (a cache made with other packages is redone).
 */
function runtimeSpec(section) {
  const version = section.version;
  const wheels = section.wheels.map((wheel) => ({ ...wheel, version: wheel.version || version }));
  const requirements = wheels.map((wheel) => `${wheel.name}==${wheel.version}`);
  return { version, wheels, requirements, markerText: `${requirements.join('\n')}\n` };
}
// The default runtime (DPC++ 2025, libsycl.so.8), and 2026's (libsycl.so.9: `--sycl 2026`).
const RUNTIMES = { default: runtimeSpec(MANIFEST), 2026: runtimeSpec(MANIFEST.sycl2026) };
const DEFAULT = RUNTIMES.default;
const RUNTIME_VERSION = DEFAULT.version;
const WHEELS = DEFAULT.wheels;
const MARKER = '.dpctl-memory-complete';
const MARKER_TEXT = DEFAULT.markerText;
const STAGING_PREFIX = '.staging-';
// Inside a staging folder: who is filling it ({ pid, host }), so that another run can tell
// a live install from a dead one's leftovers.
const OWNER_FILE = '.dpctl-memory-owner.json';
// A staging folder without an owner file is a dead run's (or an older script's) unless it is
// this young: its owner may be between creating it and writing the file.
const OWNERLESS_GRACE_MS = 60 * 1000;
const HEARTBEAT_MS = 5000;
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];

// The record of what was installed, and its first line (the layout locate.rs reads).
const RECORD_FILE = '.dpctl-memory-record';
const RECORD_HEADER = 'dpctl-memory runtime record 1';

/** An environment variable's value when it is an absolute path (relative ones are ignored, as XDG says). */
function absoluteVar(name) {
  const value = process.env[name];
  return value && path.isAbsolute(value) ? value : null;
}

/** The cache folder, as locate.rs finds it: DPCTL_MEMORY_CACHE, XDG_CACHE_HOME, HOME, absolute only. */
function cacheRoot() {
  const own = absoluteVar('DPCTL_MEMORY_CACHE');
  if (own) return own;
  const xdg = absoluteVar('XDG_CACHE_HOME');
  if (xdg) return path.join(xdg, 'dpctl-memory');
  const home = absoluteVar('HOME');
  if (home) return path.join(home, '.cache', 'dpctl-memory');
  throw new Error(
    'dpctl-memory: no cache folder: none of DPCTL_MEMORY_CACHE, XDG_CACHE_HOME and HOME is an absolute path ' +
      '(relative ones are ignored: they would depend on the working directory)');
}

function runtimeDir(spec = DEFAULT) {
  return path.join(cacheRoot(), `sycl-runtime-${spec.version}`);
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

/** Why `file` may not hold what the addon loads, or null (locate.rs's `private_problem`). */
function privateProblem(file, uid = process.geteuid()) {
  let stat;
  try {
    stat = fs.lstatSync(file);
  } catch (error) {
    return `${file}: ${error.code}`;
  }
  if (stat.isSymbolicLink()) return `${file} is a symbolic link (never followed in the cache)`;
  if (stat.uid !== uid) return `${file} is owned by uid ${stat.uid}, not by this user (uid ${uid})`;
  if ((stat.mode & 0o022) !== 0) return `${file} is writable by its group or by others (mode ${(stat.mode & 0o7777).toString(8)})`;
  return null;
}

/**
 * What makes the cache folder `dir` untrusted (locate.rs's `check_cache_private`): a list,
 * empty when none. `inner`: the folders inside it that must be private too.
 */
function trustProblems(dir, root = cacheRoot(), inner = ['lib', 'include']) {
  const uid = process.geteuid();
  const problems = [];
  let realRoot;
  try {
    realRoot = fs.realpathSync(root);
  } catch (error) {
    return [`${root}: ${error.code}`];
  }
  const below = path.relative(root, dir);
  let current = realRoot;
  const inside = [realRoot];
  for (const part of below.split(path.sep).filter(Boolean)) inside.push((current = path.join(current, part)));
  for (const sub of inner) inside.push(path.join(current, sub));
  for (const folder of inside) {
    const problem = privateProblem(folder, uid);
    if (problem) problems.push(problem);
  }
  // Folders inside lib/ (the loader searches x86_64/, tls/, glibc-hwcaps/... before lib/):
  // locate.rs's `check_subfolders`.
  if (problems.length === 0 && inner.includes('lib')) problems.push(...subfolderProblems(path.join(current, 'lib'), uid));
  for (let above = path.dirname(realRoot); ; above = path.dirname(above)) {
    const stat = fs.statSync(above);
    if (stat.uid !== uid && stat.uid !== 0) problems.push(`${above} (above the cache) is owned by uid ${stat.uid}, neither this user nor root`);
    else if ((stat.mode & 0o022) !== 0 && (stat.mode & 0o1000) === 0) {
      problems.push(`${above} (above the cache) is writable by its group or by others and not sticky (mode ${(stat.mode & 0o7777).toString(8)})`);
    }
    if (above === path.dirname(above)) break;
  }
  return problems;
}

/**
 * What is wrong below the folders of `lib` (locate.rs's `check_subfolders`): every entry
 * at any depth private (privateProblem), a regular file or a folder, and no library
 * (`*.so`, `*.so.N`) in any: the install puts libraries only directly in lib/.
 */
function subfolderProblems(lib, uid) {
  const problems = [];
  const walk = (folder) => {
    for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name);
      const problem = privateProblem(full, uid);
      if (problem) problems.push(problem);
      else if (entry.isDirectory()) walk(full);
      else if (!entry.isFile()) problems.push(`${full} is neither a regular file nor a folder`);
      else if (/\.so(\.|$)/.test(entry.name)) {
        problems.push(`${full} is a library in a sub-folder, which the dynamic loader searches before the folder itself (the install script puts none there)`);
      }
    }
  };
  for (const entry of fs.readdirSync(lib, { withFileTypes: true })) {
    const full = path.join(lib, entry.name);
    if (!entry.isDirectory()) continue;
    const problem = privateProblem(full, uid);
    if (problem) problems.push(problem);
    else walk(full);
  }
  return problems;
}

/** The sha256 of a file, hex. */
function sha256(file) {
  const hash = crypto.createHash('sha256');
  const fd = fs.openSync(file, 'r');
  try {
    const chunk = Buffer.allocUnsafe(1 << 20);
    let n;
    while ((n = fs.readSync(fd, chunk, 0, chunk.length, null)) > 0) hash.update(chunk.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest('hex');
}

/** The entries of `dir/lib` the record covers: its files (not its folders), by name `lib/<file>`. */
function libraryNames(dir) {
  const names = [];
  for (const entry of fs.readdirSync(path.join(dir, 'lib'), { withFileTypes: true })) {
    if (!entry.isDirectory()) names.push(`lib/${entry.name}`);
  }
  return names.sort();
}

/**
 * sha256 of each file pip installed under `dir`, from the RECORD of every wheel (pip wrote
 * them from the wheels whose own sha256 it checked): `lib/<file>` → hex.
 */
function pipRecords(dir) {
  const hashes = new Map();
  const libDir = path.join(dir, 'lib');
  for (const python of fs.readdirSync(libDir).filter((name) => name.startsWith('python'))) {
    const site = path.join(libDir, python, 'site-packages');
    let infos = [];
    try {
      infos = fs.readdirSync(site).filter((name) => name.endsWith('.dist-info'));
    } catch {
      continue;
    }
    for (const info of infos) {
      let text;
      try {
        text = fs.readFileSync(path.join(site, info, 'RECORD'), 'utf8');
      } catch {
        continue;
      }
      for (const line of text.split('\n')) {
        // `path,sha256=<urlsafe base64, unpadded>,size` (a path with a comma is quoted: not a library's).
        const match = /^([^",]+),sha256=([A-Za-z0-9_-]+),\d*$/.exec(line.trim());
        if (!match) continue;
        const relative = path.relative(dir, path.resolve(site, match[1]));
        hashes.set(relative.split(path.sep).join('/'), Buffer.from(match[2], 'base64url').toString('hex'));
      }
    }
  }
  return hashes;
}

/** A record line of `lib/<file>` with its sha256 (the layout locate.rs parses). */
function recordLine(dir, name, hash) {
  const stat = fs.lstatSync(path.join(dir, name), { bigint: true });
  const seconds = stat.ctimeNs / 1000000000n;
  return `${hash} ${stat.size} ${stat.ino} ${seconds} ${stat.ctimeNs - seconds * 1000000000n} ${name}\n`;
}

function readRecord(dir) {
  let text;
  try {
    text = fs.readFileSync(path.join(dir, RECORD_FILE), 'utf8');
  } catch {
    return null;
  }
  const lines = text.split('\n');
  if (lines[0] !== RECORD_HEADER) return null;
  const entries = new Map();
  for (const line of lines.slice(1).filter(Boolean)) {
    const fields = line.split(' ');
    if (fields.length < 6) return null;
    entries.set(fields.slice(5).join(' '), { sha256: fields[0], size: fields[1], ino: fields[2], ctime: `${fields[3]} ${fields[4]}` });
  }
  return entries;
}

function writeRecord(dir, hashes) {
  let text = `${RECORD_HEADER}\n`;
  for (const [name, hash] of hashes) text += recordLine(dir, name, hash);
  const tmp = path.join(dir, `${RECORD_FILE}.tmp-${process.pid}`);
  fs.writeFileSync(tmp, text, { mode: 0o644 });
  fs.renameSync(tmp, path.join(dir, RECORD_FILE));
}

/**
 * Records what `dir` holds in `lib/` (`.dpctl-memory-record`), or checks it against the
 * record there: every file must be the recorded one, or have the recorded sha256 (it is
 * then recorded again: a copy or a chmod changes the change time, not the bytes). Without
 * a record (a fresh install, or a cache made before records) each file must have the
 * sha256 pip's RECORD of its wheel gives. Returns the problems (empty: recorded and good).
 */
function ensureRecord(dir) {
  const recorded = readRecord(dir);
  const expected = recorded ? new Map([...recorded].map(([name, entry]) => [name, entry.sha256])) : pipRecords(dir);
  const against = recorded ? 'the sha256 recorded when it was installed' : "the sha256 its wheel's RECORD gives";
  const problems = [];
  const hashes = new Map();
  let changed = !recorded;
  for (const name of libraryNames(dir)) {
    const file = path.join(dir, name);
    const problem = privateProblem(file);
    if (problem) {
      problems.push(problem);
      continue;
    }
    if (!fs.lstatSync(file).isFile()) {
      problems.push(`${file} is not a regular file`);
      continue;
    }
    const want = expected.get(name);
    if (want === undefined) {
      problems.push(`${file} was not installed by the install script (no record of it${recorded ? '' : ' in any wheel'})`);
      continue;
    }
    const entry = recorded?.get(name);
    if (entry) {
      const stat = fs.lstatSync(file, { bigint: true });
      const seconds = stat.ctimeNs / 1000000000n;
      const same = `${stat.size}` === entry.size && `${stat.ino}` === entry.ino && `${seconds} ${stat.ctimeNs - seconds * 1000000000n}` === entry.ctime;
      if (same) {
        hashes.set(name, want);
        continue;
      }
      changed = true;
    }
    const found = sha256(file);
    if (found !== want) problems.push(`${file} does not have ${against}`);
    else hashes.set(name, found);
  }
  if (recorded) {
    for (const name of recorded.keys()) if (!hashes.has(name) && !fs.existsSync(path.join(dir, name))) problems.push(`${path.join(dir, name)} is recorded but missing`);
  }
  if (problems.length === 0 && changed) writeRecord(dir, hashes);
  return problems;
}

/**
 * What pip left in a staging folder, made what the addon accepts: symbolic links removed
 * (never followed), and nothing writable by the group or others.
 */
function makePrivate(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isSymbolicLink()) {
      fs.unlinkSync(full);
      continue;
    }
    const mode = fs.lstatSync(full).mode & 0o7777;
    if ((mode & 0o022) !== 0) fs.chmodSync(full, mode & ~0o022);
    if (entry.isDirectory()) makePrivate(full);
  }
}

/** The error of a cache the addon would refuse, with how to fix it. */
function refusal(dir, problems, fix) {
  const shown = problems.slice(0, 6).join('; ') + (problems.length > 6 ? `; and ${problems.length - 6} more` : '');
  return new Error(`dpctl-memory: the SYCL runtime cache ${dir} is not trusted: ${shown}. To fix it, ${fix}`);
}
const UNTRUSTED_FIX = 'make every folder of the cache yours and writable by you alone (`chmod -R go-w` on it; `chown` what another user owns), or delete the cache folder and run this again';
const RECORD_FIX = 'delete the runtime folder and run this again to reinstall it';

function isComplete(dir, spec = DEFAULT) {
  try {
    return fs.readFileSync(path.join(dir, MARKER), 'utf8') === spec.markerText;
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
function requirementsText(spec = DEFAULT) {
  return spec.wheels.map((wheel) => `${wheel.name}==${wheel.version} --hash=sha256:${wheel.sha256}\n`).join('');
}

/** Runs pip into `staging`; resolves with how it ended, or the signal that interrupted it. */
function runPip(python, staging, spec) {
  const requirements = path.join(staging, 'requirements.txt');
  fs.writeFileSync(requirements, requirementsText(spec));
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

/**
 * Installs the default runtime, or with `sycl: '2026'` the 2026 one (libsycl.so.9), into the
 * cache unless it is there; returns its folder. An installed oneAPI named by a variable wins
 * over the default (not over an explicit `sycl: '2026'`, which the tests name by path).
 */
async function install({ quiet = false, sycl = 'default' } = {}) {
  const spec = Object.hasOwn(RUNTIMES, sycl) ? RUNTIMES[sycl] : undefined;
  if (!spec) throw new Error(`dpctl-memory: no SYCL runtime '${sycl}' (known: ${Object.keys(RUNTIMES).join(', ')})`);
  const oneapi = sycl === 'default' ? installedOneApi() : null;
  if (oneapi) {
    if (!quiet) console.log(`dpctl-memory: using the installed oneAPI at ${oneapi}`);
    return oneapi;
  }
  const { version, requirements } = spec;
  const dir = runtimeDir(spec);
  removeLeftovers(cacheRoot());
  if (isComplete(dir, spec)) {
    // A folder that only holds the marker is not trusted for that: its owner, modes and
    // every library are checked (and recorded, for a cache made before records).
    const untrusted = trustProblems(dir);
    if (untrusted.length > 0) throw refusal(dir, untrusted, UNTRUSTED_FIX);
    const unrecorded = ensureRecord(dir);
    if (unrecorded.length > 0) throw refusal(dir, unrecorded, RECORD_FIX);
    if (!quiet) console.log(`dpctl-memory: SYCL runtime ${version} is cached at ${dir}`);
    return dir;
  }
  const python = findPython();
  if (!python) {
    throw new Error(
      'dpctl-memory: installing the SYCL runtime needs Python 3 with pip (python3 -m pip); ' +
        'install it, or point ONEAPI_ROOT at an installed oneAPI');
  }
  fs.mkdirSync(cacheRoot(), { recursive: true, mode: 0o700 });
  const staging = fs.mkdtempSync(path.join(cacheRoot(), `${STAGING_PREFIX}${version}-`));
  fs.writeFileSync(path.join(staging, OWNER_FILE), JSON.stringify({ pid: process.pid, host: os.hostname() }));
  console.log(`dpctl-memory: installing SYCL runtime ${version} from PyPI into ${dir} (about 1.3 GB, once)`);
  const outcome = await runPip(python, staging, spec);
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
      `dpctl-memory: pip failed (${outcome.signal || `exit ${outcome.status}`}) installing ${requirements.join(', ')}. ` +
        'If pip says the hashes do not match, the download was corrupted or substituted and was refused: ' +
        'run the install again, and report it if it persists.');
  }
  fs.rmSync(path.join(staging, OWNER_FILE), { force: true });
  makePrivate(staging);
  // Every library checked against its wheel's RECORD, and recorded, before the marker.
  const unrecorded = ensureRecord(staging);
  if (unrecorded.length > 0) {
    fs.rmSync(staging, { recursive: true, force: true });
    throw refusal(dir, unrecorded, 'run this again; report it if it persists');
  }
  fs.writeFileSync(path.join(staging, MARKER), spec.markerText, { mode: 0o644 });
  if (fs.existsSync(dir) && !isComplete(dir, spec)) {
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
    if (!isComplete(dir, spec)) throw err;
  }
  return dir;
}

module.exports = {
  install,
  cacheRoot,
  sha256,
  privateProblem,
  makePrivate,
  removeLeftovers,
  requirementsText,
  runtimeDir,
  installedOneApi,
  ensureRecord,
  trustProblems,
  RUNTIME_VERSION,
  RUNTIMES,
  isComplete,
  RECORD_FILE,
  MARKER,
  MARKER_TEXT,
};

const HELP = `Usage: npx dpctl-memory-install-runtime [--sycl 2026] [--with ucx] [--with nvrtc] [--help]

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

  --sycl 2026 the SYCL 2026 runtime (DPC++ ${RUNTIMES[2026].version}, libsycl.so.9) instead, into
              sycl-runtime-${RUNTIMES[2026].version}: used where DPCTL_MEMORY_SYCL_ROOT (or
              ONEAPI_ROOT...) names that folder. About 1.3 GB.
  --with ucx  also UCX for the transport (the libucx-cu12 wheel, about 45 MB, into the
              same cache as ucx-<version>; skipped when a system UCX or
              DPCTL_MEMORY_UCX_ROOT is there)
  --with nvrtc
              also NVRTC for CUDA C kernels (the nvidia-cuda-nvrtc-cu12 wheel,
              about 25 MB, into the same cache as nvrtc-<version>; skipped when a
              CUDA toolkit is there: DPCTL_MEMORY_NVRTC_ROOT, CUDA_HOME, CUDA_PATH,
              /usr/local/cuda)
`;

if (require.main === module) {
  // `--with ucx`: UCX for the transport too (scripts/install-ucx.js); `--with nvrtc`:
  // NVRTC for CUDA C kernels (scripts/install-nvrtc.js). Both may be given.
  const EXTRAS = { ucx: () => require('./install-ucx.js').installUcx(), nvrtc: () => require('./install-nvrtc.js').installNvrtc() };
  const given = process.argv.slice(2);
  const extras = [];
  const args = [];
  let sycl = 'default';
  for (let i = 0; i < given.length; i++) {
    const syclArg = /^--sycl=(.*)$/.exec(given[i]);
    if (syclArg || given[i] === '--sycl') {
      sycl = syclArg ? syclArg[1] : String(given[++i] ?? '');
      if (!Object.hasOwn(RUNTIMES, sycl) || sycl === 'default') {
        process.stderr.write(`dpctl-memory-install-runtime: unknown SYCL runtime '${sycl}' (known: 2026)\n\n${HELP}`);
        process.exit(2);
      }
      continue;
    }
    const inline = /^--with=(.*)$/.exec(given[i]);
    const name = inline ? inline[1] : given[i] === '--with' && given[i + 1] in EXTRAS ? given[++i] : undefined;
    if (name !== undefined && name in EXTRAS) extras.push(name);
    else args.push(given[i]);
  }
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  if (args.length > 0) {
    process.stderr.write(`dpctl-memory-install-runtime: unknown argument '${args[0]}'\n\n${HELP}`);
    process.exit(2);
  }
  install({ sycl }).then(
    (dir) => {
      console.log(dir);
      for (const name of extras) console.log(EXTRAS[name]());
    },
    (err) => {
      console.error(err.message);
      process.exit(1);
    },
  );
}
