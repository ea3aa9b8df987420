// index.d.ts in a consumer project as users set one up today: `strict`, `module:
// nodenext`, `isolatedModules`, and `@types/node` installed, with nothing else in its
// tsconfig (no `types`, no `lib`: TypeScript 6 and newer no longer read `@types` by
// themselves), compiled by the oldest TypeScript this package supports and by the newest.
// Each is installed once with npm into node_modules/.cache/dpctl-memory/ (kept between
// runs); where the registry cannot be reached, the test says so and is skipped.
import test from 'ava';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The supported range's ends (README, "TypeScript"): change both together. */
const TYPESCRIPT = { oldest: '5.0.4', newest: '7.0.2' };
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'dpctl-memory');
const TSCONFIG = {
  compilerOptions: { strict: true, isolatedModules: true, module: 'nodenext', noEmit: true },
  files: ['consumer.mts'],
};

/**
 * The `tsc` of TypeScript `version`, installed into the cache if it is not there yet
 * (synchronously: ava wants every test declared before the file's first await).
 */
function typescript(version) {
  const dir = path.join(CACHE, `typescript-${version}`);
  const tsc = path.join(dir, 'node_modules', 'typescript', 'bin', 'tsc');
  if (existsSync(tsc)) return { tsc };
  if (process.env.DPCTL_MEMORY_SKIP_CONSUMER_TEST === '1') return { skip: 'DPCTL_MEMORY_SKIP_CONSUMER_TEST=1' };
  if (spawnSync('npm', ['--version']).status !== 0) return { skip: 'npm is not installed here' };
  mkdirSync(CACHE, { recursive: true });
  // Installed beside its place and renamed into it: a run that dies leaves no half install.
  const staging = mkdtempSync(path.join(CACHE, `.typescript-${version}-`));
  try {
    writeFileSync(path.join(staging, 'package.json'), '{ "private": true }\n');
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', '--ignore-scripts', `typescript@${version}`], {
      cwd: staging,
      env: { ...process.env, npm_config_update_notifier: 'false', npm_config_loglevel: 'error', npm_config_fetch_retries: '1' },
      timeout: 5 * 60 * 1000,
      stdio: ['ignore', 'pipe', 'pipe'],
      encoding: 'utf8',
    });
    rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
    return { tsc };
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    const why = String(error.stderr || error.message).trim().split('\n').find((line) => /ERR!|ENOTFOUND|ECONN|ETIMEDOUT|EAI_AGAIN/.test(line));
    return { skip: `could not install typescript@${version} from the npm registry${why ? ` (${why.slice(0, 120)})` : ''}` };
  }
}

/** A consumer project with the package's files and `@types/node` in its node_modules. */
function consumer(declarations) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-ts-'));
  const pkg = path.join(dir, 'node_modules', 'dpctl-memory');
  mkdirSync(pkg, { recursive: true });
  for (const file of ['package.json', 'index.js', 'index.mjs']) cpSync(path.join(ROOT, file), path.join(pkg, file));
  writeFileSync(path.join(pkg, 'index.d.ts'), declarations);
  mkdirSync(path.join(dir, 'node_modules', '@types'));
  symlinkSync(path.join(ROOT, 'node_modules', '@types', 'node'), path.join(dir, 'node_modules', '@types', 'node'), 'dir');
  symlinkSync(path.join(ROOT, 'node_modules', 'undici-types'), path.join(dir, 'node_modules', 'undici-types'), 'dir');
  writeFileSync(path.join(dir, 'package.json'), '{ "name": "consumer", "private": true, "type": "module" }\n');
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
  cpSync(path.join(ROOT, '__test__', 'types', 'consumer.mts'), path.join(dir, 'consumer.mts'));
  return dir;
}

/** `tsc -p` in `dir`: its exit status and what it printed. */
async function compile(tsc, dir) {
  try {
    const { stdout } = await run(process.execPath, [tsc, '-p', dir, '--listFiles'], { cwd: dir, maxBuffer: 16 * 2 ** 20 });
    return { ok: true, output: stdout };
  } catch (error) {
    return { ok: false, output: `${error.stdout}${error.stderr}` };
  }
}

const DECLARATIONS = readFileSync(path.join(ROOT, 'index.d.ts'), 'utf8');

for (const [which, version] of Object.entries(TYPESCRIPT)) {
  const title = `a strict nodenext consumer with @types/node and nothing else compiles against index.d.ts on TypeScript ${version} (the ${which} supported)`;
  const found = typescript(version);
  const control = `the control: without its reference to node's types, index.d.ts fails there on TypeScript ${version}`;
  if (found.skip) {
    test.skip(`${title} [${found.skip}: skipped]`, () => {});
    if (which === 'newest') test.skip(`${control} [${found.skip}: skipped]`, () => {});
    continue;
  }
  test(title, async (t) => {
    const dir = consumer(DECLARATIONS);
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const { ok, output } = await compile(found.tsc, dir);
    t.true(ok, output);
    t.true(output.includes(path.join(dir, 'node_modules', 'dpctl-memory', 'index.d.ts')), 'the consumer resolved dpctl-memory to its index.d.ts');
  });
  if (which === 'newest') {
    test(control, async (t) => {
      const unreferenced = DECLARATIONS.replace(/^\/\/\/ <reference types="node" \/>\n/m, '');
      t.not(unreferenced, DECLARATIONS, 'index.d.ts has the reference');
      const dir = consumer(unreferenced);
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      const { ok, output } = await compile(found.tsc, dir);
      t.false(ok);
      t.regex(output, /Cannot find name 'Buffer'/);
    });
  }
}
