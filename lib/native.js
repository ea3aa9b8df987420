'use strict';
// Loads the native binding: the `.node` built in a clone (`npm run build`), else the
// per-platform package that npm installs beside this one.
const path = require('node:path');

const TRIPLES = { 'linux-x64': 'linux-x64-gnu' };

function load() {
  const triple = TRIPLES[`${process.platform}-${process.arch}`];
  if (!triple) {
    const error = new Error(
      `dpctl-memory has no native binary for ${process.platform}-${process.arch}; binaries exist for ` +
        `${Object.values(TRIPLES).join(', ')}. To build from source, clone the repository and run \`npm run build\`.`,
    );
    error.code = 'ERR_NO_NATIVE_BINARY';
    throw error;
  }
  const local = path.join(__dirname, '..', `dpctl-memory.${triple}.node`);
  try {
    return require(local);
  } catch (localError) {
    if (localError.code !== 'MODULE_NOT_FOUND') throw localError;
    try {
      return require(`dpctl-memory-${triple}`);
    } catch (packageError) {
      const error = new Error(
        `dpctl-memory: the native binary is missing (looked for ${local} and the package dpctl-memory-${triple}). ` +
          'Reinstall the package, or in a clone run `npm run build`.',
      );
      error.code = 'ERR_NO_NATIVE_BINARY';
      error.cause = packageError;
      throw error;
    }
  }
}

const native = load();

/**
 * Gives a handle back when the JS object holding it is collected (memory never freed,
 * and every device, context and queue object). Kinds: 0 device, 1 context, 2 queue,
 * 3 memory. A memory handle `free()` already gave back is a no-op here.
 */
const DEVICE_HANDLE = 0;
const CONTEXT_HANDLE = 1;
const QUEUE_HANDLE = 2;
const MEMORY_HANDLE = 3;
const registries = [DEVICE_HANDLE, CONTEXT_HANDLE, QUEUE_HANDLE, MEMORY_HANDLE].map(
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

module.exports = { native, own, release, DEVICE_HANDLE, CONTEXT_HANDLE, QUEUE_HANDLE, MEMORY_HANDLE };
