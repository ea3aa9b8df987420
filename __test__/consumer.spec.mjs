// The packed package in a consumer project, under the test runners users have: jest 29
// (each test file in a vm context) and vitest's vmThreads pool. Errors, arrays and
// buffers must belong to the realm that loaded the package, and ESM named imports of
// every export must work. Needs the npm registry (jest and vitest are installed from it);
// skipped (visibly) with DPCTL_MEMORY_SKIP_CONSUMER_TEST=1, or where `npm` is not on the PATH.
import test from 'ava';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const EXPORTS = Object.keys(require('../index.js')).sort();
const { packAll } = require('../scripts/pack.js');
const npmEnv = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false', npm_config_loglevel: 'error' };

// One body for both runners: `test`/`expect` are globals under jest, imports under vitest.
const CHECKS = `
test('errors, arrays and buffers are of this realm', async () => {
  expect(() => new MemoryUSMHost(-1)).toThrow(RangeError);
  expect(() => new MemoryUSMHost('8')).toThrow(TypeError);
  expect(() => new MemoryUSMHost(8, { bogus: 1 })).toThrow(TypeError);
  let caught;
  try { new MemoryUSMHost(-1); } catch (error) { caught = error; }
  expect(caught).toBeInstanceOf(Error);
  expect(caught.code).toBe('ERR_INVALID_SIZE');
  expect(getDevices()).toBeInstanceOf(Array);
  expect(getRuntimeDiagnostics()).toBeInstanceOf(Array);
  expect(poolStats()).toBeInstanceOf(Object);
  const devices = getDevices();
  if (devices.length === 0) return;
  expect(devices[0].aspects).toBeInstanceOf(Array);
  const m = new MemoryUSMHost(16);
  expect(m).toBeInstanceOf(_Memory);
  expect(m.buffer).toBeInstanceOf(ArrayBuffer);
  new Uint8Array(m.buffer).fill(7);
  expect(m.copyToHost()).toBeInstanceOf(Uint8Array);
  expect(Array.from(m.copyToHost())).toEqual(new Array(16).fill(7));
  const iface = m.__sycl_usm_array_interface__;
  expect(iface).toBeInstanceOf(Object);
  expect(iface.data).toBeInstanceOf(Array);
  const pending = m.copyToHostAsync();
  expect(pending).toBeInstanceOf(Promise);
  expect(await pending).toBeInstanceOf(Uint8Array);
  await expect(m.copyFromHostAsync(new Uint8Array(32))).rejects.toThrow(RangeError);
  expect(() => m.memset(300)).toThrow(RangeError);
  const { free } = m;
  expect(() => free()).toThrow(TypeError);
  m.free();
  expect(() => m.nbytes).toThrow(Error);
  expect(() => new SyclQueue('foo:bar')).toThrow(SyclQueueCreationError);
  expect(() => new MemoryUSMHost(2 ** 52)).toThrow(USMAllocationError);
});
`;

const JEST_TEST = `'use strict';
const { ${EXPORTS.join(', ')} } = require('dpctl-memory');
${CHECKS}`;

const VITEST_TEST = `import { test, expect } from 'vitest';
import { ${EXPORTS.join(', ')} } from 'dpctl-memory';
import * as everything from 'dpctl-memory';
test('every export is importable by name', () => {
  expect(Object.keys(everything).filter((k) => k !== 'default').sort()).toEqual(${JSON.stringify(EXPORTS)});
});
${CHECKS}`;

const ESM_SCRIPT = `import * as esm from 'dpctl-memory';
import { createRequire } from 'node:module';
const cjs = createRequire(import.meta.url)('dpctl-memory');
const names = Object.keys(esm).filter((k) => k !== 'default').sort();
const same = names.every((k) => esm[k] === cjs[k]);
console.log(JSON.stringify({ names, same }));
`;

/** Why there is no `npm` to run here, or `null` when there is one. */
function npmMissing() {
  const probe = spawnSync('npm', ['--version'], { encoding: 'utf8', env: npmEnv });
  if (probe.error) return probe.error.code === 'ENOENT' ? 'npm is not on the PATH' : `npm cannot run: ${probe.error.message}`;
  return probe.status === 0 ? null : `npm --version failed (${probe.status}): ${String(probe.stderr).trim().slice(0, 200)}`;
}

const noNpm = process.env.DPCTL_MEMORY_SKIP_CONSUMER_TEST === '1' ? null : npmMissing();
if (process.env.DPCTL_MEMORY_SKIP_CONSUMER_TEST === '1') {
  test.skip('a consumer project with jest 29 and vitest vmThreads [DPCTL_MEMORY_SKIP_CONSUMER_TEST=1: skipped]', () => {});
} else if (noNpm !== null) {
  test.skip(`a consumer project with jest 29 and vitest vmThreads [${noNpm}: skipped]`, () => {});
} else {
  test.serial('a consumer project with jest 29 and vitest vmThreads', async (t) => {
    t.timeout(15 * 60 * 1000, 'npm pack + install jest and vitest + run');
    const packDir = await mkdtemp(path.join(tmpdir(), 'dpctl-memory-pack-'));
    const projDir = await mkdtemp(path.join(tmpdir(), 'dpctl-memory-consumer-'));
    t.teardown(() => Promise.all([rm(packDir, { recursive: true, force: true }), rm(projDir, { recursive: true, force: true })]));
    const tarballs = packAll(packDir);
    await writeFile(path.join(projDir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, version: '1.0.0' }));
    await run('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', ...tarballs, 'jest@29.7.0', 'vitest@3.2.4'], {
      cwd: projDir,
      env: npmEnv,
      maxBuffer: 64 * 2 ** 20,
      timeout: 10 * 60 * 1000,
    });
    await writeFile(path.join(projDir, 'realm.test.js'), JEST_TEST);
    await writeFile(path.join(projDir, 'realm.spec.mjs'), VITEST_TEST);
    await writeFile(path.join(projDir, 'esm.mjs'), ESM_SCRIPT);

    const esm = JSON.parse((await run(process.execPath, ['esm.mjs'], { cwd: projDir })).stdout.trim());
    t.deepEqual(esm.names, EXPORTS, 'every export is an ESM named export');
    t.true(esm.same, 'ESM and CommonJS give the very same objects');

    const outcome = async (command, args) => {
      try {
        const { stdout, stderr } = await run(command, args, { cwd: projDir, env: { ...process.env, CI: 'true' }, maxBuffer: 64 * 2 ** 20, timeout: 5 * 60 * 1000 });
        return { ok: true, output: `${stdout}\n${stderr}` };
      } catch (error) {
        return { ok: false, output: `${error.stdout}\n${error.stderr}` };
      }
    };
    const jest = await outcome(process.execPath, [path.join(projDir, 'node_modules', 'jest', 'bin', 'jest.js'), '--testMatch', '**/realm.test.js']);
    t.true(jest.ok, `jest 29:\n${jest.output}`);
    t.regex(jest.output, /Tests:\s+1 passed, 1 total/, 'jest ran the test');
    const vitest = await outcome(process.execPath, [path.join(projDir, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--pool=vmThreads', 'realm.spec.mjs']);
    t.true(vitest.ok, `vitest vmThreads:\n${vitest.output}`);
    t.regex(vitest.output, /Tests\s+.*2 passed/, 'vitest ran both tests');
  });
}
