// @ts-check
'use strict';
// Loads the native binding: the `.node` built in a clone (`npm run build`, next to
// index.js), else the per-platform package npm installed beside this one
// (`dpctl-memory-<platform>`, listed in the published package's optionalDependencies).
const fs = require('node:fs');
const path = require('node:path');

/** @type {{ name: string, version: string, napi: { binaryName: string }, optionalDependencies?: Record<string, string> }} */
const manifest = require('../package.json');

/** This process's platform as the packages name it: `linux-x64-gnu`, `darwin-arm64`. */
function currentPlatform() {
  if (process.platform !== 'linux') return `${process.platform}-${process.arch}`;
  let musl = false;
  try {
    musl = fs.readFileSync('/usr/bin/ldd', 'utf8').includes('musl');
  } catch {
    const report = /** @type {{ header?: { glibcVersionRuntime?: string } } | undefined} */ (process.report?.getReport?.());
    musl = !report?.header?.glibcVersionRuntime;
  }
  return `${process.platform}-${process.arch}-${musl ? 'musl' : 'gnu'}`;
}

function noBinary(message, cause) {
  const error = /** @type {Error & { code?: string }} */ (new Error(message));
  error.code = 'ERR_NO_NATIVE_BINARY';
  if (cause) error.cause = cause;
  return error;
}

function load() {
  const platform = currentPlatform();
  const local = path.join(__dirname, '..', `${manifest.napi.binaryName}.${platform}.node`);
  if (fs.existsSync(local)) return require(local);
  const prefix = `${manifest.name}-`;
  const published = Object.keys(manifest.optionalDependencies || {}).filter((name) => name.startsWith(prefix));
  const needs = 'needs Rust, a C++ compiler, and Python 3 with pip for the SYCL runtime';
  if (published.length === 0) {
    throw noBinary(`dpctl-memory: ${path.basename(local)} is not built here: run \`npm run build\` (${needs}).`);
  }
  const fromSource = `To build from source: clone the repository and run \`npm run build\` there (${needs}).`;
  const packageName = `${prefix}${platform}`;
  if (!published.includes(packageName)) {
    const platforms = published.map((name) => name.slice(prefix.length)).join(', ');
    throw noBinary(`dpctl-memory has no native binary for ${platform}: binaries are published for ${platforms}. ${fromSource}`);
  }
  try {
    return require(packageName);
  } catch (error) {
    if (error.code !== 'MODULE_NOT_FOUND' || !String(error.message).includes(packageName)) throw error;
    const v = manifest.version;
    throw noBinary(
      `dpctl-memory: its native binary, the package ${packageName}, is not installed. ` +
        `Installed from tarballs (\`node scripts/pack.js\` in a clone)? Install both in one command: ` +
        `\`npm install ${packageName}-${v}.tgz ${manifest.name}-${v}.tgz\` (npm cannot find the platform package ` +
        'on its own before it is published). From the registry: npm leaves optional dependencies out with ' +
        '--omit=optional or --no-optional, and when the lockfile was made on another platform: run ' +
        `\`npm install ${packageName}@${v}\`. ${fromSource}`,
      error,
    );
  }
}

/** The binding, as `binding.d.ts` declares it. */
const native = /** @type {typeof import('./binding')} */ (load());

/**
 * Gives a handle back when the JS object holding it is collected (memory never freed,
 * and every device, context and queue object). Kinds: 0 device, 1 context, 2 queue,
 * 3 memory. A memory handle `free()` already gave back is a no-op here.
 */
const DEVICE_HANDLE = 0;
const CONTEXT_HANDLE = 1;
const QUEUE_HANDLE = 2;
const MEMORY_HANDLE = 3;
const registries = /** @type {import('./binding').HandleKind[]} */ ([DEVICE_HANDLE, CONTEXT_HANDLE, QUEUE_HANDLE, MEMORY_HANDLE]).map(
  (kind) => new FinalizationRegistry((id) => native.releaseHandle(kind, id)),
);

/** Ties the handle `id` of kind `kind` to `owner`: given back when `owner` is collected. */
const register = FinalizationRegistry.prototype.register;
const apply = Reflect.apply;

function own(owner, kind, id) {
  apply(register, registries[kind], [owner, id]);
  return id;
}

/** Gives back a handle no object owns (one made for a single call). */
const release = (kind, id) => native.releaseHandle(kind, id);

/**
 * USM kinds as they cross the binding: dpctl's `DPCTLSyclUSMType` values (the one
 * encoding; `UsmKind::from_allocated_value` decodes them), and their names by value.
 */
const KIND = Object.freeze({ UNKNOWN: 0, DEVICE: 1, SHARED: 2, HOST: 3 });
const KIND_NAMES = Object.freeze(['unknown', 'device', 'shared', 'host']);

module.exports = { native, own, release, DEVICE_HANDLE, CONTEXT_HANDLE, QUEUE_HANDLE, MEMORY_HANDLE, KIND, KIND_NAMES };
