// The runtime installer leaves no junk and refuses what it did not pin, without the 1 GB
// download: leftovers of dead installs are removed (and live ones kept), SIGINT and SIGTERM
// remove the staging folder (a stand-in pip that writes and waits), and real pip, fed wheels
// that are not the pinned ones from a local folder, refuses them.
import test from 'ava';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const INSTALLER = path.join(ROOT, 'scripts', 'install-runtime.js');
const { removeLeftovers, requirementsText, RUNTIME_VERSION } = createRequire(import.meta.url)(INSTALLER);
const MANIFEST = JSON.parse(readFileSync(path.join(ROOT, 'runtime.json'), 'utf8'));
const OWNER_FILE = '.dpctl-memory-owner.json';

function tempDir(t, name) {
  const dir = mkdtempSync(path.join(tmpdir(), `dpctl-memory-${name}-`));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A pid no process has: a child that has exited. */
function deadPid() {
  return spawnSync(process.execPath, ['-e', '']).pid;
}

function plant(root, name, owner, { old = false } = {}) {
  const dir = path.join(root, name);
  mkdirSync(path.join(dir, 'lib'), { recursive: true });
  writeFileSync(path.join(dir, 'lib', 'part.so'), Buffer.alloc(4096));
  if (owner) writeFileSync(path.join(dir, OWNER_FILE), JSON.stringify(owner));
  if (old) utimesSync(dir, new Date(Date.now() - 3600e3), new Date(Date.now() - 3600e3));
  return dir;
}

// An environment that finds no installed oneAPI, and a cache of the test's own.
function installerEnv(cache, extra = {}) {
  const env = { ...process.env, DPCTL_MEMORY_CACHE: cache, ...extra };
  for (const name of ['DPCTL_MEMORY_SYCL_ROOT', 'SYCL_ROOT', 'CMPLR_ROOT', 'ONEAPI_ROOT']) delete env[name];
  return env;
}

test('leftovers of dead installs are removed, live and foreign ones kept', (t) => {
  const cache = tempDir(t, 'leftovers');
  const host = hostname();
  plant(cache, `.staging-${RUNTIME_VERSION}-dead01`, { pid: deadPid(), host });
  plant(cache, `.staging-${RUNTIME_VERSION}-older1`, null, { old: true });
  plant(cache, `.staging-${RUNTIME_VERSION}-fresh1`, null);
  plant(cache, `.staging-${RUNTIME_VERSION}-alive1`, { pid: process.pid, host });
  plant(cache, `.staging-${RUNTIME_VERSION}-other1`, { pid: deadPid(), host: `not-${host}` });
  const movedAsideBy = deadPid();
  plant(cache, `sycl-runtime-${RUNTIME_VERSION}.stale-${movedAsideBy}`, null);
  plant(cache, `sycl-runtime-${RUNTIME_VERSION}.stale-${process.pid}`, null);
  plant(cache, `sycl-runtime-${RUNTIME_VERSION}`, null, { old: true });
  const lines = [];
  const removed = removeLeftovers(cache, { log: (line) => lines.push(line) }).sort();
  t.deepEqual(removed, [`.staging-${RUNTIME_VERSION}-dead01`, `.staging-${RUNTIME_VERSION}-older1`, `sycl-runtime-${RUNTIME_VERSION}.stale-${movedAsideBy}`].sort());
  t.deepEqual(readdirSync(cache).sort(), [
    `.staging-${RUNTIME_VERSION}-alive1`,
    `.staging-${RUNTIME_VERSION}-fresh1`,
    `.staging-${RUNTIME_VERSION}-other1`,
    `sycl-runtime-${RUNTIME_VERSION}`,
    `sycl-runtime-${RUNTIME_VERSION}.stale-${process.pid}`,
  ].sort());
  t.is(lines.length, 3);
  t.regex(lines[0], /removed .* \(\d+ MB\), left by an install that did not finish/);
});

test('the requirements pin every wheel of runtime.json to its sha256', (t) => {
  const lines = requirementsText().trim().split('\n');
  t.is(lines.length, MANIFEST.wheels.length);
  for (const [i, wheel] of MANIFEST.wheels.entries()) {
    t.is(lines[i], `${wheel.name}==${wheel.version ?? MANIFEST.version} --hash=sha256:${wheel.sha256}`);
    t.regex(wheel.sha256, /^[0-9a-f]{64}$/);
  }
});

// A stand-in for python: `-m pip --version` succeeds; `-m pip install ... --prefix DIR`
// records its arguments, writes a megabyte into DIR and into $TMPDIR (a download under
// way), then waits to be interrupted.
const FAKE_PYTHON = `#!/bin/sh
[ "$3" = "--version" ] && exit 0
echo "$@" > "$FAKE_PIP_ARGS"
while [ $# -gt 0 ]; do [ "$1" = "--prefix" ] && prefix=$2; shift; done
mkdir -p "$prefix/lib" && head -c 1048576 /dev/zero > "$prefix/lib/partial.so"
head -c 1048576 /dev/zero > "$TMPDIR/download.whl"
exec sleep 120
`;

for (const signal of ['SIGINT', 'SIGTERM']) {
  test.serial(`${signal} during the install removes its staging folder; the process ends by ${signal}`, async (t) => {
    t.timeout(60e3);
    const work = tempDir(t, 'signal');
    const cache = path.join(work, 'cache');
    const python = path.join(work, 'python');
    writeFileSync(python, FAKE_PYTHON);
    chmodSync(python, 0o755);
    const argsFile = path.join(work, 'args');
    const child = spawn(process.execPath, [INSTALLER], {
      env: installerEnv(cache, { PYTHON: python, FAKE_PIP_ARGS: argsFile }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const ended = new Promise((resolve) => child.on('close', (code, sig) => resolve({ code, sig })));
    // Wait for the heartbeat (stdout is a pipe here), which comes once pip is at work.
    while (!/runtime install: \d+ MB downloaded and unpacked so far/.test(output)) {
      if (child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const staging = readdirSync(cache).filter((name) => name.startsWith('.staging-'));
    t.is(staging.length, 1, `one staging folder while pip runs: ${output}`);
    t.regex(output, /runtime install: 2 MB downloaded and unpacked so far/, 'the heartbeat counts the staging folder, downloads included');
    t.regex(readFileSync(argsFile, 'utf8'), /--require-hashes .*-r \S+requirements\.txt/);
    child.kill(signal);
    const { code, sig } = await ended;
    t.is(sig, signal, `ended by ${signal} (code ${code}): ${output}`);
    t.deepEqual(readdirSync(cache), [], 'nothing left in the cache');
    t.regex(output, new RegExp(`runtime install interrupted \\(${signal}\\); removed`));
  });
}

const pip = spawnSync('python3', ['-m', 'pip', '--version']);
if (pip.status === 0) {
  test('wheels that are not the pinned ones are refused, and nothing is left', async (t) => {
    t.timeout(120e3);
    const work = tempDir(t, 'hashes');
    const wheels = path.join(work, 'wheels');
    const cache = path.join(work, 'cache');
    mkdirSync(wheels);
    // A wheel of the right name and version, but not the bytes PyPI has.
    for (const wheel of MANIFEST.wheels) {
      const file = `${wheel.name.replace(/-/g, '_')}-${wheel.version ?? MANIFEST.version}-py2.py3-none-any.whl`;
      writeFileSync(path.join(wheels, file), 'substituted');
    }
    const result = spawnSync(process.execPath, [INSTALLER], {
      env: installerEnv(cache, { PIP_NO_INDEX: '1', PIP_FIND_LINKS: wheels, PIP_NO_CACHE_DIR: '1' }),
      encoding: 'utf8',
    });
    t.is(result.status, 1, result.stdout + result.stderr);
    t.regex(result.stderr, /DO NOT MATCH THE HASHES/, 'pip checked the hash');
    t.regex(result.stderr, /the download was corrupted or substituted and was refused/);
    t.false(existsSync(path.join(cache, `sycl-runtime-${RUNTIME_VERSION}`)));
    t.deepEqual(readdirSync(cache), []);
  });
} else {
  test.skip('wheels that are not the pinned ones are refused [no python3 -m pip here: skipped]', () => {});
}
