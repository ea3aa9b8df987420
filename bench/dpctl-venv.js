// Lazily creates (once per user) the Python virtual environment that holds the dpctl peer:
// dpctl from PyPI, pinned to the SYCL runtime the addon uses. Returns { python, env } to run
// the peer with, or { error } saying why the peer is missing. Never throws.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const MARKER = '.dpctl-memory-bench-complete';

function cacheRoot() {
  if (process.env.DPCTL_MEMORY_CACHE) return process.env.DPCTL_MEMORY_CACHE;
  const xdg = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(xdg, 'dpctl-memory');
}

function markerText(spec) {
  return `${spec.requirements.join('\n')}\n`;
}

function isComplete(dir, spec) {
  try {
    return fs.readFileSync(path.join(dir, MARKER), 'utf8') === markerText(spec);
  } catch {
    return false;
  }
}

function basePython() {
  for (const exe of [process.env.PYTHON, 'python3', 'python'].filter(Boolean)) {
    const probe = spawnSync(exe, ['-c', 'import venv, sys; print(sys.version_info[0])'], { encoding: 'utf8' });
    if (probe.status === 0 && probe.stdout.trim() === '3') return exe;
  }
  return null;
}

function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...opts });
  const out = `${r.stdout || ''}${r.stderr || ''}`.trim();
  if (r.error) return { ok: false, out: `${r.error.message}` };
  return { ok: r.status === 0, out, status: r.status };
}

/** Finds libintelocl.so (the OpenCL CPU device) under the venv's prefix. */
function findIntelOcl(venv) {
  const lib = path.join(venv, 'lib');
  const direct = path.join(lib, 'libintelocl.so');
  if (fs.existsSync(direct)) return direct;
  const stack = [lib];
  while (stack.length) {
    const dir = stack.pop();
    let entries;
    try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { continue; }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.isFile() && e.name === 'libintelocl.so') return p;
      if (e.isDirectory() && !e.isSymbolicLink()) stack.push(p);
    }
  }
  return null;
}

function peerEnv(venv) {
  const env = { ...process.env };
  const ocl = findIntelOcl(venv);
  if (ocl) env.OCL_ICD_FILENAMES = env.OCL_ICD_FILENAMES ? `${ocl}:${env.OCL_ICD_FILENAMES}` : ocl;
  // The wheels' libraries live in <venv>/lib; dpctl's extension finds them by rpath, the
  // adapters by libsycl's own search. Make the loader's life easy either way.
  const lib = path.join(venv, 'lib');
  env.LD_LIBRARY_PATH = env.LD_LIBRARY_PATH ? `${lib}:${env.LD_LIBRARY_PATH}` : lib;
  // The peer must see exactly the device ours uses.
  delete env.ONEAPI_DEVICE_SELECTOR;
  env.PYTHONUNBUFFERED = '1';
  return { env, ocl };
}

/** Checks the venv: dpctl imports, has the wanted version, sees the runtime we pinned and a CPU device. */
function verify(venv, spec) {
  const python = path.join(venv, 'bin', 'python');
  const { env, ocl } = peerEnv(venv);
  if (!ocl) return { error: `libintelocl.so not found under ${path.join(venv, 'lib')}` };
  const code = [
    'import json, importlib.metadata as md, dpctl',
    'print(json.dumps({"dpctl": dpctl.__version__,',
    ' "sycl_rt": md.version("intel-sycl-rt"),',
    ' "devices": [d.filter_string for d in dpctl.get_devices()]}))',
  ].join('\n');
  const r = sh(python, ['-c', code], { env });
  if (!r.ok) return { error: `dpctl does not import in ${venv}: ${r.out.split('\n').slice(-3).join(' | ')}` };
  let info;
  try { info = JSON.parse(r.out.split('\n').pop()); } catch { return { error: `unexpected output: ${r.out}` }; }
  if (!info.dpctl.startsWith(spec.version)) return { error: `dpctl is ${info.dpctl}, wanted ${spec.version}` };
  if (info.sycl_rt !== spec.runtimeVersion) return { error: `dpctl's venv has intel-sycl-rt ${info.sycl_rt}, wanted ${spec.runtimeVersion}` };
  if (!info.devices.some((d) => d.startsWith('opencl:cpu'))) return { error: `dpctl sees no opencl:cpu device (sees ${info.devices.join(', ') || 'none'})` };
  return { python, env, info };
}

function setupDpctl(spec, log = console.log) {
  try {
    const root = cacheRoot();
    const venv = path.join(root, `bench-venv-dpctl-${spec.version}`);
    if (isComplete(venv, spec)) return verify(venv, spec);
    const base = basePython();
    if (!base) return { error: 'no python3 with the venv module' };
    fs.mkdirSync(root, { recursive: true });
    const staging = fs.mkdtempSync(path.join(root, `.staging-bench-venv-dpctl-${spec.version}-`));
    log(`bench: installing the dpctl peer (${spec.requirements.join(' ')}) into ${venv} (once)`);
    const fail = (msg) => { fs.rmSync(staging, { recursive: true, force: true }); return { error: msg }; };
    let r = sh(base, ['-m', 'venv', staging]);
    if (!r.ok) return fail(`python -m venv failed: ${r.out}`);
    const py = path.join(staging, 'bin', 'python');
    r = sh(py, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-compile',
      '--no-warn-script-location', ...spec.requirements]);
    if (!r.ok) return fail(`pip install failed (exit ${r.status}): ${r.out.split('\n').slice(-5).join(' | ')}`);
    // A venv works from a new place when run through <venv>/bin/python (only its scripts'
    // shebangs keep the old path, and none is used), so install in staging and rename.
    fs.writeFileSync(path.join(staging, MARKER), markerText(spec));
    if (fs.existsSync(venv)) fs.rmSync(venv, { recursive: true, force: true });
    try {
      fs.renameSync(staging, venv);
    } catch (err) {
      fs.rmSync(staging, { recursive: true, force: true });
      if (!isComplete(venv, spec)) return { error: `could not move the venv into place: ${err.message}` };
    }
    return verify(venv, spec);
  } catch (err) {
    return { error: `dpctl peer setup failed: ${err.message}` };
  }
}

module.exports = { setupDpctl, cacheRoot };

if (require.main === module) {
  const r = setupDpctl(require('./config').cpu.dpctl);
  console.log(r.error ? `error: ${r.error}` : `ok: ${r.python} ${JSON.stringify(r.info)}`);
}
