#!/usr/bin/env node
// Packs the two npm packages as they are published, into a folder (default `target/npm`):
//
// - `dpctl-memory-linux-x64-gnu` (`npm/linux-x64-gnu/`, the layout of `napi create-npm-dirs`):
//   the built `.node` and the SYCL shim are copied in first, as `napi artifacts` copies the
//   `.node` alone;
// - `dpctl-memory`: the repository's files (its `files` list), with a publish-time
//   `package.json` that, as `napi pre-publish` does, lists every platform package in
//   `optionalDependencies` (npm installs the one whose os/cpu/libc match), and that drops
//   `scripts` (they run the clone's setup, tests and benches, none of which ship) and
//   `overrides` (they pin the clone's dev tools).
//
// `scripts/publish.js` publishes them (platform packages first, then dpctl-memory) after
// setting the version of both. Prints the tarballs' paths. `packAll(dest, { version })`
// packs both at another version without touching the repository's files (the publish
// script's dry run).
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.resolve(__dirname, '..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
// The platform packages: one folder per `napi.targets` entry, named by its npm triple.
const PLATFORMS = fs.readdirSync(path.join(root, 'npm')).sort();
// What each platform package holds besides its package.json, README and LICENSE (the
// repository's, copied in at pack time).
// Both SYCL shims: DPC++ 2025's (libsycl.so.8) and 2026's (.so.9); users have no compiler.
const artifacts = (triple) => [`${manifest.napi.binaryName}.${triple}.node`, 'dpctl_memory_shim.so', 'dpctl_memory_shim_sycl9.so'];

function npm(args, cwd) {
  const env = { ...process.env, npm_config_update_notifier: 'false', npm_config_loglevel: 'warn' };
  return execFileSync('npm', args, { cwd, encoding: 'utf8', env });
}

/** Copies through a temporary name and a rename: a concurrent pack never sees half a file. */
function copyAtomically(from, to) {
  const tmp = `${to}.tmp${process.pid}`;
  fs.copyFileSync(from, tmp);
  fs.renameSync(tmp, to);
}

function packPlatform(triple, dest, version) {
  const dir = path.join(root, 'npm', triple);
  const platform = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  if (version) return packPlatformAt(triple, dest, dir, { ...platform, version });
  if (platform.version !== manifest.version) {
    throw new Error(`${platform.name} is at ${platform.version}, dpctl-memory at ${manifest.version}: ` +
      'run `napi version` to put them in step');
  }
  for (const file of artifacts(triple)) {
    const built = path.join(root, file);
    if (!fs.existsSync(built)) throw new Error(`${file} is not built: run \`npm run build\` first`);
    copyAtomically(built, path.join(dir, file));
  }
  copyAtomically(path.join(root, 'LICENSE'), path.join(dir, 'LICENSE'));
  const tarball = npm(['pack', '--ignore-scripts', '--pack-destination', dest, dir], root).trim().split('\n').pop();
  return { name: platform.name, tarball };
}

/** The platform package with the manifest `platform`, staged outside the repository. */
function packPlatformAt(triple, dest, dir, platform) {
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'dpctl-memory-stage-'));
  try {
    for (const file of artifacts(triple)) {
      const built = path.join(root, file);
      if (!fs.existsSync(built)) throw new Error(`${file} is not built: run \`npm run build\` first`);
      fs.copyFileSync(built, path.join(stage, file));
    }
    fs.copyFileSync(path.join(dir, 'README.md'), path.join(stage, 'README.md'));
    fs.copyFileSync(path.join(root, 'LICENSE'), path.join(stage, 'LICENSE'));
    fs.writeFileSync(path.join(stage, 'package.json'), `${JSON.stringify(platform, null, 2)}\n`);
    const tarball = npm(['pack', '--ignore-scripts', '--pack-destination', dest, stage], root).trim().split('\n').pop();
    return { name: platform.name, tarball };
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

function packMain(dest, platforms, version = manifest.version) {
  const [{ files }] = JSON.parse(npm(['pack', '--dry-run', '--json', '--ignore-scripts'], root));
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'dpctl-memory-stage-'));
  try {
    for (const { path: file } of files) {
      if (file === 'package.json') continue;
      fs.mkdirSync(path.dirname(path.join(stage, file)), { recursive: true });
      fs.copyFileSync(path.join(root, file), path.join(stage, file));
    }
    const published = { ...manifest, version };
    published.optionalDependencies = Object.fromEntries(platforms.map(({ name }) => [name, version]));
    delete published.scripts;
    delete published.overrides;
    fs.writeFileSync(path.join(stage, 'package.json'), `${JSON.stringify(published, null, 2)}\n`);
    return npm(['pack', '--ignore-scripts', '--pack-destination', dest, stage], root).trim().split('\n').pop();
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

/**
 * Packs every package into `dest`; returns the tarballs' paths, platform packages first.
 * `version`: pack at that version instead of the repository's (its files are unchanged).
 */
function packAll(dest = path.join(root, 'target', 'npm'), { version } = {}) {
  fs.mkdirSync(dest, { recursive: true });
  const platforms = PLATFORMS.map((triple) => packPlatform(triple, dest, version));
  return [...platforms.map(({ tarball }) => tarball), packMain(dest, platforms, version)].map((name) => path.join(dest, name));
}

module.exports = { packAll, PLATFORMS };

if (require.main === module) {
  try {
    for (const tarball of packAll(process.argv[2] ? path.resolve(process.argv[2]) : undefined)) console.log(tarball);
  } catch (err) {
    console.error(`dpctl-memory pack: ${err.message}`);
    process.exit(1);
  }
}
