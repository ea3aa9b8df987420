// Adversarial round 7: the two SYCL ABIs (DPC++ 2025's libsycl.so.8, 2026's .so.9), SYCL-source
// programs (createProgramFromSycl), SyclDevice.canCompile, byte patterns of queue.fill and
// `install-runtime.js --sycl`. Each finding is a regression test of its fix; test.failing marks
// the two left open (a libsycl whose SONAME is not its file name; an nd_range kernel's
// dimensions, which the runtime does not report); a plain test also pins what held up. Anything that can crash runs in
// a child process, whose exit status and output are asserted.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT, INDEX, ROOT_VARS, default2025, runtime2026, installed2025, shim2025, usable2026 } from './helpers/sycl-runtimes.mjs';

const require = createRequire(import.meta.url);
const has2025 = installed2025 && shim2025;
const has2026 = usable2026;
const skipNote = (ok, what) => (ok ? '' : ` [${what} is not installed: skipped]`);
const n2025 = skipNote(has2025, 'the default SYCL runtime');
const n2026 = skipNote(has2026, 'the SYCL 2026 runtime or its shim');
const n2 = skipNote(has2025 && has2026, 'one of the two SYCL runtimes');
const pick = (ok, kind = test) => (ok ? kind : test.skip);

/** Runs `script` (index.js is `m`) in a child with the runtime variables cleared, then `env`. */
function child(script, env = {}, args = []) {
  const childEnv = { ...process.env };
  for (const name of [...ROOT_VARS, 'DPCTL_MEMORY_SHIM', 'ONEAPI_DEVICE_SELECTOR', 'LD_LIBRARY_PATH']) delete childEnv[name];
  const code = `const m = require(${JSON.stringify(INDEX)});\n${script}`;
  return spawnSync(process.execPath, [...args, '-e', code], { env: { ...childEnv, ...env }, encoding: 'utf8', timeout: 300_000 });
}

/** The libsycl / shim files a child reports as loaded (it prints MAPS=<json> last). */
const MAPS = `const maps = require('node:fs').readFileSync('/proc/self/maps', 'utf8');
  console.log('MAPS=' + JSON.stringify([...new Set(maps.split('\\n').map((l) => l.split(/\\s+/)[5]).filter((f) => f && /libsycl\\.so|dpctl_memory_shim/.test(f)))].map((f) => require('node:path').basename(f)).sort()));`;
const loadedOf = (stdout) => JSON.parse(/MAPS=(.*)/.exec(stdout)?.[1] ?? 'null');
const TRY_DEVICE = `try { const q = new m.SyclQueue('opencl:cpu'); new m.MemoryUSMShared(64, { queue: q }); console.log('DEVICE=ok'); }
  catch (e) { console.log('DEVICE=' + e.code + ' ' + e.message.replace(/\\n/g, ' ')); }`;

// A free-function SYCL kernel (the kernel_compiler extension's form).
const SYCL_SOURCE = `#include <sycl/sycl.hpp>
namespace syclext = sycl::ext::oneapi::experimental;
extern "C" SYCL_EXTERNAL SYCL_EXT_ONEAPI_FUNCTION_PROPERTY((syclext::single_task_kernel))
void one(int *p) { p[0] = 41 + 1; }
`;
const ON_2026 = { DPCTL_MEMORY_SYCL_ROOT: runtime2026 };

// ---------------------------------------------------------------------------------------
// High
// ---------------------------------------------------------------------------------------

pick(has2026, test)(`process.exit while a SYCL-source program is alive exits cleanly, not SIGSEGV in ProgramManager::removeImages${n2026}`, (t) => {
  // state::at_exit (an atexit handler) frees the kernel bundle after libsycl's own static
  // destructors ran; uncaught exceptions and unhandled rejections take the same path.
  for (const end of ['process.exit(0)', "throw new Error('the end')"]) {
    const out = child(`globalThis.p = m.createProgramFromSycl(new m.SyclQueue('opencl:cpu'), ${JSON.stringify(SYCL_SOURCE)}); console.log('built'); ${end};`, ON_2026);
    t.is(out.stdout.trim(), 'built', out.stderr);
    t.is(out.signal, null, `${end}: ${out.stderr.slice(-300)}`);
    t.is(out.status, end.startsWith('process') ? 0 : 1, `${end}: ${out.stderr.slice(-300)}`);
  }
});

// ---------------------------------------------------------------------------------------
// Medium
// ---------------------------------------------------------------------------------------

test('createProgramFromSycl: a sparse registeredNames/headers array of length 2**32-1 is a coded RangeError (too many entries), not an out-of-memory abort', (t) => {
  // stringList/headerLists snapshot every element before checking any; no runtime is needed
  // (the check is lib/'s). A small heap makes the abort quick.
  for (const options of ['{ registeredNames: new Array(2 ** 32 - 1) }', '{ headers: new Array(2 ** 32 - 1) }']) {
    const out = child(`try { m.createProgramFromSycl(new m.SyclQueue('opencl:cpu'), 'x', ${options}); console.log('no error'); }
      catch (e) { console.log('CODE=' + e.code + ' ' + e.name); }`, {}, ['--max-old-space-size=64']);
    t.is(out.signal, null, `${options}: ${out.stderr.slice(-200)}`);
    t.is(out.status, 0, `${options}: ${out.stderr.slice(-200)}`);
    t.regex(out.stdout, /CODE=ERR_INVALID_ARG_VALUE RangeError/, options);
  }
});

pick(has2026, test)(`a NUL in a SYCL source is an error, not a silent truncation (the OpenCL C path says 'has a NUL character')${n2026}`, (t) => {
  // Today the compiler sees only the text before the NUL: the kernel after it is silently gone.
  const out = child(`try { const p = m.createProgramFromSycl(new m.SyclQueue('opencl:cpu'), ${JSON.stringify(SYCL_SOURCE.replace('extern', '\0extern'))});
      console.log('built, one=' + p.hasKernel('one')); } catch (e) { console.log('CODE=' + e.code); }`, ON_2026);
  t.is(out.status, 0, out.stderr);
  t.regex(out.stdout, /CODE=ERR_[A-Z_]+/);
});

pick(has2025, test)(`DPCTL_MEMORY_SYCL_ROOT naming no runtime ends the search: SYCL_ROOT's runtime is not silently used instead${n2025}`, (t) => {
  // locate() only skips the cache once a variable named a root; the lower-priority variables
  // are still tried, against its own doc ("a variable that names a root ends the search").
  const out = child(`${TRY_DEVICE}\n${MAPS}`, { DPCTL_MEMORY_SYCL_ROOT: '/nonexistent/dpctl-memory-r7', SYCL_ROOT: default2025 });
  t.is(out.status, 0, out.stderr);
  t.regex(out.stdout, /DEVICE=ERR_\w+ .*\/nonexistent\/dpctl-memory-r7/);
  t.deepEqual(loadedOf(out.stdout), []);
});

pick(has2026, test)(`the cache's 2026 runtime, used only by being named in a variable, is trust-checked like the default cache${n2026}`, (t) => {
  // A 2026 cache whose lib/ is not what the install script recorded (here: symlinks, and a
  // file it never installed) loads today, as check_trusted skips every named root.
  const cache = mkdtempSync(path.join(tmpdir(), 'dpm-r7-cache-'));
  try {
    chmodSync(cache, 0o700);
    const dir = path.join(cache, path.basename(runtime2026));
    mkdirSync(path.join(dir, 'lib'), { recursive: true, mode: 0o700 });
    for (const entry of readdirSync(runtime2026)) if (entry !== 'lib') symlinkSync(path.join(runtime2026, entry), path.join(dir, entry));
    for (const entry of readdirSync(path.join(runtime2026, 'lib'))) symlinkSync(path.join(runtime2026, 'lib', entry), path.join(dir, 'lib', entry));
    writeFileSync(path.join(dir, 'lib', 'libplanted.so'), 'not recorded', { mode: 0o644 });
    const out = child(`${TRY_DEVICE}\n${MAPS}`, { DPCTL_MEMORY_CACHE: cache, DPCTL_MEMORY_SYCL_ROOT: dir });
    t.is(out.status, 0, out.stderr);
    t.regex(out.stdout, /DEVICE=ERR_\w+ .*(record|trust|libplanted)/);
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
});

pick(has2026, test)(`createProgramFromSycl options as an array keep each element one compiler argument, as dpctl's list does${n2026}`, (t) => {
  // build_sycl splits every option on whitespace: '-DMSG="ab cd"' reaches the compiler as
  // '-DMSG="ab' and 'cd"'.
  const source = SYCL_SOURCE.replace('41 + 1', 'sizeof(MSG)');
  const out = child(`const q = new m.SyclQueue('opencl:cpu');
    try { const p = m.createProgramFromSycl(q, ${JSON.stringify(source)}, { options: ['-DMSG="ab cd"'] });
      const mem = new m.MemoryUSMShared(64, { queue: q }); q.submit(p.getKernel('one'), [mem], [1]).wait();
      console.log('SIZE=' + new Int32Array(mem.buffer)[0]); } catch (e) { console.log('CODE=' + e.code); }`, ON_2026);
  t.is(out.status, 0, out.stderr);
  t.regex(out.stdout, /SIZE=6/);
});

pick(has2025 && has2026, test.failing)(`a root whose lib/libsycl.so.9 is really DPC++ 2025's is refused before two SYCL runtimes share the process${n2}`, (t) => {
  // The ABI is taken from the file name only. With the 2026 libs on LD_LIBRARY_PATH the 2026
  // shim then runs against 2025's libsycl.so.8 (loaded RTLD_GLOBAL first) and 2026's .so.9 at
  // once: today std::bad_alloc from mixed sycl::_V1 symbols, undefined behaviour in general.
  const root = mkdtempSync(path.join(tmpdir(), 'dpm-r7-fake9-'));
  try {
    mkdirSync(path.join(root, 'lib'));
    for (const entry of readdirSync(path.join(default2025, 'lib'))) symlinkSync(path.join(default2025, 'lib', entry), path.join(root, 'lib', entry));
    symlinkSync(path.join(default2025, 'lib', 'libsycl.so.8'), path.join(root, 'lib', 'libsycl.so.9'));
    const out = child(`${TRY_DEVICE}\n${MAPS}`, { DPCTL_MEMORY_SYCL_ROOT: root, LD_LIBRARY_PATH: path.join(runtime2026, 'lib') });
    t.is(out.status, 0, out.stderr);
    const loaded = loadedOf(out.stdout);
    t.false(loaded.includes('libsycl.so.8') && loaded.includes('libsycl.so.9'), `both runtimes loaded: ${loaded}`);
    t.regex(out.stdout, /DEVICE=ERR_\w+ .*(SONAME|libsycl\.so\.8)/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

// ---------------------------------------------------------------------------------------
// Low
// ---------------------------------------------------------------------------------------

pick(has2026, test.failing)(`an nd_range_kernel<1> SYCL-source kernel submitted over a 2-D range is refused, not run with wrong ids${n2026}`, (t) => {
  // Today it runs: get_nd_item<1>() in a 2-D launch gives ids 0..3 of 16 work-items, so 12 of
  // 16 outputs are never written (silently wrong). If the runtime cannot tell the declared
  // dimensions, record them at build (registered names / kernel properties) or document it.
  const source = SYCL_SOURCE.replace('single_task_kernel', 'nd_range_kernel<1>').replace('p[0] = 41 + 1;', 'size_t i = sycl::ext::oneapi::this_work_item::get_nd_item<1>().get_global_linear_id(); p[i] = 1;');
  const out = child(`const q = new m.SyclQueue('opencl:cpu'); const p = m.createProgramFromSycl(q, ${JSON.stringify(source)});
    const mem = new m.MemoryUSMShared(64, { queue: q }); new Int32Array(mem.buffer).fill(0);
    try { q.submit(p.getKernel('one'), [mem], [4, 4], [2, 2]).wait(); console.log('WRITTEN=' + new Int32Array(mem.buffer).reduce((a, b) => a + b)); }
    catch (e) { console.log('CODE=' + e.code); }`, ON_2026);
  t.is(out.status, 0, out.stderr);
  t.regex(out.stdout, /CODE=ERR_[A-Z_]+|WRITTEN=16/);
});

pick(has2026, test)(`SyclProgram.hasKernel/getKernel with a NUL in the name answer false / ERR_KERNEL_NOT_FOUND, not ERR_SYCL_RUNTIME${n2026}`, (t) => {
  const out = child(`const p = m.createProgramFromSycl(new m.SyclQueue('opencl:cpu'), ${JSON.stringify(SYCL_SOURCE)});
    try { console.log('HAS=' + p.hasKernel('one\\0')); } catch (e) { console.log('HAS=' + e.code); }
    try { p.getKernel('one\\0x'); console.log('GET=none'); } catch (e) { console.log('GET=' + e.code); }`, ON_2026);
  t.is(out.status, 0, out.stderr);
  t.regex(out.stdout, /HAS=false/);
  t.regex(out.stdout, /GET=ERR_KERNEL_NOT_FOUND/);
});

test('install-runtime --sycl=constructor (an Object.prototype name) is refused as an unknown runtime, like --sycl=2025', (t) => {
  // `sycl in RUNTIMES` is true for inherited names: the install starts, makes a staging
  // folder, and dies with "Cannot read properties of undefined (reading 'map')".
  const cache = mkdtempSync(path.join(tmpdir(), 'dpm-r7-install-'));
  try {
    for (const name of ['constructor', '__proto__', 'toString']) {
      const out = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'install-runtime.js'), `--sycl=${name}`], {
        env: { ...process.env, DPCTL_MEMORY_CACHE: cache, PATH: '/usr/bin:/bin' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      t.is(out.status, 2, `${name}: ${out.stdout}${out.stderr}`);
      t.regex(out.stderr, /unknown SYCL runtime/, name);
    }
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
});

pick(has2026, test)(`createProgramFromSycl: a NUL in a header name, header, registered name or option is an argument error, not ERR_SYCL_RUNTIME${n2026}`, (t) => {
  const out = child(`const q = new m.SyclQueue('opencl:cpu'); const src = ${JSON.stringify(SYCL_SOURCE)};
    for (const o of [{ headers: { 'a\\0.h': 'x' } }, { headers: { 'a.h': 'x\\0' } }, { registeredNames: ['one\\0'] }, { options: '-DA\\0' }]) {
      try { m.createProgramFromSycl(q, src, o); console.log('CODE=none'); } catch (e) { console.log('CODE=' + e.code); } }`, ON_2026);
  t.is(out.status, 0, out.stderr);
  const codes = [...out.stdout.matchAll(/CODE=(\S+)/g)].map((m) => m[1]);
  t.deepEqual(codes, Array(4).fill('ERR_INVALID_ARG_VALUE'));
});

test('createProgramFromSycl: a headers Proxy revoked while its keys are read is a coded error', (t) => {
  // lib/'s check runs before the runtime's, so this holds on either runtime.
  const out = child(`let revoke; const h = Proxy.revocable({ 'a.h': 'int a;' }, { ownKeys(target) { revoke(); return Reflect.ownKeys(target); } });
    revoke = h.revoke;
    try { m.createProgramFromSycl(new m.SyclQueue('opencl:cpu'), 'x', { headers: h.proxy }); console.log('CODE=none'); } catch (e) { console.log('CODE=' + e.code); }`);
  t.is(out.status, 0, out.stderr);
  t.regex(out.stdout, /CODE=ERR_[A-Z_]+/);
});

pick(has2025, test)(`queue.fill reads a byte pattern's length and offset from the view itself, not from own getters (or says so with a code)${n2025}`, (t) => {
  const out = child(`const q = new m.SyclQueue('opencl:cpu'); const mem = new m.MemoryUSMShared(64, { queue: q });
    const view = new Uint32Array(2); Object.defineProperty(view, 'byteOffset', { get: () => 6 }); Object.defineProperty(view, 'byteLength', { get: () => 4 });
    try { q.fill(mem, view, 1).wait(); console.log('CODE=none'); } catch (e) { console.log('CODE=' + e.code + ' ' + e.message); }`);
  t.is(out.status, 0, out.stderr);
  t.regex(out.stdout, /CODE=(none|ERR_[A-Z_]+)/);
});

// ---------------------------------------------------------------------------------------
// Held up (pinned so they stay so)
// ---------------------------------------------------------------------------------------

pick(has2025 && has2026)(`a 2026 root with DPCTL_MEMORY_SHIM at the 2025 shim (and the reverse) is a coded error naming the shim, not a crash${n2}`, (t) => {
  for (const [env, shim] of [[ON_2026, 'dpctl_memory_shim.so'], [{}, 'dpctl_memory_shim_sycl9.so']]) {
    const out = child(`${TRY_DEVICE}\n${MAPS}`, { ...env, DPCTL_MEMORY_SHIM: path.join(ROOT, shim) });
    t.is(out.status, 0, out.stderr);
    t.regex(out.stdout, new RegExp(`DEVICE=ERR_\\w+ .*could not load the SYCL shim .*${shim.replace('.', '\\.')}`));
    t.false(loadedOf(out.stdout).includes(shim));
  }
});

test(`an empty, garbage or 2025-in-disguise lib/libsycl.so.9 under a named root is a coded error naming that root${n2025}`, (t) => {
  const roots = [];
  try {
    for (const make of [(lib) => writeFileSync(path.join(lib, 'libsycl.so.9'), ''), (lib) => writeFileSync(path.join(lib, 'libsycl.so.9'), 'garbage '.repeat(512)),
      (lib) => has2025 && symlinkSync(path.join(default2025, 'lib', 'libsycl.so.8'), path.join(lib, 'libsycl.so.9'))]) {
      const root = mkdtempSync(path.join(tmpdir(), 'dpm-r7-root-'));
      roots.push(root);
      mkdirSync(path.join(root, 'lib'));
      make(path.join(root, 'lib'));
      if (!existsSync(path.join(root, 'lib', 'libsycl.so.9'))) continue;
      const out = child(`${TRY_DEVICE}\n${MAPS}`, { DPCTL_MEMORY_SYCL_ROOT: root });
      t.is(out.status, 0, out.stderr);
      t.true(out.stdout.includes(`DEVICE=ERR_`) && out.stdout.includes(root), out.stdout);
    }
  } finally {
    for (const root of roots) rmSync(root, { recursive: true, force: true });
  }
});

pick(has2025)(`on the 2025 runtime createProgramFromSycl is ERR_PROGRAMS_UNSUPPORTED, also with hostile headers, and canCompile('sycl') agrees; bad arguments are refused first${n2025}`, (t) => {
  const out = child(`const q = new m.SyclQueue('opencl:cpu'); console.log('CAN=' + q.syclDevice.canCompile('sycl'));
    for (const [src, o] of [['x', {}], ['x', { headers: JSON.parse('{"__proto__":"x"}') }], ['x\\0y', {}], ['x', { headers: { 'a\\0': 'b' } }], ['x', { registeredNames: ['x\\0'] }]]) {
      try { m.createProgramFromSycl(q, src, o); console.log('CODE=none'); } catch (e) { console.log('CODE=' + e.code); } }`);
  t.is(out.status, 0, out.stderr);
  t.regex(out.stdout, /CAN=false/);
  t.deepEqual([...out.stdout.matchAll(/CODE=(\S+)/g)].map((m) => m[1]), ['ERR_PROGRAMS_UNSUPPORTED', 'ERR_PROGRAMS_UNSUPPORTED', 'ERR_PROGRAM_COMPILATION', 'ERR_INVALID_ARG_VALUE', 'ERR_INVALID_ARG_VALUE']);
});

pick(has2025)(`queue.fill byte patterns: BigInt64Array, a DataView with byteOffset, detached and out-of-bounds views, count overflow${n2025}`, (t) => {
  const out = child(`const q = new m.SyclQueue('opencl:cpu'); const mem = new m.MemoryUSMShared(64, { queue: q }); const r = [];
    const code = (f) => { try { f(); return 'none'; } catch (e) { return e.code; } };
    q.fill(mem, new BigInt64Array([-2n]), 8).wait(); r.push(String(new BigInt64Array(mem.buffer)[7]));
    const dv = new DataView(new ArrayBuffer(16), 4, 4); dv.setUint32(0, 0xdeadbeef, true); q.fill(mem, dv, 16).wait(); r.push(new Uint32Array(mem.buffer)[15].toString(16));
    const ab = new ArrayBuffer(8); const u = new Uint32Array(ab); structuredClone(ab, { transfer: [ab] }); r.push(code(() => q.fill(mem, u, 2)));
    const rab = new ArrayBuffer(16, { maxByteLength: 64 }); const oob = new Uint32Array(rab, 8, 2); rab.resize(8); r.push(code(() => q.fill(mem, oob, 2)));
    r.push(code(() => q.fill(mem, new Uint8Array(16), 2 ** 53 - 1)), code(() => q.fill(mem, new Uint8Array(3), 1)));
    console.log('R=' + JSON.stringify(r));`);
  t.is(out.status, 0, out.stderr);
  t.deepEqual(JSON.parse(/R=(.*)/.exec(out.stdout)[1]), ['-2', 'deadbeef', 'ERR_INVALID_ARG_VALUE', 'ERR_INVALID_ARG_VALUE', 'ERR_INVALID_RANGE', 'ERR_INVALID_ARG_VALUE']);
});

pick(has2026)(`install-runtime --sycl 2026 refuses a tampered 2026 cache (symlinked files, a planted library) as it does the default's${n2026}`, (t) => {
  const cache = mkdtempSync(path.join(tmpdir(), 'dpm-r7-install26-'));
  try {
    chmodSync(cache, 0o700);
    const script = `const fs = require('node:fs'); const path = require('node:path');
      const ir = require(${JSON.stringify(path.join(ROOT, 'scripts', 'install-runtime.js'))}); const real = ${JSON.stringify(runtime2026)};
      const dir = ir.runtimeDir(ir.RUNTIMES[2026]); fs.mkdirSync(path.join(dir, 'lib'), { recursive: true, mode: 0o700 });
      for (const e of fs.readdirSync(real)) if (e !== 'lib') fs.symlinkSync(path.join(real, e), path.join(dir, e));
      for (const e of fs.readdirSync(path.join(real, 'lib'))) fs.symlinkSync(path.join(real, 'lib', e), path.join(dir, 'lib', e));
      fs.writeFileSync(path.join(dir, 'lib', 'libplanted.so'), 'x');
      console.log('COMPLETE=' + ir.isComplete(dir, ir.RUNTIMES[2026]));
      ir.install({ sycl: '2026', quiet: true }).then(() => console.log('ACCEPTED'), (e) => console.log('REFUSED ' + e.message.replace(/\\n/g, ' ')));`;
    const out = spawnSync(process.execPath, ['-e', script], { env: { ...process.env, DPCTL_MEMORY_CACHE: cache, PATH: '/usr/bin:/bin' }, encoding: 'utf8', timeout: 120_000 });
    t.is(out.status, 0, out.stderr);
    t.regex(out.stdout, /COMPLETE=true/);
    t.regex(out.stdout, /REFUSED .*not trusted/);
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
});
