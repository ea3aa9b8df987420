#!/usr/bin/env node
// Runs every test: the cargo tests of the Rust model and providers, then the ava suite.
// Ends with one line "N passed, N failed, N skipped" that counts both.
'use strict';
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.resolve(__dirname, '..');
const totals = { passed: 0, failed: 0, skipped: 0 };
let broken = false;

function stream(command, args, onLine) {
  const result = spawnSync(command, args, { cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'] });
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  for (const line of `${result.stdout}\n${result.stderr}`.split('\n')) onLine(line);
  return result.status;
}

function cargo() {
  let counted = false;
  const status = stream('cargo', ['test', '--release'], (line) => {
    const m = /^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/.exec(line);
    if (m) {
      counted = true;
      totals.passed += Number(m[1]);
      totals.failed += Number(m[2]);
      totals.skipped += Number(m[3]);
    }
  });
  if (status !== 0 || !counted) broken = true;
}

function ava() {
  const args = [path.join(root, 'node_modules', 'ava', 'entrypoints', 'cli.mjs'), '--tap', ...process.argv.slice(2)];
  let counted = false;
  const status = stream(process.execPath, args, (line) => {
    const m = /^# (pass|fail|skip|todo) (\d+)$/.exec(line);
    if (!m) return;
    counted = true;
    const n = Number(m[2]);
    if (m[1] === 'pass') totals.passed += n;
    else if (m[1] === 'fail') totals.failed += n;
    else totals.skipped += n;
  });
  if (status !== 0 || !counted) broken = true;
}

/** In CI the build has just regenerated index.d.ts: it must equal the committed one. */
function typingsCommitted() {
  if (process.env.CI !== 'true') return;
  const diff = spawnSync('git', ['diff', '--exit-code', '--stat', '--', 'index.d.ts', 'index.js'], { cwd: root, encoding: 'utf8' });
  if (diff.status === 0) {
    totals.passed += 1;
    console.log('ok - index.d.ts and index.js match the build');
  } else {
    totals.failed += 1;
    console.log(`not ok - index.d.ts or index.js differ from the build: regenerate and commit them\n${diff.stdout}`);
  }
}

typingsCommitted();
if (!process.env.DPCTL_MEMORY_SKIP_CARGO) cargo();
ava();
console.log(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(broken || totals.failed > 0 ? 1 : 0);
