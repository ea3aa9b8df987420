// Issue 39.13: UCX was loaded from the per-user cache without the checks the SYCL runtime
// gets (a planted libucp.so.0 ran from a cache folder of mode 777, of another owner,
// through a symbolic link), from the working directory when LD_LIBRARY_PATH had an empty
// or relative element (a dlopen by bare name searches it), and from a relative
// DPCTL_MEMORY_UCX_ROOT. Each case builds a cache of its own (DPCTL_MEMORY_CACHE) around a
// planted library whose constructor writes a file, loads the addon in a child process and
// asks for UCX: the file says whether the loader ran the library. (NVRTC's same cases are
// cargo tests, `nvrtc::tests::a_planted_nvrtc_runs_only_from_a_private_cache`: CUDA C
// needs a GPU to be reached from JS.)
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const INDEX = path.join(ROOT, 'index.js');
const UCX_VERSION = createRequire(import.meta.url)(path.join(ROOT, 'runtime.json')).ucx.version;
const UCX = `ucx-${UCX_VERSION}`;

const PLANTED_C = `
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void planted(void) {
  const char *mark = getenv("PLANTED_MARK");
  FILE *f = mark ? fopen(mark, "w") : NULL;
  if (f) { fputs("the planted library ran", f); fclose(f); }
}
`;

const cc = spawnSync(process.env.CC || 'cc', ['--version']);
// The system must not have a UCX of its own: it would be found before the cache.
const systemUcx = /\slibucp\.so\.0\s/.test(spawnSync('ldconfig', ['-p'], { encoding: 'utf8' }).stdout || '');
const skip = cc.status !== 0 ? ' [no C compiler (cc): skipped]' : systemUcx ? ' [a system UCX is found first: skipped]' : '';
const runnable = skip === '' ? test.serial : test.serial.skip;
const asRoot = process.geteuid?.() === 0 && skip === '' ? test.serial : test.serial.skip;

function tempDir(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-cache-trust-'));
  chmodSync(dir, 0o755);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function compilePlanted(file) {
  const built = spawnSync(process.env.CC || 'cc', ['-shared', '-fPIC', '-x', 'c', '-', '-o', file], { input: PLANTED_C });
  if (built.status !== 0) throw new Error(`cc failed: ${built.stderr}`);
  chmodSync(file, 0o755);
}

/** A UCX cache in `work/cache` as the install leaves it: private folders, the planted libucp. */
function plantUcxCache(work) {
  const cache = path.join(work, 'cache');
  const dir = path.join(cache, UCX);
  const lib = path.join(dir, 'libucx', 'lib');
  const modules = path.join(lib, 'ucx');
  mkdirSync(modules, { recursive: true });
  for (const folder of [cache, dir, path.join(dir, 'libucx'), lib, modules]) chmodSync(folder, 0o755);
  compilePlanted(path.join(lib, 'libucp.so.0'));
  return { cache, dir, lib, modules };
}

function childEnv(extra) {
  const env = { ...process.env, ...extra };
  for (const name of ['DPCTL_MEMORY_UCX_ROOT', 'LD_LIBRARY_PATH']) if (!(name in extra)) delete env[name];
  return env;
}

/**
 * Loads the addon in a child (working directory `cwd`) and asks for UCX: whether the planted
 * library ran, what `ucx.available()` says, and the code and message `ucx.listen` throws.
 */
function loadUcx(work, env, cwd = work) {
  const mark = path.join(work, `ran-${Math.random().toString(16).slice(2)}`);
  const script = `
    const { ucx } = require(${JSON.stringify(INDEX)});
    const available = ucx.available();
    let code = null, message = null;
    try { ucx.listen({ host: '127.0.0.1' }).close(); } catch (error) { ({ code, message } = error); }
    process.stdout.write(JSON.stringify({ available, code, message }));
    process.exit(0);`;
  const child = spawnSync(process.execPath, ['-e', script], { cwd, env: childEnv({ ...env, PLANTED_MARK: mark }), encoding: 'utf8', timeout: 120_000 });
  if (child.status !== 0) throw new Error(`the child failed (${child.status} ${child.signal}): ${child.stderr}`);
  return { ran: existsSync(mark), ...JSON.parse(child.stdout) };
}

function escaped(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The refusal of a cache: not loaded, coded, naming the path and why. */
function assertRefused(t, result, pathname, reason, what) {
  t.false(result.ran, `${what}: the planted library must not run`);
  t.false(result.available.available, what);
  t.is(result.code, 'ERR_UCX_UNAVAILABLE', what);
  t.regex(result.message, new RegExp(`refused to load UCX in its cache .*${escaped(pathname)} ${reason}`), what);
  t.regex(result.message, /npx dpctl-memory-install-runtime --with ucx/, 'it says how to fix it');
}

runnable(`a private UCX cache is loaded; mode 777, at any depth, or a symbolic link is refused${skip}`, (t) => {
  const work = tempDir(t);
  const { cache, dir, lib, modules } = plantUcxCache(work);
  // The control: the checks pass a private cache and its library is loaded (it has no UCX
  // symbols, so UCX is then unavailable, saying so).
  const good = loadUcx(work, { DPCTL_MEMORY_CACHE: cache });
  t.true(good.ran, `a private cache is loaded: ${good.available.message}`);
  t.notRegex(good.available.message, /refused/);

  for (const folder of [cache, dir, lib, modules, path.join(lib, 'libucp.so.0')]) {
    const mode = lstatSync(folder).mode & 0o777;
    chmodSync(folder, 0o777);
    assertRefused(t, loadUcx(work, { DPCTL_MEMORY_CACHE: cache }), folder, 'is writable by its group or by others \\(mode 777\\)', folder);
    chmodSync(folder, mode);
  }
  // A folder that the loader searches before lib/ (lib/x86_64/), writable by others.
  const hwcap = path.join(lib, 'x86_64');
  mkdirSync(hwcap, { mode: 0o755 });
  compilePlanted(path.join(hwcap, 'libucs.so.0'));
  chmodSync(hwcap, 0o777);
  assertRefused(t, loadUcx(work, { DPCTL_MEMORY_CACHE: cache }), hwcap, 'is writable by its group or by others', 'lib/x86_64');
  rmSync(hwcap, { recursive: true });

  // The version folder through a symbolic link, and libucp.so.0 as a link.
  const elsewhere = path.join(work, 'elsewhere');
  renameSync(dir, elsewhere);
  symlinkSync(elsewhere, dir);
  assertRefused(t, loadUcx(work, { DPCTL_MEMORY_CACHE: cache }), dir, 'is a symbolic link', 'a linked version folder');
  rmSync(dir);
  renameSync(elsewhere, dir);
  renameSync(path.join(lib, 'libucp.so.0'), path.join(work, 'libucp.so.0'));
  symlinkSync(path.join(work, 'libucp.so.0'), path.join(lib, 'libucp.so.0'));
  assertRefused(t, loadUcx(work, { DPCTL_MEMORY_CACHE: cache }), path.join(lib, 'libucp.so.0'), 'is a symbolic link', 'a linked libucp');
});

asRoot(`a UCX cache folder owned by another user is refused${skip}`, (t) => {
  const work = tempDir(t);
  const { cache, lib, modules } = plantUcxCache(work);
  t.true(loadUcx(work, { DPCTL_MEMORY_CACHE: cache }).ran, 'the control: loaded while it is ours');
  for (const folder of [lib, modules]) {
    chownSync(folder, 65534, 65534);
    assertRefused(t, loadUcx(work, { DPCTL_MEMORY_CACHE: cache }), folder, 'is owned by uid 65534', folder);
    chownSync(folder, 0, 0);
  }
});

runnable(`libucp.so.0 is never loaded from the working directory: LD_LIBRARY_PATH's empty or relative elements, a relative DPCTL_MEMORY_UCX_ROOT${skip}`, (t) => {
  const work = tempDir(t);
  const untrusted = path.join(work, 'untrusted');
  mkdirSync(path.join(untrusted, 'rel', 'lib'), { recursive: true });
  compilePlanted(path.join(untrusted, 'libucp.so.0'));
  compilePlanted(path.join(untrusted, 'rel', 'lib', 'libucp.so.0'));
  const empty = path.join(work, 'empty-cache');
  const absolute = path.join(untrusted, 'rel');
  // The control: the same library named by an absolute root runs.
  t.true(loadUcx(work, { DPCTL_MEMORY_CACHE: empty, DPCTL_MEMORY_UCX_ROOT: absolute }, untrusted).ran, 'an absolute root is loaded');
  t.true(loadUcx(work, { DPCTL_MEMORY_CACHE: empty, LD_LIBRARY_PATH: untrusted }, untrusted).ran, 'an absolute LD_LIBRARY_PATH element is searched');

  for (const value of ['/nonexistent:', ':', '.', 'rel/..:/nonexistent', ';']) {
    const result = loadUcx(work, { DPCTL_MEMORY_CACHE: empty, LD_LIBRARY_PATH: value }, untrusted);
    t.false(result.ran, `LD_LIBRARY_PATH=${JSON.stringify(value)}: the working directory's library ran`);
    t.is(result.code, 'ERR_UCX_UNAVAILABLE');
    t.regex(result.message, /LD_LIBRARY_PATH's empty or relative elements .* skipped: they name the working directory/, value);
  }
  const relative = loadUcx(work, { DPCTL_MEMORY_CACHE: empty, DPCTL_MEMORY_UCX_ROOT: 'rel' }, untrusted);
  t.false(relative.ran, 'a relative DPCTL_MEMORY_UCX_ROOT is ignored');
  t.is(relative.code, 'ERR_UCX_UNAVAILABLE');
  t.regex(relative.message, /DPCTL_MEMORY_UCX_ROOT=rel \(ignored: a relative path names the working directory's folder\)/);
});

runnable(`what the UCX installer leaves passes the checks, whatever the umask and links pip made${skip}`, (t) => {
  const work = tempDir(t);
  const cache = path.join(work, 'cache');
  // A stand-in for `python3 -m pip install --target <staging>`: the wheel's layout, written
  // under umask 000 (every folder and library mode 777), with a symbolic link in it.
  const fakePython = path.join(work, 'python3');
  const planted = path.join(work, 'planted.so');
  compilePlanted(planted);
  writeFileSync(fakePython, `#!/bin/sh
[ "$1 $2 $3" = "-m pip --version" ] && exit 0
while [ "$#" -gt 0 ]; do [ "$1" = "--target" ] && target="$2"; shift; done
umask 000
mkdir -p "$target/libucx/lib/ucx" "$target/libucx_cu12.libs"
cp "${planted}" "$target/libucx/lib/libucp.so.0"
chmod 777 "$target/libucx/lib/libucp.so.0"
ln -s libucp.so.0 "$target/libucx/lib/libucp.so"
`, { mode: 0o755 });
  const install = spawnSync('sh', ['-c', `umask 000; exec "${process.execPath}" -e 'require(${JSON.stringify(path.join(ROOT, 'scripts', 'install-ucx.js'))}).installUcx({ quiet: true })'`], {
    env: childEnv({ DPCTL_MEMORY_CACHE: cache, PYTHON: fakePython }), encoding: 'utf8',
  });
  t.is(install.status, 0, install.stderr);
  const dir = path.join(cache, UCX);
  const walk = (folder) => readdirSync(folder, { withFileTypes: true }).flatMap((e) => [path.join(folder, e.name), ...(e.isDirectory() ? walk(path.join(folder, e.name)) : [])]);
  for (const entry of [cache, dir, ...walk(dir)]) {
    const stat = lstatSync(entry);
    t.false(stat.isSymbolicLink(), `${entry} is a link`);
    t.is(stat.mode & 0o022, 0, `${entry} mode ${(stat.mode & 0o777).toString(8)}`);
  }
  const loaded = loadUcx(work, { DPCTL_MEMORY_CACHE: cache });
  t.true(loaded.ran, `a fresh install passes the checks: ${loaded.available.message}`);
  t.notRegex(loaded.available.message, /refused/);
});

// The CUDA driver too: cudarc's loader tried `libcuda.so` by bare name first, which an empty
// element of LD_LIBRARY_PATH resolves in the working directory; the addon now finds
// libcuda.so.1 by absolute path only. A machine with a real driver finds that one first.
const systemCuda = /\slibcuda\.so\.1\s/.test(spawnSync('ldconfig', ['-p'], { encoding: 'utf8' }).stdout || '');
const cudaSkip = skip || (systemCuda ? ' [a system CUDA driver is found first: skipped]' : '');
(cudaSkip === '' ? test.serial : test.serial.skip)(`the CUDA driver is never loaded from the working directory${cudaSkip}`, (t) => {
  const work = tempDir(t);
  const untrusted = path.join(work, 'untrusted');
  mkdirSync(untrusted);
  for (const name of ['libcuda.so', 'libcuda.so.1']) compilePlanted(path.join(untrusted, name));
  const mark = path.join(work, 'ran');
  const script = `
    const { getDevices } = require(${JSON.stringify(INDEX)});
    process.stdout.write(JSON.stringify(getDevices().map((d) => d.filterString)));`;
  for (const value of ['/nonexistent:', ':', '.']) {
    const child = spawnSync(process.execPath, ['-e', script], {
      cwd: untrusted, env: childEnv({ LD_LIBRARY_PATH: value, PLANTED_MARK: mark }), encoding: 'utf8', timeout: 120_000,
    });
    t.is(child.status, 0, child.stderr);
    t.false(existsSync(mark), `LD_LIBRARY_PATH=${JSON.stringify(value)}: the working directory's libcuda ran`);
    t.true(JSON.parse(child.stdout).every((name) => !name.startsWith('cuda')), 'no CUDA device from a planted library');
  }
  // The control: the same library on an absolute element is the one the search finds.
  const control = spawnSync(process.execPath, ['-e', script], {
    cwd: work, env: childEnv({ LD_LIBRARY_PATH: untrusted, PLANTED_MARK: mark }), encoding: 'utf8', timeout: 120_000,
  });
  t.is(control.status, 0, control.stderr);
  t.true(existsSync(mark), 'an absolute LD_LIBRARY_PATH element is searched');
});
