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

module.exports = load();
