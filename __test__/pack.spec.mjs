// The published packages work: pack both (`scripts/pack.js`: the platform package with the
// `.node` and the shim, and the main package with its publish-time package.json), install
// them into a fresh project with --ignore-scripts (no Rust, no build there), and use them
// from there as a user would. Offline: the tarballs have no other dependencies. Also: the
// errors a user meets without the binary. Skipped (visibly) with DPCTL_MEMORY_SKIP_PACK_TEST=1,
// or where npm is missing.
import test from 'ava';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TITLE = 'pack both packages, install them into a fresh project with --ignore-scripts, and use MemoryUSMHost there';
const { packAll } = createRequire(import.meta.url)('../scripts/pack.js');
const MANIFEST = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8'));
const PLATFORM_PACKAGE = `${MANIFEST.name}-linux-x64-gnu`;

function skipReason() {
  if (process.env.DPCTL_MEMORY_SKIP_PACK_TEST === '1') return 'DPCTL_MEMORY_SKIP_PACK_TEST=1';
  const npm = spawnSync('npm', ['--version'], { encoding: 'utf8' });
  if (npm.error || npm.status !== 0) return 'npm is not installed here';
  return null;
}

const reason = skipReason();

// npm settings for the child processes: no network, no audit, no update checks.
const npmEnv = {
  ...process.env,
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_update_notifier: 'false',
  npm_config_loglevel: 'warn',
};

const USER_SCRIPT = `
'use strict';
const dm = require('dpctl-memory');
const out = { devices: dm.getDevices().map((d) => d.filterString) };
if (out.devices.length > 0) {
  const m = new dm.MemoryUSMHost(16);
  const view = new Uint8Array(m.buffer);
  for (let i = 0; i < 16; i++) view[i] = (i * 7 + 3) & 0xff;
  out.kind = m.getUsmType();
  out.nbytes = m.nbytes;
  out.back = Array.from(m.copyToHost());
  out.device = m.syclDevice.filterString;
  m.free();
  out.detached = view.length;
}
out.resolved = require.resolve('dpctl-memory');
console.log(JSON.stringify(out));
`;

if (reason) {
  test.skip(`${TITLE} [${reason}: skipped]`, () => {});
} else {
  test.serial(TITLE, async (t) => {
    t.timeout(10 * 60 * 1000, 'npm pack + install + run');
    const packDir = await mkdtemp(path.join(tmpdir(), 'dpctl-memory-pack-'));
    const projDir = await mkdtemp(path.join(tmpdir(), 'dpctl-memory-user-'));
    t.teardown(() => Promise.all([rm(packDir, { recursive: true, force: true }), rm(projDir, { recursive: true, force: true })]));

    const tarballs = packAll(packDir);
    t.is(tarballs.length, 2, `two tarballs: ${tarballs.join(', ')}`);

    await run('npm', ['init', '-y'], { cwd: projDir, env: npmEnv });
    await run('npm', ['install', '--no-audit', '--no-fund', '--offline', '--ignore-scripts', ...tarballs], { cwd: projDir, env: npmEnv, maxBuffer: 64 * 2 ** 20 });
    const modules = path.join(projDir, 'node_modules');
    const installed = JSON.parse(await readFile(path.join(modules, 'dpctl-memory', 'package.json'), 'utf8'));
    t.is(installed.name, 'dpctl-memory');
    t.is(installed.scripts, undefined, 'the published package.json has no scripts (they point at files not shipped)');
    t.is(installed.overrides, undefined);
    t.deepEqual(installed.optionalDependencies, { [PLATFORM_PACKAGE]: MANIFEST.version }, 'the platform package is an optional dependency');
    const files = await readdir(path.join(modules, 'dpctl-memory'));
    for (const needed of ['index.js', 'index.mjs', 'index.d.ts', 'package.json', 'runtime.json', 'README.md', 'LICENSE']) t.true(files.includes(needed), `${needed} is in the package`);
    t.false(files.some((f) => f.endsWith('.node') || f.endsWith('.so')), `no binary in the main package: ${files.join(', ')}`);
    const platform = JSON.parse(await readFile(path.join(modules, PLATFORM_PACKAGE, 'package.json'), 'utf8'));
    t.deepEqual([platform.os, platform.cpu, platform.libc, platform.version], [['linux'], ['x64'], ['glibc'], MANIFEST.version]);
    const platformFiles = (await readdir(path.join(modules, PLATFORM_PACKAGE))).sort();
    t.deepEqual(platformFiles, ['LICENSE', 'README.md', 'dpctl-memory.linux-x64-gnu.node', 'dpctl_memory_shim.so', 'dpctl_memory_shim_sycl9.so', 'package.json']);
    const installScript = path.join(modules, '.bin', 'dpctl-memory-install-runtime');
    t.true(spawnSync('test', ['-x', installScript]).status === 0, 'npx dpctl-memory-install-runtime is installed');
    t.true(spawnSync('test', ['-x', path.join(modules, '.bin', 'dpctl-memory-report')]).status === 0, 'npx dpctl-memory-report is installed');

    await writeFile(path.join(projDir, 'use.js'), USER_SCRIPT);
    const { stdout, stderr } = await run(process.execPath, ['use.js'], { cwd: projDir, env: process.env, timeout: 5 * 60 * 1000 });
    if (stderr.trim()) t.log(`stderr: ${stderr.trim()}`);
    const out = JSON.parse(stdout.trim().split('\n').pop());
    t.true(out.resolved.startsWith(path.join(projDir, 'node_modules', 'dpctl-memory')), `loaded from the installed copy: ${out.resolved}`);
    t.true(out.devices.length > 0, 'the installed package sees a device (the runtime is found without any setup by the user)');
    t.is(out.kind, 'host');
    t.is(out.nbytes, 16);
    t.deepEqual(out.back, Array.from({ length: 16 }, (_, i) => (i * 7 + 3) & 0xff));
    t.is(out.detached, 0, 'free() detached the view');
    t.log(`used ${out.device} from the installed package`);

    // The errors without a binary, in the installed project: the platform package left out
    // (--omit=optional), and a platform that has none.
    const failure = async (prelude) => {
      try {
        await run(process.execPath, ['-e', `${prelude}require('dpctl-memory');`], { cwd: projDir });
        return null;
      } catch (error) {
        return error.stderr;
      }
    };
    const otherArch = await failure("Object.defineProperty(process, 'arch', { value: 'arm64' });");
    t.regex(otherArch ?? '', /ERR_NO_NATIVE_BINARY/);
    t.regex(otherArch ?? '', /no native binary for linux-arm64-gnu: binaries are published for linux-x64-gnu\. To build from source: clone the repository and run `npm run build`/);
    await rm(path.join(modules, PLATFORM_PACKAGE), { recursive: true, force: true });
    const omitted = await failure('');
    const version = MANIFEST.version.replace(/\./g, '\\.');
    t.regex(omitted ?? '', new RegExp(`the package ${PLATFORM_PACKAGE}, is not installed.*npm install ${PLATFORM_PACKAGE}@${version}`));
    // Until the packages are published, the route that works: both tarballs in one command.
    t.regex(omitted ?? '', new RegExp(`npm install ${PLATFORM_PACKAGE}-${version}\\.tgz dpctl-memory-${version}\\.tgz`));
    t.notRegex(omitted ?? '', /Cannot find native binding/);
  });
}
