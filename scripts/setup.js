#!/usr/bin/env node
// Sets up whatever is missing on a fresh clone, and nothing that is already there:
// npm dependencies, the SYCL runtime (per-user cache), and the release build of the addon.
// Each step shows its tool's own progress; where stdout is not a terminal (CI, a pipe),
// a line every few seconds also says the step is still running.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { install } = require('./install-runtime');

const root = path.resolve(__dirname, '..');
const addon = path.join(root, 'dpctl-memory.linux-x64-gnu.node');
const HEARTBEAT_MS = 15000;

function run(label, command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit' });
    const started = Date.now();
    const heartbeat = process.stdout.isTTY ? null : setInterval(() => {
      console.log(`dpctl-memory setup: still ${label} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    }, HEARTBEAT_MS);
    const done = (error) => {
      if (heartbeat) clearInterval(heartbeat);
      if (error) reject(error);
      else resolve();
    };
    child.on('error', (error) => done(new Error(`could not run ${command}: ${error.message}`)));
    child.on('close', (status, signal) => done(status === 0 ? null : new Error(
      `${command} ${args.join(' ')} failed (${signal || `exit ${status}`})`)));
  });
}

/** Newest modification time under the given paths (files or folders). */
function newest(paths) {
  let latest = 0;
  const visit = (p) => {
    if (!fs.existsSync(p)) return;
    const stat = fs.statSync(p);
    if (stat.isDirectory()) {
      for (const entry of fs.readdirSync(p)) visit(path.join(p, entry));
    } else {
      latest = Math.max(latest, stat.mtimeMs);
    }
  };
  paths.forEach((p) => visit(path.join(root, p)));
  return latest;
}

async function main() {
  const devDependencies = Object.keys(require(path.join(root, 'package.json')).devDependencies);
  const missing = devDependencies.some((name) => !fs.existsSync(path.join(root, 'node_modules', name, 'package.json')));
  // npm records what it installed in node_modules/.package-lock.json: a lock file newer
  // than that (a pull that changed the dependencies) means node_modules is stale.
  const installed = path.join(root, 'node_modules', '.package-lock.json');
  const stale = !missing && (!fs.existsSync(installed) || newest(['package-lock.json']) > fs.statSync(installed).mtimeMs);
  if (missing || stale) {
    console.log('dpctl-memory setup: installing npm dependencies');
    await run('installing npm dependencies', 'npm', ['ci', '--no-audit', '--no-fund']);
  }
  await install({ quiet: true });
  // The shims the build must leave (build.rs builds one per SYCL runtime it finds).
  const shims = ['dpctl_memory_shim.so'];
  // UCX for the transport's tests and benchmarks (the library itself installs it only on
  // request: install-runtime --with ucx). A failed install leaves those tests to skip.
  if (['test', 'bench', 'test:gpu'].includes(process.env.npm_lifecycle_event) || process.argv.includes('--with-ucx')) {
    try {
      require('./install-ucx.js').installUcx({ quiet: true });
    } catch (err) {
      console.log(`dpctl-memory setup: UCX not installed (${err.message}); the transport's tests will skip`);
    }
    if (process.env.npm_lifecycle_event === 'test') {
      // The SYCL 2026 runtime: the suite's second SYCL pass (scripts/test.js), and the
      // build of its shim below. Not when the pass is turned off.
      if (process.env.DPCTL_MEMORY_SYCL_2026 !== '0') {
        await install({ quiet: true, sycl: '2026' });
        shims.push('dpctl_memory_shim_sycl9.so');
      }
      try {
        require('./install-ucx.js').installOlderUcx({ quiet: true });
      } catch (err) {
        console.log(`dpctl-memory setup: the older UCX not installed (${err.message}); the transport's trust tests run on one UCX`);
      }
    }
    // NVRTC for the CUDA C tests (createProgramFromCuda; compiling needs no GPU).
    try {
      require('./install-nvrtc.js').installNvrtc({ quiet: true });
    } catch (err) {
      console.log(`dpctl-memory setup: NVRTC not installed (${err.message}); the CUDA C tests will fail: set DPCTL_MEMORY_NO_NVRTC=1 to skip them`);
    }
  }
  const sources = newest(['src', 'shim', 'build.rs', 'Cargo.toml', 'Cargo.lock', 'runtime.json']);
  const built = fs.existsSync(addon) ? fs.statSync(addon).mtimeMs : 0;
  if (built < sources || shims.some((shim) => !fs.existsSync(path.join(root, shim)))) {
    console.log('dpctl-memory setup: building the addon (release)');
    await run('building the addon', 'npm', ['run', '--silent', 'build']);
  }
}

main().catch((err) => {
  console.error(`dpctl-memory setup failed: ${err.message}`);
  process.exit(1);
});
