#!/usr/bin/env node
// Runs every test: the Rust lints (rustfmt, clippy, rustdoc's link check), the cargo tests
// of the Rust model and providers, the type check of lib/ against the binding's
// declarations (tsc), then the ava suite, then the ava suite again under each other Node
// version of runtime.json (`nodeMatrix`), streaming each runner's output as it comes. Ends
// with one line "N passed, N failed, N skipped" that counts them all (each lint counts as one test),
// after the name of every test that failed and every runner that broke, so that a failure
// is found at the end, not somewhere in a thousand lines.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');

const root = path.resolve(__dirname, '..');
const totals = { passed: 0, failed: 0, skipped: 0 };
let broken = false;
/** What failed, named for the closing summary: `cargo <binary>: <test>`, `ava <file> › <title>`. */
const failures = [];

// After this long without a line from a runner (cargo compiling one large crate says
// nothing for minutes off a terminal), a line says it is still at work.
const QUIET_MS = 15000;

/** Runs a command, echoing its output line by line and handing each line to `onLine`. */
function stream(command, args, onLine, env = process.env) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const started = Date.now();
    let lastLine = started;
    const heartbeat = setInterval(() => {
      if (Date.now() - lastLine < QUIET_MS) return;
      lastLine = Date.now();
      console.log(`(${path.basename(command)} ${path.basename(args[0])} still running, ${((lastLine - started) / 1000).toFixed(0)} s)`);
    }, 1000);
    const follow = (input, output) => readline.createInterface({ input }).on('line', (line) => {
      lastLine = Date.now();
      output.write(`${line}\n`);
      onLine(line);
    });
    follow(child.stdout, process.stdout);
    follow(child.stderr, process.stderr);
    const done = (status) => {
      clearInterval(heartbeat);
      resolve(status);
    };
    child.on('error', () => done(1));
    child.on('close', (status) => done(status));
  });
}

async function cargo() {
  let counted = false;
  let binary = '';
  const status = await stream('cargo', ['test', '--release'], (line) => {
    const running = /^\s*Running (\S+)/.exec(line);
    if (running) binary = running[1];
    const failed = /^test (.+) \.\.\. FAILED$/.exec(line);
    if (failed) failures.push(`cargo ${binary}: ${failed[1]}`);
    const m = /^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/.exec(line);
    if (m) {
      counted = true;
      totals.passed += Number(m[1]);
      totals.failed += Number(m[2]);
      totals.skipped += Number(m[3]);
    }
  });
  if (status !== 0 || !counted) {
    broken = true;
    if (!counted) failures.push(`cargo test did not run to its result (exit ${status}): see its output above`);
  }
}

/** A lint is one test: it passes when the command exits 0. */
async function lint(name, args, env = {}) {
  const status = await stream('cargo', args, () => {}, { ...process.env, ...env });
  if (status === 0) totals.passed += 1;
  else {
    totals.failed += 1;
    console.log(`lint failed: ${name} (cargo ${args.join(' ')})`);
    failures.push(`lint ${name}: \`cargo ${args.join(' ')}\``);
  }
}

/** `lib/*.js` type-checked against `lib/binding.d.ts` (`// @ts-check`): one test. */
async function typecheck() {
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const status = await stream(process.execPath, [tsc, '--noEmit', '-p', path.join('lib', 'tsconfig.json')], () => {});
  if (status === 0) totals.passed += 1;
  else {
    totals.failed += 1;
    console.log('lint failed: tsc (tsc --noEmit -p lib/tsconfig.json)');
    failures.push('lint tsc: `npx tsc --noEmit -p lib/tsconfig.json`');
  }
}

// Files named `*.alone.spec.mjs` measure what other processes move too (a device's free
// memory, which every test process's CUDA context takes from): they run after the rest,
// one file at a time, in an ava run of their own.
const ALONE = /\.alone\.spec\.mjs$/;

// The spec files of `__test__/` and its folders (what ava's `__test__/**/*.spec.mjs` names), sorted.
function specFiles() {
  const dir = path.join(root, '__test__');
  return fs
    .readdirSync(dir, { recursive: true })
    .filter((name) => name.endsWith('.spec.mjs'))
    .sort()
    .map((name) => path.join('__test__', name));
}

/** The ava suite: as the arguments say, or (given none) the whole suite in two runs. */
async function avaSuite() {
  const given = process.argv.slice(2);
  if (given.length > 0) return ava(given);
  const files = specFiles();
  await ava(files.filter((file) => !ALONE.test(file)));
  const alone = files.filter((file) => ALONE.test(file));
  if (alone.length > 0) await ava(['--concurrency=1', '--serial', ...alone]);
}

// What the other supported Node versions skip: files that test no JS surface of the
// library's own (the docs, the packages, the TypeScript declarations, the runtime
// installer), and the long fuzz, soak, report and UCX runs, which the Node running
// `npm test` runs in full. Everything else (the classes, lifetimes, workers, errors,
// kernels, IPC, the pool, observe) runs on each version.
const NOT_ON_EVERY_VERSION = new Set([
  'api-docs', 'docs', 'pack', 'publish', 'install-runtime', 'install-node', 'types', 'typescript-versions', 'consumer',
  'fuzz', 'soak', 'report', 'transport', 'otel-example', 'glibc', 'clients',
].map((name) => path.join('__test__', `${name}.spec.mjs`)));

/**
 * The ava suite under each other Node version of runtime.json's `node` (installed into the
 * cache on first use): the files that test the library's JS surface. Skipped when
 * DPCTL_MEMORY_NODE_MATRIX=0 or when the suite was given files.
 */
async function nodeMatrix() {
  if (process.argv.length > 2 || process.env.DPCTL_MEMORY_NODE_MATRIX === '0') return;
  const { installNode, NODE_VERSIONS } = require('./install-node.js');
  const files = specFiles().filter((file) => !ALONE.test(file) && !NOT_ON_EVERY_VERSION.has(file));
  for (const pinned of NODE_VERSIONS) {
    if (process.version === `v${pinned.version}`) continue;
    let binary;
    try {
      binary = await installNode(pinned);
    } catch (error) {
      console.log(error.message);
      broken = true;
      failures.push(`Node ${pinned.version}: could not be installed (${error.message})`);
      continue;
    }
    console.log(`\n# the suite under Node ${pinned.version} (${files.length} files)`);
    await ava(files, { node: binary, label: `Node ${pinned.version}: ` });
  }
}

// What the SYCL 2026 pass skips besides: the files about the default runtime's cache and
// its installer (they set the runtime's variables themselves).
const NOT_ON_SYCL_2026 = new Set(['runtime-trust', 'cache-trust', 'first-use', 'install-runtime', 'sycl-abi'].map((name) => path.join('__test__', `${name}.spec.mjs`)));

/**
 * The files of the Node matrix again on the SYCL 2026 runtime (libsycl.so.9, its own shim):
 * `runtime.json` `sycl2026`, which setup.js installs for `npm test`, named through
 * DPCTL_MEMORY_SYCL_ROOT. Skipped when DPCTL_MEMORY_SYCL_2026=0, when the suite was given
 * files, and (said) when that runtime or its shim is not there.
 */
async function sycl2026Pass() {
  if (process.argv.length > 2 || process.env.DPCTL_MEMORY_SYCL_2026 === '0') return;
  const { runtimeDir, isComplete, RUNTIMES } = require('./install-runtime.js');
  const dir = runtimeDir(RUNTIMES[2026]);
  const shim = path.join(root, 'dpctl_memory_shim_sycl9.so');
  if (!isComplete(dir, RUNTIMES[2026]) || !fs.existsSync(shim)) {
    broken = true;
    failures.push(`SYCL 2026: the pass could not run (${isComplete(dir, RUNTIMES[2026]) ? `no ${shim}` : `no runtime at ${dir}`}): run npm test again, or set DPCTL_MEMORY_SYCL_2026=0`);
    return;
  }
  const files = specFiles().filter((file) => !ALONE.test(file) && !NOT_ON_EVERY_VERSION.has(file) && !NOT_ON_SYCL_2026.has(file));
  console.log(`\n# the suite on the SYCL ${RUNTIMES[2026].version} runtime (${files.length} files)`);
  await ava(files, { label: `SYCL ${RUNTIMES[2026].version}: `, env: { ...process.env, DPCTL_MEMORY_SYCL_ROOT: dir } });
}

async function ava(given, { node = process.execPath, label = '', env = process.env } = {}) {
  const args = [path.join(root, 'node_modules', 'ava', 'entrypoints', 'cli.mjs'), '--tap', ...given];
  let counted = false;
  const status = await stream(node, args, (line) => {
    // TAP: `not ok 12 - memory › copyToHost into a short buffer`; a todo is not a failure.
    const failed = /^not ok \d+ - (.*)$/.exec(line);
    if (failed && !/# TODO\b/.test(failed[1])) failures.push(`${label}ava ${failed[1]}`);
    const m = /^# (pass|fail|skip|todo) (\d+)$/.exec(line);
    if (!m) return;
    counted = true;
    const n = Number(m[2]);
    if (m[1] === 'pass') totals.passed += n;
    else if (m[1] === 'fail') totals.failed += n;
    else totals.skipped += n;
  }, env);
  if (status !== 0 || !counted) {
    broken = true;
    if (!counted) failures.push(`${label}ava did not run to its result (exit ${status}): see its output above`);
  }
}

/** The closing summary: what failed, by name, then the one count line. */
function summary() {
  if (failures.length > 0) {
    console.log(`\n${failures.length === 1 ? 'This failed' : `These ${failures.length} failed`}:`);
    for (const failure of failures) console.log(`  ✘ ${failure}`);
    console.log('');
  }
  console.log(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
}

(async () => {
  if (!process.env.DPCTL_MEMORY_SKIP_CARGO) {
    await lint('rustfmt', ['fmt', '--check']);
    await lint('clippy', ['clippy', '--release', '--all-targets', '--', '-D', 'warnings']);
    // A doc comment's link to an item that is gone fails here.
    await lint('rustdoc links', ['doc', '--release', '--document-private-items', '--no-deps'], {
      RUSTDOCFLAGS: '-D rustdoc::broken_intra_doc_links',
    });
    await cargo();
  }
  await typecheck();
  await avaSuite();
  await nodeMatrix();
  await sycl2026Pass();
  summary();
  process.exit(broken || totals.failed > 0 ? 1 : 0);
})();
