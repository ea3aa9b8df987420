#!/usr/bin/env node
// Where an IPC export + open + close costs what it costs, ours beside CuPy's (a CUDA machine
// with CuPy, the addon built):
// - the four pairings of exporter and child (ours or CuPy's each), in alternating rounds,
//   over bench/ipc-pipe.js's FIFOs: microseconds a cycle;
// - for a handle each exporter made: the size of the mapping it opens to, and open + close
//   by the bare driver in a Python process (timed apart, alone, with 16 more threads that
//   have run, on one CPU), the runtime's calls (CuPy's) against the driver's in one process,
//   and the driver's open + close on each CPU in turn (the two levels a CPU's state sets,
//   which bench/ipc-interleaved.js measures around);
// - our exporter against CuPy's pair in alternating batches, with our child and with a
//   Node child making the bare driver's calls (alone, with the addon loaded, and with the
//   mapping's size asked after each open as ours asks it);
// - our own open + free in a Node child (alone, on one CPU, with V8's pool at one thread),
//   with that child's threads and mappings.
// Usage: node bench/ipc-pairs.js   (BENCH_PYTHON: the python3 with CuPy)
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { REQUEST, OPS, fifos, cycle, sendRequest } = require('./ipc-pipe');
const { measure } = require('./lib');
const { interleavedCycle, CHILDREN } = require('./ipc-interleaved');

const root = path.join(__dirname, '..');
const python = process.env.BENCH_PYTHON || 'python3';
const helper = path.join(__dirname, 'peers', 'ipc_pairs.py');
const FILTER = 'cuda:gpu:0';
// The bench's own timing (bench/config.js), for both sides: the Python helper reads it
// from IPC_PAIRS_TIMING.
const { timing } = require('./config');
const env = { ...process.env, IPC_PAIRS_TIMING: JSON.stringify(timing) };

/** Microseconds a call of `fn`, measured as every bench case is (`lib.measure`). */
const perCallUs = (fn) => measure(fn, timing).ns / 1e3;

/** The child command of a pairing, with the FIFOs' paths as `requests` and `answers`. */
function childCommand(kind, requests, answers) {
  return kind === 'ours'
    ? [process.execPath, path.join(__dirname, 'ipc-child.js'), requests, answers, FILTER, JSON.stringify(timing)]
    : [python, helper, 'child', requests, answers];
}

/** Microseconds a cycle with our exporter and a child of `kind`. */
function oursExporting(addon, kind) {
  const [folder, requests, answers] = fifos('dpctl-memory-ipc-pairs-');
  const [file, ...args] = childCommand(kind, requests, answers);
  const child = spawn(file, args, { stdio: 'inherit', env });
  const output = fs.openSync(requests, 'r+');
  const input = fs.openSync(answers, 'r');
  const memory = new addon.MemoryUSMDevice(1 << 20, { queue: new addon.SyclQueue(FILTER) });
  const request = Buffer.alloc(REQUEST);
  try {
    return perCallUs(() => cycle(output, input, request, new addon.IPCMemoryHandle(memory).toBytes(), 1 << 20));
  } finally {
    sendRequest(output, request, OPS.quit, new Uint8Array(64), 0);
    fs.closeSync(output);
    fs.closeSync(input);
    memory.free();
    fs.rmSync(folder, { recursive: true, force: true });
    if (child.exitCode === null) child.kill();
  }
}

/** Microseconds a cycle with CuPy's exporter and a child of `kind`. */
function cupyExporting(kind) {
  const r = spawnSync(python, [helper, 'parent', ...childCommand(kind, '{requests}', '{answers}')], { encoding: 'utf8', env });
  if (r.status !== 0) throw new Error(`CuPy's exporter: ${r.stderr.slice(-400)}`);
  return Number(r.stdout.trim());
}

/**
 * Mean microseconds of `open()` and of `close(opened)` over `cycles` alternating calls,
 * each cycle followed by `gapUs` of spinning (untimed): a message's time between cycles.
 */
function splitUs(open, close, cycles, gapUs = 0) {
  let opening = 0n;
  let closing = 0n;
  for (let i = 0; i < cycles; i++) {
    const t0 = process.hrtime.bigint();
    const opened = open();
    const t1 = process.hrtime.bigint();
    close(opened);
    const t2 = process.hrtime.bigint();
    closing += t2 - t1;
    opening += t1 - t0;
    while (process.hrtime.bigint() - t2 < BigInt(gapUs * 1000));
  }
  const round = (ns) => Math.round(Number(ns) / cycles / 10) / 100;
  return { openUs: round(opening), closeUs: round(closing) };
}

/** What the kernel says of this process: its threads, its mappings, its address space. */
function processShape() {
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  return {
    threads: fs.readdirSync('/proc/self/task').length,
    mappings: fs.readFileSync('/proc/self/maps', 'utf8').split('\n').length - 1,
    vmSizeKiB: Number(/VmSize:\s+(\d+)/.exec(status)?.[1]),
  };
}

function loopChild() {
  const addon = require(root);
  const queue = new addon.SyclQueue(FILTER);
  const handle = new Uint8Array(Buffer.from(process.argv[3], 'hex'));
  const open = () => addon.IPCMemoryHandle.open(handle, { queue, nbytes: 1 << 20 });
  const openFree = perCallUs(() => open().free());
  const rounds = [0, 1, 2].map(() => ({
    backToBack: splitUs(open, (m) => m.free(), 2000),
    gap15us: splitUs(open, (m) => m.free(), 2000, 15),
  }));
  process.stdout.write(JSON.stringify({ openFreeUs: openFree, rounds, ...processShape() }));
}

/** The probe and our Node child's loop, of a handle of ours. */
function probeOurs(addon) {
  const memory = new addon.MemoryUSMDevice(1 << 20, { queue: new addon.SyclQueue(FILTER) });
  try {
    const hex = Buffer.from(new addon.IPCMemoryHandle(memory).toBytes()).toString('hex');
    // Each also on one CPU (taskset): an unmap whose threads all ran there reaches no other core.
    const run = (command, oneCpu) =>
      parse(spawnSync(oneCpu ? 'taskset' : command[0], oneCpu ? ['-c', '1', ...command] : command.slice(1), { encoding: 'utf8', env }));
    const probe = [python, helper, 'probe', hex];
    const loop = (flags) => [process.execPath, ...flags, __filename, '--loop', hex];
    return {
      runtimeAndDriverCalls: run([python, helper, 'calls', hex], false),
      // [open, close] us on each CPU, two passes: the levels a CPU's state sets.
      bareDriverPerCpu: run([python, helper, 'per-cpu', hex], false),
      bareDriver: run(probe, false),
      bareDriverOneCpu: run(probe, true),
      oursInNode: run(loop([]), false),
      oursInNodeOneCpu: run(loop([]), true),
      // V8's pool of background threads at its smallest: whether Node's own threads cost.
      oursInNodeOneV8Thread: run(loop(['--v8-pool-size=1']), false),
    };
  } finally {
    memory.free();
  }
}

const parse = (r) => (r.status === 0 ? JSON.parse(r.stdout.trim()) : { error: r.stderr.slice(-400) });

function main() {
  const addon = require(root);
  if (!addon.getDevices().some((d) => d.filterString === FILTER)) {
    console.log(`ipc-pairs: no ${FILTER}`);
    return;
  }
  console.log('ipc-pairs: microseconds a cycle (export, a message, open + close, a message), exporter -> child');
  for (let round = 0; round < 3; round++) {
    for (const kind of ['ours', 'cupy']) {
      const mine = oursExporting(addon, kind);
      const theirs = cupyExporting(kind);
      console.log(`  round ${round}, child ${kind.padEnd(4)}: ours -> ${mine.toFixed(2)}   CuPy -> ${theirs.toFixed(2)}`);
    }
  }
  // Our exporter against CuPy's pair in alternating batches (bench/ipc-interleaved.js), with
  // our child and with a Node child making the bare driver's calls (peers/bare_ipc.node,
  // built as its source says), alone and with the addon loaded: where the Node process ends
  // and our calls begin.
  const bareBuilt = fs.existsSync(path.join(__dirname, 'peers', 'bare_ipc.node'));
  const memory = new addon.MemoryUSMDevice(1 << 20, { queue: new addon.SyclQueue(FILTER) });
  try {
    for (let round = 0; round < 2; round++) {
      for (const child of bareBuilt ? Object.keys(CHILDREN) : ['ours']) {
        const { ours, cupy } = interleavedCycle(addon, { filter: FILTER }, timing, memory, child);
        console.log(`  interleaved, round ${round}, child ${child}: ${(ours.ns / 1e3).toFixed(1)} us, CuPy's pair ${(cupy.ns / 1e3).toFixed(1)} us: ${(cupy.ns / ours.ns).toFixed(3)}x`);
      }
    }
  } finally {
    memory.free();
  }
  if (!bareBuilt) console.log('  (no peers/bare_ipc.node: the bare-driver children were not run)');
  console.log(`ipc-pairs: a handle of ours: ${JSON.stringify(probeOurs(addon))}`);
  console.log(`ipc-pairs: a handle of CuPy's, bare driver: ${JSON.stringify(parse(spawnSync(python, [helper, 'export-probe'], { encoding: 'utf8', env })))}`);
}

if (process.argv[2] === '--loop') loopChild();
else main();
