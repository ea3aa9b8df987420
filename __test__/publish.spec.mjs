// Publishing is one command (scripts/publish.js): it sets the version of both packages,
// packs them, and publishes the platform package before dpctl-memory, whose
// optionalDependencies name it at that version. Its --dry-run, run here against a registry
// that cannot be reached (so nothing can be published by mistake), must do all of that and
// leave the repository's files as they were. Skipped (visibly) with
// DPCTL_MEMORY_SKIP_PACK_TEST=1, or where npm is missing.
import test from 'ava';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { packAll } = createRequire(import.meta.url)('../scripts/pack.js');
const MANIFESTS = ['package.json', 'package-lock.json', 'npm/linux-x64-gnu/package.json'];
const TITLE = 'publish.js --dry-run bumps both packages, publishes the platform package first, and changes nothing here';

const reason =
  process.env.DPCTL_MEMORY_SKIP_PACK_TEST === '1'
    ? 'DPCTL_MEMORY_SKIP_PACK_TEST=1'
    : spawnSync('npm', ['--version']).status !== 0
      ? 'npm is not installed here'
      : null;

const read = (file) => readFile(path.join(ROOT, file), 'utf8');
/** The next patch version of `version` (x.y.z). */
const nextPatch = (version) => version.replace(/(\d+)$/, (patch) => String(Number(patch) + 1));
/** The package.json inside a tarball. */
async function manifestOf(tarball) {
  const { stdout } = await run('tar', ['-xOzf', tarball, 'package/package.json']);
  return JSON.parse(stdout);
}

if (reason) {
  test.skip(`${TITLE} [${reason}: skipped]`, () => {});
  test.skip(`packAll({ version }) packs both at that version [${reason}: skipped]`, () => {});
} else {
  test.serial(TITLE, async (t) => {
    t.timeout(5 * 60 * 1000, 'pack and two dry-run publishes');
    const before = await Promise.all(MANIFESTS.map(read));
    const { version } = JSON.parse(before[0]);
    const next = nextPatch(version);
    const env = {
      ...process.env,
      npm_config_registry: 'http://127.0.0.1:9/',
      npm_config_offline: 'true',
      npm_config_update_notifier: 'false',
      npm_config_loglevel: 'notice',
    };
    const { stdout, stderr } = await run(process.execPath, [path.join(ROOT, 'scripts', 'publish.js'), 'patch', '--dry-run'], { cwd: ROOT, env, maxBuffer: 16 * 2 ** 20 });
    const output = `${stdout}\n${stderr}`;
    t.regex(output, new RegExp(`${version.replace(/\./g, '\\.')} -> ${next.replace(/\./g, '\\.')}`), 'patch bumps the last number');
    const platform = output.indexOf(`+ dpctl-memory-linux-x64-gnu@${next}`);
    const main = output.indexOf(`+ dpctl-memory@${next}`);
    t.true(platform >= 0, `the platform package was published (dry run) at ${next}:\n${output}`);
    t.true(main > platform, 'then the main package');
    t.regex(output, /--dry-run/);
    t.deepEqual(await Promise.all(MANIFESTS.map(read)), before, 'the dry run left every manifest as it was');
  });

  test.serial('packAll({ version }) packs both at that version, the main one naming the platform one', async (t) => {
    const dest = await mkdtemp(path.join(tmpdir(), 'dpctl-memory-version-'));
    t.teardown(() => rm(dest, { recursive: true, force: true }));
    const before = await Promise.all(MANIFESTS.map(read));
    const [platformTarball, mainTarball] = packAll(dest, { version: '9.8.7' });
    const platform = await manifestOf(platformTarball);
    const main = await manifestOf(mainTarball);
    t.is(platform.name, 'dpctl-memory-linux-x64-gnu');
    t.is(platform.version, '9.8.7');
    t.is(main.version, '9.8.7');
    t.deepEqual(main.optionalDependencies, { 'dpctl-memory-linux-x64-gnu': '9.8.7' });
    t.deepEqual(await Promise.all(MANIFESTS.map(read)), before, 'the repository is unchanged');
  });
}
