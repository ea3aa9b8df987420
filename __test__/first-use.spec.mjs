// What a new user meets when no device is found, each case in a fresh process (the device
// list is made once per process): no runtime installed, and a selector that names no device
// here. The errors say what to do in a consumer project, and speak of CUDA only where an
// NVIDIA driver library is present.
import test from 'ava';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PROBE = `
const dm = require(${JSON.stringify(ROOT)});
let message = null;
try { new dm.SyclQueue(); } catch (error) { message = error.constructor.name + ': ' + error.message; }
console.log(JSON.stringify({ devices: dm.getDevices().length, message, diagnostics: dm.getRuntimeDiagnostics() }));
`;

function probe(env) {
  return JSON.parse(execFileSync(process.execPath, ['-e', PROBE], { env, encoding: 'utf8' }).trim().split('\n').pop());
}

function withoutRuntimeVars(extra) {
  const env = { ...process.env };
  for (const name of ['DPCTL_MEMORY_SYCL_ROOT', 'SYCL_ROOT', 'CMPLR_ROOT', 'ONEAPI_ROOT', 'ONEAPI_DEVICE_SELECTOR']) delete env[name];
  return Object.assign(env, extra);
}

test('no runtime installed: the error names the command that works in a consumer project', (t) => {
  const empty = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-no-runtime-'));
  t.teardown(() => rmSync(empty, { recursive: true, force: true }));
  const out = probe(withoutRuntimeVars({ DPCTL_MEMORY_CACHE: empty }));
  if (out.devices > 0) {
    t.log('this machine has CUDA devices, which need no SYCL runtime: nothing to refuse');
    t.is(out.message, null);
    return;
  }
  t.regex(out.message, /^SyclQueueCreationError: No SYCL device is available\. SYCL: the SYCL runtime is not installed/);
  t.regex(out.message, /run `npx dpctl-memory-install-runtime` in your project/);
  t.notRegex(out.message, /Install the NVIDIA driver|libcuda\.so, libcuda/, 'no advice to install an NVIDIA driver, no list of library names');
  if (out.diagnostics.some((line) => /^CUDA: no NVIDIA driver here/.test(line))) {
    t.notRegex(out.message, /CUDA|NVIDIA/, 'no driver library here: the error does not speak of CUDA');
  }
});

test('a selector that names no device here is named in the error', (t) => {
  const out = probe(withoutRuntimeVars({ ONEAPI_DEVICE_SELECTOR: 'level_zero:gpu' }));
  if (out.devices > 0) {
    t.log('this machine has a Level Zero GPU: the selector hides nothing');
    t.is(out.message, null);
    return;
  }
  t.regex(out.message, /ONEAPI_DEVICE_SELECTOR='level_zero:gpu' is set and may filter out every device: unset it/);
  t.notRegex(out.message, /Install the NVIDIA driver/);
});

test('npx dpctl-memory-install-runtime --help prints help and installs nothing', (t) => {
  const empty = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-help-'));
  t.teardown(() => rmSync(empty, { recursive: true, force: true }));
  const installer = path.join(ROOT, 'scripts', 'install-runtime.js');
  // An empty cache: were --help taken for an install, pip would start filling it.
  const env = withoutRuntimeVars({ DPCTL_MEMORY_CACHE: empty, PYTHON: '/nonexistent/python' });
  for (const flag of ['--help', '-h']) {
    const help = spawnSync(process.execPath, [installer, flag], { env, encoding: 'utf8' });
    t.is(help.status, 0, help.stderr);
    t.regex(help.stdout, /^Usage: npx dpctl-memory-install-runtime/);
    t.true(help.stdout.includes(path.join(empty, 'sycl-runtime-')), 'it says where the runtime would go');
  }
  t.deepEqual(readdirSync(empty), [], 'nothing was installed');
  const unknown = spawnSync(process.execPath, [installer, '--bogus'], { env, encoding: 'utf8' });
  t.is(unknown.status, 2);
  t.regex(unknown.stderr, /unknown argument '--bogus'/);
  t.deepEqual(readdirSync(empty), []);
});
