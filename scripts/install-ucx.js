#!/usr/bin/env node
// Installs UCX for the transport (lib/transport.js) from PyPI's libucx-cu12 wheel, pinned
// by sha256 in runtime.json (`ucx`), into the per-user cache as ucx-<version>/ (the wheel
// unpacked: libucx/lib/libucp.so.0 and its transports, libucx/bin/ucx_info and
// ucx_perftest). Nothing is installed when a UCX is already there: DPCTL_MEMORY_UCX_ROOT,
// or a system libucp.so.0 (ldconfig), which the addon prefers (src/provider/ucx/locate.rs).
// `install-runtime.js --with ucx` and setup.js (for the test and bench runs) call it.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const os = require('node:os');
const { spawnSync } = require('node:child_process');

const MANIFEST = require('../runtime.json').ucx;
const VERSION = MANIFEST.version;
const MARKER = '.dpctl-memory-complete';
const MARKER_TEXT = `${MANIFEST.wheels.map((w) => `${w.name}==${w.version} ${w.sha256}`).join('\n')}\n`;

function cacheRoot() {
  if (process.env.DPCTL_MEMORY_CACHE) return process.env.DPCTL_MEMORY_CACHE;
  const xdg = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(xdg, 'dpctl-memory');
}

/** Where the wheel is unpacked (what locate.rs looks for). */
function ucxDir() {
  return path.join(cacheRoot(), `ucx-${VERSION}`);
}

/** The UCX prefix of the cache (lib/, bin/), when installed. */
function cachedPrefix() {
  const prefix = path.join(ucxDir(), 'libucx');
  return isComplete(ucxDir()) ? prefix : null;
}

function isComplete(dir) {
  try {
    return fs.readFileSync(path.join(dir, MARKER), 'utf8') === MARKER_TEXT;
  } catch {
    return false;
  }
}

/** A UCX that wins over the download, or null: DPCTL_MEMORY_UCX_ROOT, then ldconfig's libucp.so.0. */
function installedUcx() {
  const root = process.env.DPCTL_MEMORY_UCX_ROOT;
  if (root && ['lib/libucp.so.0', 'libucp.so.0'].some((f) => fs.existsSync(path.join(root, f)))) return root;
  const ldconfig = spawnSync('ldconfig', ['-p'], { encoding: 'utf8' });
  if (ldconfig.status === 0 && /\slibucp\.so\.0\s/.test(ldconfig.stdout)) return 'the system (ldconfig: libucp.so.0)';
  return null;
}

function findPython() {
  for (const exe of [process.env.PYTHON, 'python3', 'python'].filter(Boolean)) {
    if (spawnSync(exe, ['-m', 'pip', '--version'], { stdio: 'ignore' }).status === 0) return exe;
  }
  return null;
}

/**
 * Installs the wheel unless a UCX is there; returns where UCX is. Throws with what to do
 * when pip is missing or fails (the transport then reports ERR_UCX_UNAVAILABLE).
 */
function installUcx({ quiet = false } = {}) {
  const installed = installedUcx();
  if (installed) {
    if (!quiet) console.log(`dpctl-memory: using the UCX of ${installed}`);
    return installed;
  }
  const dir = ucxDir();
  if (isComplete(dir)) {
    if (!quiet) console.log(`dpctl-memory: UCX ${VERSION} is cached at ${dir}`);
    return dir;
  }
  const python = findPython();
  if (!python) throw new Error('dpctl-memory: installing UCX needs Python 3 with pip (python3 -m pip), or a system UCX');
  fs.mkdirSync(cacheRoot(), { recursive: true });
  const staging = fs.mkdtempSync(path.join(cacheRoot(), `.staging-ucx-${VERSION}-`));
  try {
    const requirements = path.join(staging, 'requirements.txt');
    fs.writeFileSync(requirements, MANIFEST.wheels.map((w) => `${w.name}==${w.version} --hash=sha256:${w.sha256}\n`).join(''));
    console.log(`dpctl-memory: installing UCX ${VERSION} (the libucx-cu12 wheel, about 45 MB) into ${dir}`);
    const tmp = path.join(staging, '.tmp');
    fs.mkdirSync(tmp);
    const pip = spawnSync(python, ['-m', 'pip', 'install', '--require-hashes', '--no-deps', '--no-compile',
      '--disable-pip-version-check', '--no-warn-script-location', '--target', staging, '-r', requirements], {
      stdio: 'inherit', env: { PIP_ROOT_USER_ACTION: 'ignore', ...process.env, TMPDIR: tmp },
    });
    if (pip.status !== 0) {
      throw new Error(`dpctl-memory: pip failed (${pip.signal || `exit ${pip.status}`}) installing libucx-cu12==${VERSION}`);
    }
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.writeFileSync(path.join(staging, MARKER), MARKER_TEXT);
    fs.rmSync(dir, { recursive: true, force: true });
    try {
      fs.renameSync(staging, dir);
    } catch (err) {
      if (!isComplete(dir)) throw err;
    }
    return dir;
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

module.exports = { installUcx, installedUcx, cachedPrefix, ucxDir, UCX_VERSION: VERSION };

if (require.main === module) {
  try {
    console.log(installUcx());
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
