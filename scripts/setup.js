#!/usr/bin/env node
// Sets up whatever is missing on a fresh clone, and nothing that is already there:
// npm dependencies, the SYCL runtime (per-user cache), and the release build of the addon.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { install } = require('./install-runtime');

const root = path.resolve(__dirname, '..');
const addon = path.join(root, 'dpctl-memory.linux-x64-gnu.node');

function run(command, args) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status})`);
  }
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

function main() {
  const devDependencies = Object.keys(require(path.join(root, 'package.json')).devDependencies);
  if (devDependencies.some((name) => !fs.existsSync(path.join(root, 'node_modules', name, 'package.json')))) {
    console.log('dpctl-memory setup: installing npm dependencies');
    run('npm', ['ci', '--no-audit', '--no-fund']);
  }
  install({ quiet: true });
  const sources = newest(['src', 'shim', 'build.rs', 'Cargo.toml', 'Cargo.lock']);
  const built = fs.existsSync(addon) ? fs.statSync(addon).mtimeMs : 0;
  if (built < sources || !fs.existsSync(path.join(root, 'dpctl_memory_shim.so'))) {
    console.log('dpctl-memory setup: building the addon (release)');
    run('npx', ['napi', 'build', '--platform', '--release', '--no-js', '--dts', 'target/binding.d.ts']);
  }
}

try {
  main();
} catch (err) {
  console.error(`dpctl-memory setup failed: ${err.message}`);
  process.exit(1);
}
