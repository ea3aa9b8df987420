// The TypeScript compiler for the specs that read or compile declarations. typescript is
// a dev dependency, always there for `npm test`; a machine that carries only the runtime
// test dependencies (the GPU machine) skips those tests visibly.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export const ts = (() => {
  try {
    return require('typescript');
  } catch {
    return null;
  }
})();

/** `test` where typescript is installed, else a visible skip of the same title. */
export const typedTest = (test) => (ts ? test : (title, fn) => test.skip(`${title} [typescript is not installed: skipped]`, fn));
