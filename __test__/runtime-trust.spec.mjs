// Issue 24.5: the runtime cache was trusted without checks. A library planted in the cache
// folder was loaded (its constructors ran), a folder holding the completion marker was
// accepted whoever owned it and whoever could write it, and a relative XDG_CACHE_HOME made
// the cache the working directory's. Each case builds a cache of its own in a temporary
// folder (DPCTL_MEMORY_CACHE, in a child process) around a planted library whose
// constructor leaves a file: the file says whether the loader ran it.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runtime2026, usable2026 } from './helpers/sycl-runtimes.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const INDEX = path.join(ROOT, 'index.js');
const INSTALLER = path.join(ROOT, 'scripts', 'install-runtime.js');
const { RUNTIME_VERSION, RECORD_FILE, MARKER, MARKER_TEXT } = createRequire(import.meta.url)(INSTALLER);
const RUNTIME = `sycl-runtime-${RUNTIME_VERSION}`;

const PLANTED_C = `
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void planted(void) {
  const char *mark = getenv("PLANTED_MARK");
  FILE *f = mark ? fopen(mark, "w") : NULL;
  if (f) { fputs("the planted library ran", f); fclose(f); }
}
`;

function tempDir(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-trust-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Compiles the planted library to `file`; false where no C compiler is present. */
function compilePlanted(file) {
  const cc = spawnSync(process.env.CC || 'cc', ['-shared', '-fPIC', '-x', 'c', '-', '-o', file], { input: PLANTED_C });
  return cc.status === 0;
}

const cc = spawnSync(process.env.CC || 'cc', ['--version']);
const withCompiler = cc.status === 0 ? test.serial : test.serial.skip;
const compilerNote = cc.status === 0 ? '' : ' [no C compiler (cc) to build a planted library: skipped]';

/**
 * A cache in `work/cache` holding a runtime folder as the installer leaves it: the marker,
 * `lib/libsycl.so.8` (the planted library), and a wheel RECORD that lists it, as pip writes.
 */
function plantCache(work, { cacheDir = path.join(work, 'cache') } = {}) {
  const dir = path.join(cacheDir, RUNTIME);
  const lib = path.join(dir, 'lib');
  const site = path.join(lib, 'python3.11', 'site-packages', 'intel_sycl_rt-0.dist-info');
  mkdirSync(site, { recursive: true, mode: 0o755 });
  mkdirSync(path.join(dir, 'include'), { mode: 0o755 });
  for (const folder of [cacheDir, dir, lib]) chmodSync(folder, 0o755);
  if (!compilePlanted(path.join(lib, 'libsycl.so.8'))) throw new Error('cc failed');
  chmodSync(path.join(lib, 'libsycl.so.8'), 0o755);
  const digest = createHash('sha256').update(readFileSync(path.join(lib, 'libsycl.so.8'))).digest('base64url');
  writeFileSync(path.join(site, 'RECORD'), `../../libsycl.so.8,sha256=${digest},1\n`);
  writeFileSync(path.join(dir, MARKER), MARKER_TEXT);
  return { cache: cacheDir, dir, lib };
}

function childEnv(extra) {
  const env = { ...process.env, ...extra };
  for (const name of ['DPCTL_MEMORY_SYCL_ROOT', 'SYCL_ROOT', 'CMPLR_ROOT', 'ONEAPI_ROOT', 'OCL_ICD_FILENAMES']) delete env[name];
  for (const [name, value] of Object.entries(env)) if (value === undefined) delete env[name];
  return env;
}

/** The installer run on the cache (it records a cache made before records). */
function runInstaller(cache) {
  return spawnSync(process.execPath, [INSTALLER], { env: childEnv({ DPCTL_MEMORY_CACHE: cache }), encoding: 'utf8' });
}

/**
 * Loads the addon in a child with the given environment and asks for devices: whether the
 * planted library ran, and the runtime diagnostics.
 */
function load(work, env, cwd = work) {
  const mark = path.join(work, `ran-${Math.random().toString(16).slice(2)}`);
  const script = `const m = require(${JSON.stringify(INDEX)}); m.getDevices();
    let queue = null;
    try { new m.SyclQueue(); } catch (error) { queue = { code: error.code, message: error.message }; }
    process.stdout.write(JSON.stringify({ diagnostics: m.getRuntimeDiagnostics(), queue }));`;
  // The CPU device alone: the first queue's error is then the cache's (a CUDA device would
  // serve it otherwise).
  const child = spawnSync(process.execPath, ['-e', script], { cwd, env: childEnv({ ONEAPI_DEVICE_SELECTOR: 'opencl:cpu', ...env, PLANTED_MARK: mark }), encoding: 'utf8' });
  if (child.status !== 0) throw new Error(`the child failed: ${child.stderr}`);
  const { diagnostics, queue } = JSON.parse(child.stdout);
  return { ran: existsSync(mark), diagnostics: diagnostics.join('\n'), queue };
}

withCompiler(`a library planted in a cache without a record is not loaded${compilerNote}`, (t) => {
  const work = tempDir(t);
  const { cache } = plantCache(work);
  const { ran, diagnostics } = load(work, { DPCTL_MEMORY_CACHE: cache });
  t.false(ran, 'the planted library must not run');
  t.regex(diagnostics, /refused to load the SYCL runtime in its cache .*holds no record of what was installed/);
  t.regex(diagnostics, /npx dpctl-memory-install-runtime/, 'the message says how to fix it');
});

withCompiler(`a recorded private cache loads; group-writable, replaced or added files are refused${compilerNote}`, (t) => {
  const work = tempDir(t);
  const { cache, dir, lib } = plantCache(work);
  // The installer checks the library against its wheel's RECORD and records it.
  const adopted = runInstaller(cache);
  t.is(adopted.status, 0, adopted.stderr);
  t.true(existsSync(path.join(dir, RECORD_FILE)));
  // The control: a private, recorded cache passes the checks, and its library is loaded.
  const good = load(work, { DPCTL_MEMORY_CACHE: cache });
  t.true(good.ran, `the checks passed a good cache: ${good.diagnostics}`);
  t.notRegex(good.diagnostics, /refused/);

  // Writable by the group: the cache folder, the runtime's lib/, the library.
  for (const [target, mode, restore] of [[cache, 0o775, 0o755], [lib, 0o775, 0o755], [path.join(lib, 'libsycl.so.8'), 0o775, 0o755]]) {
    chmodSync(target, mode);
    const { ran, diagnostics } = load(work, { DPCTL_MEMORY_CACHE: cache });
    t.false(ran, `${target} mode ${mode.toString(8)}`);
    t.regex(diagnostics, /refused to load .*writable by its group or by others/);
    const installer = runInstaller(cache);
    t.is(installer.status, 1, 'the installer refuses it too');
    t.regex(installer.stderr, /is not trusted: .*writable by its group or by others.*To fix it/);
    chmodSync(target, restore);
  }
  // The chmod of the library moved its change time: the installer checks its sha256 again.
  t.false(load(work, { DPCTL_MEMORY_CACHE: cache }).ran, 'a chmod of a recorded library is a change');
  t.is(runInstaller(cache).status, 0);
  t.true(load(work, { DPCTL_MEMORY_CACHE: cache }).ran);

  // A library added beside the recorded one (an adapter the runtime would load by name).
  writeFileSync(path.join(lib, 'libur_adapter_planted.so.0'), readFileSync(path.join(lib, 'libsycl.so.8')));
  chmodSync(path.join(lib, 'libur_adapter_planted.so.0'), 0o755);
  let refused = load(work, { DPCTL_MEMORY_CACHE: cache });
  t.false(refused.ran);
  t.regex(refused.diagnostics, /libur_adapter_planted\.so\.0 is not in the record/);
  const extra = runInstaller(cache);
  t.is(extra.status, 1);
  t.regex(extra.stderr, /libur_adapter_planted\.so\.0 was not installed by the install script/);
  rmSync(path.join(lib, 'libur_adapter_planted.so.0'));
  t.true(load(work, { DPCTL_MEMORY_CACHE: cache }).ran, 'removed again: the cache loads');

  // The recorded library replaced by another (renamed over it).
  const other = path.join(lib, '.other');
  compilePlanted(other);
  writeFileSync(other, Buffer.concat([readFileSync(other), Buffer.from('changed')]));
  chmodSync(other, 0o755);
  renameSync(other, path.join(lib, 'libsycl.so.8'));
  refused = load(work, { DPCTL_MEMORY_CACHE: cache });
  t.false(refused.ran);
  t.regex(refused.diagnostics, /libsycl\.so\.8 changed since it was installed and recorded/);
  const replaced = runInstaller(cache);
  t.is(replaced.status, 1);
  t.regex(replaced.stderr, /libsycl\.so\.8 does not have the sha256 recorded when it was installed/);
});

withCompiler(`the same bytes after a chmod are recorded again by the installer, not refused by it${compilerNote}`, (t) => {
  const work = tempDir(t);
  const { cache, lib } = plantCache(work);
  t.is(runInstaller(cache).status, 0);
  chmodSync(path.join(lib, 'libsycl.so.8'), 0o700);
  t.false(load(work, { DPCTL_MEMORY_CACHE: cache }).ran, 'its change time moved: the loader refuses until it is checked');
  const rechecked = runInstaller(cache);
  t.is(rechecked.status, 0, rechecked.stderr);
  t.true(load(work, { DPCTL_MEMORY_CACHE: cache }).ran, 'the installer hashed it again and recorded it');
});

withCompiler(`a relative XDG_CACHE_HOME (or DPCTL_MEMORY_CACHE) is ignored: the working directory is never the cache${compilerNote}`, (t) => {
  const work = tempDir(t);
  // An untrusted folder that a program is started in, with a cache that even has a record.
  const untrusted = path.join(work, 'untrusted');
  mkdirSync(untrusted);
  const { cache } = plantCache(work, { cacheDir: path.join(untrusted, 'rel', 'dpctl-memory') });
  t.is(runInstaller(cache).status, 0);
  const home = path.join(work, 'home');
  mkdirSync(home);
  for (const env of [{ XDG_CACHE_HOME: 'rel', HOME: home }, { DPCTL_MEMORY_CACHE: 'rel/dpctl-memory', HOME: home }]) {
    const { ran, diagnostics } = load(work, { ...env, DPCTL_MEMORY_CACHE: env.DPCTL_MEMORY_CACHE, XDG_CACHE_HOME: env.XDG_CACHE_HOME }, untrusted);
    t.false(ran, JSON.stringify(env));
    t.regex(diagnostics, /ignored, as the XDG base directory specification says/);
    t.regex(diagnostics, new RegExp(`${home.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/\\.cache/dpctl-memory`), 'it looked in $HOME/.cache instead');
  }
});

// Issue 39.14: the record covered only the files directly in lib/, and the dynamic loader
// looks for a library's dependencies in sub-folders of its RUNPATH folder (lib/x86_64/,
// lib/tls/, lib/glibc-hwcaps/...) before lib/ itself: a libur_loader.so.0 placed in a
// mode-777 lib/x86_64/ of another user ran instead of the recorded one.
const LOADER_C = `
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void loader(void) {
  const char *mark = getenv("LOADER_MARK");
  FILE *f = mark ? fopen(mark, "w") : NULL;
  if (f) { fputs(WHO, f); fclose(f); }
}
`;

/** Builds a libur_loader.so.0 whose constructor writes `who` into $LOADER_MARK. */
function compileLoader(file, who) {
  const built = spawnSync(process.env.CC || 'cc', ['-shared', '-fPIC', `-DWHO="${who}"`, '-Wl,-soname,libur_loader.so.0', '-x', 'c', '-', '-o', file], { input: LOADER_C });
  if (built.status !== 0) throw new Error(`cc failed: ${built.stderr}`);
  chmodSync(file, 0o755);
}

const asRoot = cc.status === 0 && process.geteuid?.() === 0 ? test.serial : test.serial.skip;

asRoot(`a library in a sub-folder of lib/ that the loader searches first (lib/x86_64/) is refused, and named${compilerNote}`, (t) => {
  const work = tempDir(t);
  const { cache, dir, lib } = plantCache(work);
  // libsycl.so.8 needs libur_loader.so.0, found through its RUNPATH $ORIGIN, as the
  // runtime's does; both in lib/, in the wheel's RECORD.
  compileLoader(path.join(lib, 'libur_loader.so.0'), 'recorded');
  const sycl = spawnSync(process.env.CC || 'cc', ['-shared', '-fPIC', '-Wl,--no-as-needed,--enable-new-dtags,-rpath,$ORIGIN', '-x', 'c', '-', '-x', 'none', path.join(lib, 'libur_loader.so.0'), '-o', path.join(lib, 'libsycl.so.8')], { input: PLANTED_C });
  t.is(sycl.status, 0, String(sycl.stderr));
  chmodSync(path.join(lib, 'libsycl.so.8'), 0o755);
  const site = path.join(lib, 'python3.11', 'site-packages', 'intel_sycl_rt-0.dist-info');
  const line = (name) => `../../${name},sha256=${createHash('sha256').update(readFileSync(path.join(lib, name))).digest('base64url')},1\n`;
  writeFileSync(path.join(site, 'RECORD'), line('libsycl.so.8') + line('libur_loader.so.0'));
  const recorded = runInstaller(cache);
  t.is(recorded.status, 0, recorded.stderr);
  const loaderMark = path.join(work, 'loader');
  const loadWith = () => {
    rmSync(loaderMark, { force: true });
    const result = load(work, { DPCTL_MEMORY_CACHE: cache, LOADER_MARK: loaderMark });
    return { ...result, loader: existsSync(loaderMark) ? readFileSync(loaderMark, 'utf8') : null };
  };
  // The control: the recorded libur_loader.so.0 is the one loaded.
  const good = loadWith();
  t.true(good.ran, good.diagnostics);
  t.is(good.loader, 'recorded');

  // Another user's lib/x86_64/ of mode 777 with a libur_loader.so.0 of its own.
  const hwcap = path.join(lib, 'x86_64');
  mkdirSync(hwcap);
  compileLoader(path.join(hwcap, 'libur_loader.so.0'), 'planted');
  chmodSync(hwcap, 0o777);
  chownSync(hwcap, 65534, 65534);
  chownSync(path.join(hwcap, 'libur_loader.so.0'), 65534, 65534);
  const refused = loadWith();
  t.false(refused.ran, 'nothing of the cache is loaded');
  t.is(refused.loader, null, `no libur_loader.so.0 ran (${refused.loader})`);
  t.regex(refused.diagnostics, new RegExp(`refused to load the SYCL runtime in its cache .*${hwcap.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is owned by uid 65534`));
  // The coded error of the first queue says it too.
  t.is(refused.queue?.code, 'ERR_QUEUE_CREATION');
  t.regex(refused.queue?.message ?? '', /refused to load the SYCL runtime in its cache .*x86_64 is owned by uid 65534/);
  const installer = runInstaller(cache);
  t.is(installer.status, 1, 'the installer refuses it too');
  t.regex(installer.stderr, /x86_64 is owned by uid 65534/);

  // Made private, the planted library in it is still refused (the install puts none there).
  chownSync(hwcap, 0, 0);
  chownSync(path.join(hwcap, 'libur_loader.so.0'), 0, 0);
  chmodSync(hwcap, 0o755);
  const privateOne = loadWith();
  t.false(privateOne.ran);
  t.is(privateOne.loader, null);
  t.regex(privateOne.diagnostics, /x86_64\/libur_loader\.so\.0 is a library in a sub-folder, which the dynamic loader searches before the folder itself/);
  // glibc-hwcaps/x86-64-v2/ too, at any depth.
  rmSync(hwcap, { recursive: true });
  const hwcaps = path.join(lib, 'glibc-hwcaps', 'x86-64-v2');
  mkdirSync(hwcaps, { recursive: true, mode: 0o755 });
  compileLoader(path.join(hwcaps, 'libur_loader.so.0'), 'planted');
  const deep = loadWith();
  t.false(deep.ran);
  t.is(deep.loader, null);
  t.regex(deep.diagnostics, /glibc-hwcaps\/x86-64-v2\/libur_loader\.so\.0 is a library in a sub-folder/);
  rmSync(path.join(lib, 'glibc-hwcaps'), { recursive: true });
  t.is(loadWith().loader, 'recorded', 'removed: the recorded library loads again');
});

// An adversarial review found the runtime's Unified Runtime loader opening the adapters it
// knows (cuda, hip, native_cpu, offload) by bare name: with an empty element in
// LD_LIBRARY_PATH, planted ones in the working directory ran. The addon now names the
// cache's adapters to the loader by absolute path (UR_ADAPTERS_FORCE_LOAD).
// Where the cached runtime serves the CPU device (without the runtime no UR loader runs, so
// there is nothing to check).
const hasCpu = createRequire(import.meta.url)(INDEX).getDevices().some((d) => d.filterString === 'opencl:cpu:0');
const withRuntime = cc.status === 0 && hasCpu ? test.serial : test.serial.skip;
const runtimeNote = compilerNote || (hasCpu ? '' : ' [no opencl:cpu device: skipped]');

withRuntime(`the runtime loads no UR adapter from the working directory (LD_LIBRARY_PATH with an empty element)${runtimeNote}`, (t) => {
  const work = tempDir(t);
  const names = ['libur_adapter_cuda.so.0', 'libur_adapter_hip.so.0', 'libur_adapter_native_cpu.so.0', 'libur_adapter_offload.so.0'];
  for (const name of names) t.true(compilePlanted(path.join(work, name)), name);
  const mark = path.join(work, 'ran');
  const script = `
    const { SyclQueue, MemoryUSMShared, getDevices } = require(${JSON.stringify(INDEX)});
    const memory = new MemoryUSMShared(64, { queue: new SyclQueue() });
    memory.free();
    process.stdout.write(JSON.stringify(getDevices().map((d) => d.filterString)));`;
  // The cache's default runtime, and its 2026 one named by a variable (where installed).
  const roots = [undefined];
  if (usable2026) roots.push(runtime2026);
  for (const root of roots) {
    const env = { ...process.env, LD_LIBRARY_PATH: '/nonexistent:', PLANTED_MARK: mark };
    delete env.UR_ADAPTERS_FORCE_LOAD;
    delete env.DPCTL_MEMORY_SYCL_ROOT;
    if (root) env.DPCTL_MEMORY_SYCL_ROOT = root;
    const child = spawnSync(process.execPath, ['-e', script], { cwd: work, env, encoding: 'utf8', timeout: 120_000 });
    const which = root ?? 'the default runtime';
    t.is(child.signal, null, `${which}: ${child.stderr}`);
    t.is(child.status, 0, `${which}: ${child.stderr}`);
    t.false(existsSync(mark), `${which}: a planted adapter ran`);
    t.true(JSON.parse(child.stdout).includes('opencl:cpu:0'), `${which}: the cache's own OpenCL adapter still serves the CPU device`);
  }
});
