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
const { spawnSync } = require('node:child_process');
const { cacheRoot, isComplete, installExtra } = require('./lib/wheels.js');

const MANIFEST = require('../runtime.json').ucx;
const VERSION = MANIFEST.version;
// The oldest UCX the test suite checks the trust settings on (runtime.json `ucx.older`).
const OLDER = MANIFEST.older;

/** Where the wheel is unpacked (what locate.rs looks for). */
function ucxDir() {
  return path.join(cacheRoot(), `ucx-${VERSION}`);
}

/** The UCX prefix of the cache (lib/, bin/), when installed. */
function cachedPrefix() {
  const prefix = path.join(ucxDir(), 'libucx');
  return isComplete(ucxDir(), MANIFEST.wheels) ? prefix : null;
}

/** A UCX that wins over the download, or null: DPCTL_MEMORY_UCX_ROOT, then ldconfig's libucp.so.0. */
function installedUcx() {
  const root = process.env.DPCTL_MEMORY_UCX_ROOT;
  // A relative root is ignored, as the addon ignores it (it names the working directory's folder).
  if (root && path.isAbsolute(root) && ['lib/libucp.so.0', 'libucp.so.0'].some((f) => fs.existsSync(path.join(root, f)))) return root;
  const ldconfig = spawnSync('ldconfig', ['-p'], { encoding: 'utf8' });
  if (ldconfig.status === 0 && /\slibucp\.so\.0\s/.test(ldconfig.stdout)) return 'the system (ldconfig: libucp.so.0)';
  return null;
}

/**
 * Installs the wheel unless a UCX is there; returns where UCX is. Throws with what to do
 * when pip is missing or fails (the transport then reports ERR_UCX_UNAVAILABLE).
 */
function installUcx({ quiet = false } = {}) {
  return installExtra({
    found: installedUcx, dir: ucxDir(), wheels: MANIFEST.wheels, name: `UCX ${VERSION}`, quiet,
    what: `UCX ${VERSION} (the libucx-cu12 wheel, about 45 MB)`, otherwise: 'a system UCX',
  });
}

/** Where the older UCX is unpacked. */
function olderDir() {
  return path.join(cacheRoot(), `ucx-${OLDER.version}`);
}

/** The older UCX's prefix (for DPCTL_MEMORY_UCX_ROOT), when installed; else null. */
function olderPrefix() {
  return isComplete(olderDir(), OLDER.wheels) ? path.join(olderDir(), 'libucx') : null;
}

/** Installs the older UCX for the test suite (whatever else is there); returns its folder. */
function installOlderUcx({ quiet = false } = {}) {
  return installExtra({
    found: () => null, dir: olderDir(), wheels: OLDER.wheels, name: `UCX ${OLDER.version}`, quiet,
    what: `UCX ${OLDER.version} for the transport's tests (the libucx-cu12 wheel, about 26 MB)`, otherwise: 'no test of it',
  });
}

module.exports = { installUcx, installedUcx, installOlderUcx, olderPrefix, cachedPrefix, ucxDir, UCX_VERSION: VERSION, OLDER_UCX_VERSION: OLDER.version };

if (require.main === module) {
  try {
    console.log(installUcx());
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
