'use strict';
// Installs pinned extra wheels (runtime.json's `ucx`, `nvrtc`) into a folder of the
// per-user cache with pip, as the SYCL runtime's installer does: --require-hashes, no
// dependencies, staged beside the target and renamed into place, with a marker that
// records exactly what was installed (a cache of other wheels is redone).
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const MARKER = '.dpctl-memory-complete';

// Where the cache is (relative variables ignored, as the addon ignores them) and what makes
// pip's output pass the addon's trust rules (src/provider/cache_trust.rs): the runtime
// installer's, so the three installs leave the same modes.
const { cacheRoot, makePrivate } = require('../install-runtime.js');

/** The marker's text for `wheels` ({ name, version, sha256 }). */
function markerText(wheels) {
  return `${wheels.map((w) => `${w.name}==${w.version} ${w.sha256}`).join('\n')}\n`;
}

function isComplete(dir, wheels) {
  try {
    return fs.readFileSync(path.join(dir, MARKER), 'utf8') === markerText(wheels);
  } catch {
    return false;
  }
}

function findPython() {
  for (const exe of [process.env.PYTHON, 'python3', 'python'].filter(Boolean)) {
    if (spawnSync(exe, ['-m', 'pip', '--version'], { stdio: 'ignore' }).status === 0) return exe;
  }
  return null;
}

/**
 * Installs `wheels` into `dir` (a folder of the cache) unless it already holds them;
 * returns `dir`. `what` names them in messages ("UCX 1.22.0 (the libucx-cu12 wheel, about
 * 45 MB)"), `otherwise` what else would do ("a system UCX"). Throws with what to do when
 * pip is missing or fails.
 */
function installWheels(dir, wheels, what, otherwise) {
  if (isComplete(dir, wheels)) return dir;
  const python = findPython();
  if (!python) throw new Error(`dpctl-memory: installing ${what} needs Python 3 with pip (python3 -m pip), or use ${otherwise}`);
  fs.mkdirSync(path.dirname(dir), { recursive: true, mode: 0o700 });
  const staging = fs.mkdtempSync(path.join(path.dirname(dir), `.staging-${path.basename(dir)}-`));
  try {
    const requirements = path.join(staging, 'requirements.txt');
    fs.writeFileSync(requirements, wheels.map((w) => `${w.name}==${w.version} --hash=sha256:${w.sha256}\n`).join(''));
    console.log(`dpctl-memory: installing ${what} into ${dir}`);
    const tmp = path.join(staging, '.tmp');
    fs.mkdirSync(tmp);
    const pip = spawnSync(python, ['-m', 'pip', 'install', '--require-hashes', '--no-deps', '--no-compile',
      '--disable-pip-version-check', '--no-warn-script-location', '--target', staging, '-r', requirements], {
      stdio: 'inherit', env: { PIP_ROOT_USER_ACTION: 'ignore', ...process.env, TMPDIR: tmp },
    });
    if (pip.status !== 0) {
      throw new Error(`dpctl-memory: pip failed (${pip.signal || `exit ${pip.status}`}) installing ${wheels.map((w) => `${w.name}==${w.version}`).join(' ')}`);
    }
    fs.rmSync(tmp, { recursive: true, force: true });
    // Whatever the umask made of pip's folders: nothing writable by the group or others,
    // no symbolic link (the addon loads nothing from a folder that is).
    makePrivate(staging);
    fs.chmodSync(staging, 0o700);
    fs.writeFileSync(path.join(staging, MARKER), markerText(wheels), { mode: 0o644 });
    fs.rmSync(dir, { recursive: true, force: true });
    try {
      fs.renameSync(staging, dir);
    } catch (err) {
      if (!isComplete(dir, wheels)) throw err;
    }
    return dir;
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * An extra library's install: what is already there (`found()`: a path or description, or
 * null) wins; else the cached wheels in `dir`; else `installWheels`. Returns where it is.
 * `name` ("UCX 1.22.0") is for the messages; `quiet` keeps the first two silent.
 */
function installExtra({ found, dir, wheels, name, what, otherwise, quiet }) {
  const installed = found();
  if (installed) {
    if (!quiet) console.log(`dpctl-memory: using the ${name.split(' ')[0]} of ${installed}`);
    return installed;
  }
  if (isComplete(dir, wheels)) {
    if (!quiet) console.log(`dpctl-memory: ${name} is cached at ${dir}`);
    return dir;
  }
  return installWheels(dir, wheels, what, otherwise);
}

module.exports = { cacheRoot, isComplete, installWheels, installExtra, MARKER };
