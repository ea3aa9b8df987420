// The SYCL runtime a variable names is the one used (issue 42): DPC++ 2025's libsycl.so.8
// and 2026's .so.9 each through the shim built for it, and a named root that cannot be used
// is an error that names it and why, never a silent fall back to the cache's runtime. Each
// case runs in a child process (the runtime is loaded once per process); what it loaded is
// read from /proc/self/maps.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT, INDEX, ROOT_VARS, default2025, runtime2026, installed2025, usable2026 } from './helpers/sycl-runtimes.mjs';

const require = createRequire(import.meta.url);
const has2025 = installed2025;
const has2026 = usable2026;
const with2025 = has2025 ? test : test.skip;
const with2026 = has2026 ? test : test.skip;
const note2025 = has2025 ? '' : ' [the default SYCL runtime is not installed: skipped]';
const note2026 = has2026 ? '' : ' [the SYCL 2026 runtime or its shim is not installed (npm test installs both): skipped]';

/** Runs `index` in a child with `env` (the runtime variables cleared first); returns its report. */
function probe(t, env, index = INDEX) {
  const script = `
    const m = require(${JSON.stringify(index)});
    const out = { devices: m.getDevices().map((d) => d.filterString), diagnostics: m.getRuntimeDiagnostics() };
    try {
      const q = new m.SyclQueue('opencl:cpu');
      const memory = new m.MemoryUSMShared(64, { queue: q });
      new Uint8Array(memory.buffer).fill(7);
      const device = new m.MemoryUSMDevice(64, { queue: q });
      device.copyFromDevice(memory);
      out.copied = device.copyToHost()[63];
      out.driver = q.syclDevice.driverVersion;
    } catch (error) {
      out.error = { code: error.code, name: error.name, message: error.message };
    }
    const maps = require('node:fs').readFileSync('/proc/self/maps', 'utf8');
    out.loaded = [...new Set(maps.split('\\n').map((l) => l.split(/\\s+/)[5]).filter((f) => f && /libsycl\\.so|dpctl_memory_shim/.test(f)))];
    process.stdout.write(JSON.stringify(out));`;
  const childEnv = { ...process.env };
  for (const name of [...ROOT_VARS, 'DPCTL_MEMORY_SHIM', 'ONEAPI_DEVICE_SELECTOR']) delete childEnv[name];
  const child = spawnSync(process.execPath, ['-e', script], { env: { ...childEnv, ...env }, encoding: 'utf8', timeout: 120_000 });
  t.is(child.status, 0, child.stderr);
  return JSON.parse(child.stdout);
}

with2026(`a 2026 runtime named by DPCTL_MEMORY_SYCL_ROOT, ONEAPI_ROOT or CMPLR_ROOT is the one used, through the SYCL 2026 shim${note2026}`, (t) => {
  for (const name of ['DPCTL_MEMORY_SYCL_ROOT', 'ONEAPI_ROOT', 'CMPLR_ROOT']) {
    const out = probe(t, { [name]: runtime2026 });
    t.falsy(out.error, `${name}: ${out.error?.message}`);
    t.is(out.copied, 7, `${name}: the copy through the 2026 runtime`);
    t.deepEqual(out.loaded.map((f) => path.basename(f)).sort(), ['dpctl_memory_shim_sycl9.so', 'libsycl.so.9'].sort(), `${name}: ${out.loaded}`);
    t.true(out.loaded.some((f) => f.startsWith(runtime2026)), `${name}: libsycl from the named folder`);
    t.false(out.loaded.some((f) => f.startsWith(default2025)), `${name}: nothing of the cache's 2025 runtime`);
    t.regex(out.driver, /^2026\./, `${name}: the OpenCL CPU driver of 2026`);
  }
});

with2025(`the default runtime (2025) still runs through its own shim when nothing is named${note2025}`, (t) => {
  const out = probe(t, {});
  t.falsy(out.error, out.error?.message);
  t.is(out.copied, 7);
  t.deepEqual(out.loaded.map((f) => path.basename(f)).sort(), ['dpctl_memory_shim.so', 'libsycl.so.8'].sort());
});

with2025(`a named root with no usable runtime is an error that names it and why, and the cache's runtime is not loaded${note2025}`, (t) => {
  const work = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-abi-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  // Nothing at all; then a libsycl of an ABI this addon does not know.
  const empty = path.join(work, 'empty');
  mkdirSync(empty);
  const future = path.join(work, 'future');
  mkdirSync(path.join(future, 'lib'), { recursive: true });
  writeFileSync(path.join(future, 'lib', 'libsycl.so.10'), '');
  for (const [root, why] of [[empty, /no lib\/libsycl\.so\.<N> \(this addon knows libsycl\.so\.8 \(DPC\+\+ 2025\), libsycl\.so\.9 \(DPC\+\+ 2026\)\)/], [future, /libsycl\.so\.10 only: an ABI this addon does not know/]]) {
    const out = probe(t, { ONEAPI_ROOT: root });
    t.deepEqual(out.devices, [], 'no device: the named runtime cannot be used');
    t.deepEqual(out.loaded, [], 'no libsycl and no shim were loaded: not the cache\'s either');
    t.is(out.error?.code, 'ERR_QUEUE_CREATION');
    const said = out.diagnostics.join('\n');
    t.true(said.includes(root), `the diagnostics name the folder: ${said}`);
    t.regex(said, why);
    t.regex(said, /nothing else was searched \(the other variables, the per-user cache\): ONEAPI_ROOT names the runtime to use/);
  }
});

with2026(`a 2026 runtime without its shim beside the addon is an error naming the shim${note2026}`, (t) => {
  const copy = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-abi-copy-'));
  t.teardown(() => rmSync(copy, { recursive: true, force: true }));
  const nodeFile = `${require('../package.json').napi.binaryName}.linux-x64-gnu.node`;
  for (const file of ['index.js', 'package.json', nodeFile, 'dpctl_memory_shim.so']) copyFileSync(path.join(ROOT, file), path.join(copy, file));
  cpSync(path.join(ROOT, 'lib'), path.join(copy, 'lib'), { recursive: true });
  const out = probe(t, { DPCTL_MEMORY_SYCL_ROOT: runtime2026 }, path.join(copy, 'index.js'));
  t.is(out.error?.code, 'ERR_QUEUE_CREATION');
  t.regex(out.diagnostics.join('\n'), /\(libsycl\.so\.9, found via DPCTL_MEMORY_SYCL_ROOT\) needs the addon's SYCL shim dpctl_memory_shim_sycl9\.so, which is missing/);
  t.false(out.loaded.some((f) => f.endsWith('dpctl_memory_shim.so')), 'the 2025 shim is not loaded against the 2026 runtime');
});
