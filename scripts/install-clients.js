#!/usr/bin/env node
// Installs the Node libraries that examples/arrow.mjs and examples/onnx.mjs use, for their
// tests (__test__/clients.spec.mjs): apache-arrow and onnxruntime-node, pinned with every
// dependency by version and integrity in scripts/clients/package-lock.json. Test-only: they
// are no dependency of the package, and the repository's node_modules is never touched.
// `npm ci --ignore-scripts` installs them into the per-user cache as
// node-clients-<the lock's sha256>/ (npm checks each tarball against the lock's integrity; no
// install script runs: onnxruntime-node's would fetch CUDA binaries from NuGet, and its CPU
// binaries are in its tarball), staged beside it with npm's cache of its own, then renamed
// into place; the other platforms' onnxruntime binaries are removed. Announced with its size,
// with a line of progress every few seconds.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { cacheRoot, sha256 } = require('./install-runtime.js');

const PINS = path.join(__dirname, 'clients');
const LOCK = path.join(PINS, 'package-lock.json');
const MARKER = '.dpctl-memory-complete';
// What the download and the install take (onnxruntime-node's tarball holds every platform's
// binaries; those of other platforms are removed once it is unpacked).
const SIZE = 'about 117 MB to download, 440 MB while it unpacks, 55 MB on disk once the other platforms\' binaries are removed';
const HEARTBEAT_MS = 5000;

/** `{ name: version }` of the libraries the lock pins at its top level. */
function pinned() {
  return JSON.parse(fs.readFileSync(path.join(PINS, 'package.json'), 'utf8')).dependencies;
}

/** The folder the libraries go to (its name carries the lock's hash: a new lock, a new folder). */
function clientsDir() {
  return path.join(cacheRoot(), `node-clients-${sha256(LOCK).slice(0, 16)}`);
}

/** The folder's node_modules when installed from this lock; else null. */
function installedClients() {
  const dir = clientsDir();
  try {
    if (fs.readFileSync(path.join(dir, MARKER), 'utf8') !== sha256(LOCK)) return null;
  } catch {
    return null;
  }
  return path.join(dir, 'node_modules');
}

function sizeOf(p) {
  const stat = fs.lstatSync(p, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.size;
  let total = 0;
  for (const entry of fs.readdirSync(p)) total += sizeOf(path.join(p, entry));
  return total;
}

/** Runs npm ci in `dir`, printing its fetches and, every few seconds, what has arrived. */
function npmCi(dir, log) {
  return new Promise((resolve) => {
    const args = ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=http', '--cache', path.join(dir, '.npm-cache')];
    const child = spawn('npm', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_update_notifier: 'false' } });
    let output = '';
    const collect = (chunk) => {
      output += chunk;
      for (const line of String(chunk).split('\n')) if (/^npm http fetch/.test(line)) log(`dpctl-memory: ${line.trim()}`);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const started = Date.now();
    const beat = setInterval(() => log(`dpctl-memory: installing the client libraries: ${(sizeOf(dir) / 2 ** 20).toFixed(0)} MB so far (${((Date.now() - started) / 1000).toFixed(0)} s)`), HEARTBEAT_MS);
    child.on('error', (error) => {
      clearInterval(beat);
      resolve({ ok: false, why: `npm could not be run: ${error.message}` });
    });
    child.on('close', (code, signal) => {
      clearInterval(beat);
      if (code === 0) return resolve({ ok: true });
      // npm's own summary (code, errno, the error), else its last lines.
      const lines = output.trim().split('\n').filter((line) => /^npm error \S/.test(line) && !/complete log/.test(line));
      const summary = lines.filter((line) => /^npm error (code|errno|[A-Za-z]*Error)\b/.test(line));
      resolve({ ok: false, why: `npm ci failed (${signal || `exit ${code}`}): ${(summary.length ? summary : lines.slice(-4)).slice(0, 4).join(' | ')}` });
    });
  });
}

/**
 * Installs the libraries unless they are there; resolves to their node_modules folder.
 * Rejects with what went wrong (no npm, no registry, a tarball whose integrity differs).
 */
async function installClients({ log = console.log } = {}) {
  const done = installedClients();
  if (done) return done;
  const dir = clientsDir();
  const names = Object.entries(pinned()).map(([name, version]) => `${name} ${version}`).join(' and ');
  fs.mkdirSync(path.dirname(dir), { recursive: true, mode: 0o700 });
  // `.staging-` with an owner file: the runtime installer's sweep of what dead installs
  // left knows it (scripts/install-runtime.js removeLeftovers).
  const staging = fs.mkdtempSync(path.join(path.dirname(dir), `.staging-${path.basename(dir)}-`));
  try {
    fs.writeFileSync(path.join(staging, '.dpctl-memory-owner.json'), JSON.stringify({ pid: process.pid, host: os.hostname() }));
    fs.copyFileSync(path.join(PINS, 'package.json'), path.join(staging, 'package.json'));
    fs.copyFileSync(LOCK, path.join(staging, 'package-lock.json'));
    log(`dpctl-memory: installing ${names} for the client examples' tests into ${dir} (${SIZE}), once`);
    const result = await npmCi(staging, log);
    if (!result.ok) throw new Error(`dpctl-memory: could not install ${names}: ${result.why}`);
    fs.rmSync(path.join(staging, '.npm-cache'), { recursive: true, force: true });
    const platforms = path.join(staging, 'node_modules', 'onnxruntime-node', 'bin', 'napi-v6');
    for (const platform of fs.readdirSync(platforms)) {
      for (const arch of fs.readdirSync(path.join(platforms, platform))) {
        if (platform !== process.platform || arch !== process.arch) fs.rmSync(path.join(platforms, platform, arch), { recursive: true, force: true });
      }
    }
    fs.rmSync(path.join(staging, '.dpctl-memory-owner.json'), { force: true });
    fs.writeFileSync(path.join(staging, MARKER), sha256(LOCK));
    fs.rmSync(dir, { recursive: true, force: true });
    try {
      fs.renameSync(staging, dir);
    } catch (err) {
      if (!installedClients()) throw err;
    }
    log(`dpctl-memory: installed ${names} (${(sizeOf(dir) / 2 ** 20).toFixed(0)} MB) into ${dir}`);
    return path.join(dir, 'node_modules');
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

module.exports = { installClients, installedClients, clientsDir, pinned };

if (require.main === module) {
  installClients().then(
    (where) => console.log(where),
    (err) => {
      console.error(err.message);
      process.exit(1);
    },
  );
}
