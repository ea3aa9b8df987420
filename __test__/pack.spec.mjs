// The published package works: `npm pack` the repository, install the tarball into a fresh
// project, and use it from there as a user would. Offline: the tarball has no dependencies.
// Skipped (visibly) with DPCTL_MEMORY_SKIP_PACK_TEST=1, or where npm is missing.
import test from 'ava';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TITLE = 'npm pack, install into a fresh project, and use MemoryUSMHost from there';

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

    await run('npm', ['pack', '--pack-destination', packDir], { cwd: ROOT, env: npmEnv, maxBuffer: 64 * 2 ** 20 });
    const tarballs = (await readdir(packDir)).filter((f) => f.endsWith('.tgz'));
    t.is(tarballs.length, 1, `one tarball: ${tarballs.join(', ')}`);
    const tgz = path.join(packDir, tarballs[0]);

    await run('npm', ['init', '-y'], { cwd: projDir, env: npmEnv });
    await run('npm', ['install', '--no-audit', '--no-fund', '--offline', tgz], { cwd: projDir, env: npmEnv, maxBuffer: 64 * 2 ** 20 });
    const installed = JSON.parse(await readFile(path.join(projDir, 'node_modules', 'dpctl-memory', 'package.json'), 'utf8'));
    t.is(installed.name, 'dpctl-memory');
    const files = await readdir(path.join(projDir, 'node_modules', 'dpctl-memory'));
    for (const needed of ['index.js', 'index.d.ts', 'package.json']) t.true(files.includes(needed), `${needed} is in the package`);
    t.true(files.some((f) => f.endsWith('.node')), `a .node binary is in the package: ${files.join(', ')}`);

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
  });
}
