#!/usr/bin/env node
// Installs NVRTC for CUDA C kernels (createProgramFromCuda) from PyPI's
// nvidia-cuda-nvrtc-cu12 wheel, pinned by sha256 in runtime.json (`nvrtc`), into the
// per-user cache as nvrtc-<version>/ (the wheel unpacked:
// nvidia/cuda_nvrtc/lib/libnvrtc.so.12 and its builtins). Nothing is installed when a
// CUDA toolkit's NVRTC is there (DPCTL_MEMORY_NVRTC_ROOT, CUDA_HOME, CUDA_PATH,
// /usr/local/cuda), which the addon prefers when the driver can load its PTX
// (src/provider/cuda/nvrtc.rs). `install-runtime.js --with nvrtc` and setup.js (for the
// test and bench runs) call it.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { cacheRoot, isComplete, installExtra } = require('./lib/wheels.js');

const MANIFEST = require('../runtime.json').nvrtc;
const VERSION = MANIFEST.version;
const SONAMES = ['libnvrtc.so.13', 'libnvrtc.so.12'];

/** Where the wheel is unpacked (what nvrtc.rs looks for). */
function nvrtcDir() {
  return path.join(cacheRoot(), `nvrtc-${VERSION}`);
}

/** The cached libnvrtc.so.12, when installed. */
function cachedLibrary() {
  return isComplete(nvrtcDir(), MANIFEST.wheels) ? path.join(nvrtcDir(), 'nvidia', 'cuda_nvrtc', 'lib', 'libnvrtc.so.12') : null;
}

/** A toolkit's NVRTC that wins over the download, or null. */
function installedNvrtc() {
  // Relative roots are ignored, as the addon ignores them (they name the working directory's folders).
  const roots = [process.env.DPCTL_MEMORY_NVRTC_ROOT, process.env.CUDA_HOME, process.env.CUDA_PATH, '/usr/local/cuda'].filter((root) => root && path.isAbsolute(root));
  for (const root of roots) {
    for (const folder of ['lib64', 'lib', '.', 'targets/x86_64-linux/lib']) {
      for (const soname of SONAMES) {
        const file = path.join(root, folder, soname);
        if (fs.existsSync(file)) return file;
      }
    }
  }
  return null;
}

/**
 * Installs the wheel unless a toolkit's NVRTC is there; returns where NVRTC is. Throws
 * with what to do when pip is missing or fails (CUDA C then reports ERR_NVRTC_UNAVAILABLE).
 */
function installNvrtc({ quiet = false } = {}) {
  return installExtra({
    found: installedNvrtc, dir: nvrtcDir(), wheels: MANIFEST.wheels, name: `NVRTC ${VERSION}`, quiet,
    what: `NVRTC ${VERSION} (the nvidia-cuda-nvrtc-cu12 wheel, about 25 MB)`, otherwise: 'a CUDA toolkit',
  });
}

module.exports = { installNvrtc, installedNvrtc, cachedLibrary, nvrtcDir, NVRTC_VERSION: VERSION };

if (require.main === module) {
  try {
    console.log(installNvrtc());
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
