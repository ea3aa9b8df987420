// The IPC cycle of bench/gpu.js, ours and CuPy's in alternating batches on the same CPUs.
// A CUDA IPC open + close costs one of two levels (about a third apart) that change with the
// CPU it runs on and over time, whatever the process (bench/ipc-pairs.js shows it for the bare
// driver), so two pairs measured minutes apart, each on CPUs of the scheduler's choosing,
// compare CPU states more than libraries. Here the main threads of both exporters run on one
// CPU and those of both children on another (pinned once the children are warm, so only the
// thread that opens and closes is pinned: Node's and the driver's helper threads stay free to
// run elsewhere, as Python's do), and the batches alternate ours, CuPy's, CuPy's, ours, so a
// change of level falls on both. CuPy's pair is bench/peers/cuda_gpu.py's (`--ipc-batches`): its
// exporter runs as many cycles as asked and answers the nanoseconds they took.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { REQUEST, OPS, fifos, cycle, sendRequest } = require('./ipc-pipe');
const { median } = require('./lib');

/** The CPUs this process may run on (`Cpus_allowed_list`), or null where it cannot be read. */
function allowedCpus() {
  try {
    const list = /Cpus_allowed_list:\s*(\S+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (!list) return null;
    return list.split(',').flatMap((part) => {
      const [from, to = from] = part.split('-').map(Number);
      return Array.from({ length: to - from + 1 }, (_, i) => from + i);
    });
  } catch {
    return null;
  }
}

/** Pins the main thread of process `pid` (its other threads keep their CPUs) to `cpus`, a
 * taskset list; false where taskset fails. */
function pinMainThread(cpus, pid = process.pid) {
  return spawnSync('taskset', ['-p', '-c', cpus, String(pid)], { stdio: 'ignore' }).status === 0;
}

/** Whether process `pid` still runs (one that exited, reaped or not, does not). */
function running(pid) {
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * A reader of lines from the FIFO at `file`, written by process `pid`: opened without
 * waiting for the writer, and read by polling, so a writer that ends before it opens its
 * end, or without answering, is an error rather than a wait that never ends.
 */
function lineReader(file, pid) {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  const chunk = Buffer.alloc(256);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  let pending = '';
  const next = () => {
    while (!pending.includes('\n')) {
      let got = 0;
      try {
        got = fs.readSync(fd, chunk, 0, chunk.length, null);
      } catch (err) {
        if (err.code !== 'EAGAIN') throw err;
      }
      if (got > 0) {
        pending += chunk.toString('utf8', 0, got);
      } else if (!running(pid)) {
        throw new Error("CuPy's IPC exporter ended");
      } else {
        Atomics.wait(pause, 0, 0, 0.05); // nothing yet (or no writer yet): 50 us
      }
    }
    const end = pending.indexOf('\n');
    const line = pending.slice(0, end);
    pending = pending.slice(end + 1);
    return line;
  };
  return { next, close: () => fs.closeSync(fd) };
}

/** Our child's command for `child`: the addon's calls, or the bare driver's (alone, with
 * the addon loaded beside them, or with the mapping's size asked as our open asks it), for
 * bench/ipc-pairs.js. */
const bareChild = (...flags) => (args) => [path.join(__dirname, 'ipc-bare-child.js'), ...args, ...flags];
const CHILDREN = {
  ours: (args) => [path.join(__dirname, 'ipc-child.js'), ...args],
  bare: bareChild(),
  bareWithAddon: bareChild('with-addon'),
  bareWithRange: bareChild('with-range'),
};

/**
 * Measures `ipc.cycle.1MiB` for us and for CuPy, interleaved: returns both results (as
 * `lib.measure` shapes them, batch sizes equal) and the CPUs used, or throws. `child` is
 * the child our exporter drives (`CHILDREN`).
 */
function interleavedCycle(addon, cfg, timing, memory, child = 'ours') {
  const cpus = allowedCpus();
  const [exporterCpu, childCpu] = cpus && cpus.length >= 2 ? cpus.slice(-2).map(String) : [null, null];
  const python = process.env.BENCH_PYTHON || 'python3';
  const cleanups = [];
  try {
    // Our pair: this process exports, the child (bench/ipc-child.js) opens and closes.
    const [ourFolder, requests, answers] = fifos('dpctl-memory-ipc-ab-');
    const ourChild = spawn(process.execPath, CHILDREN[child]([requests, answers, cfg.filter, JSON.stringify(timing)]), { stdio: 'inherit' });
    const output = fs.openSync(requests, 'r+');
    const input = fs.openSync(answers, 'r');
    cleanups.push(() => {
      sendRequest(output, Buffer.alloc(REQUEST), OPS.quit, new Uint8Array(64), 0);
      fs.closeSync(output);
      fs.closeSync(input);
      fs.rmSync(ourFolder, { recursive: true, force: true });
      if (ourChild.exitCode === null) ourChild.kill();
    });
    // CuPy's pair, driven by one line per batch over its own FIFOs.
    const [peerFolder, commands, replies] = fifos('dpctl-memory-ipc-ab-peer-');
    const script = path.join(__dirname, 'peers', 'cuda_gpu.py');
    const peerArgs = [script, '--ipc-batches', cfg.filter, commands, replies, exporterCpu ?? '', childCpu ?? ''];
    const peer = spawn(python, peerArgs, { stdio: ['ignore', 'ignore', 'inherit'] });
    peer.on('error', () => {}); // reported below, as a missing pid
    if (peer.pid === undefined) throw new Error(`${python} did not start`);
    const toPeer = fs.openSync(commands, 'r+');
    const fromPeer = lineReader(replies, peer.pid);
    cleanups.push(() => {
      fs.writeSync(toPeer, 'q\n');
      fs.closeSync(toPeer);
      fromPeer.close();
      fs.rmSync(peerFolder, { recursive: true, force: true });
      if (peer.exitCode === null) peer.kill();
    });
    if (exporterCpu !== null && pinMainThread(exporterCpu)) cleanups.push(() => pinMainThread(cpus.join(',')));

    const request = Buffer.alloc(REQUEST);
    const ours = (n) => {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) cycle(output, input, request, new addon.IPCMemoryHandle(memory).toBytes(), 1 << 20);
      return Number(process.hrtime.bigint() - t0);
    };
    const theirs = (n) => {
      fs.writeSync(toPeer, `${n}\n`);
      const line = fromPeer.next();
      const ns = Number(line);
      if (!Number.isFinite(ns)) throw new Error(`CuPy's IPC exporter: ${line}`);
      return ns;
    };

    // Batches as lib.measure sizes them (on ours), then the same batch for both.
    for (let i = 0; i < timing.warmupCalls; i++) {
      ours(1);
      theirs(1);
    }
    // Both children are warm: their main threads go to the child CPU (CuPy's exporter pins
    // its child when it reads "pin").
    if (childCpu !== null) {
      pinMainThread(childCpu, ourChild.pid);
      fs.writeSync(toPeer, 'pin\n');
    }
    const target = timing.batchTargetMs * 1e6;
    let n = 1;
    for (let elapsed = ours(n); elapsed < target && n < timing.maxBatch; elapsed = ours(n)) {
      n = Math.min(timing.maxBatch, Math.max(n + 1, Math.ceil((n * target) / Math.max(elapsed, 1)) + 1));
    }
    for (let i = 0; i < timing.warmupBatches; i++) {
      ours(n);
      theirs(n);
    }
    const samples = { ours: [], cupy: [] };
    for (let i = 0; i < timing.repeats; i++) {
      const order = i % 2 === 0 ? ['ours', 'cupy', 'cupy', 'ours'] : ['cupy', 'ours', 'ours', 'cupy'];
      for (const side of order) samples[side].push((side === 'ours' ? ours(n) : theirs(n)) / n);
    }
    const result = (s) => ({ ns: median(s), min_ns: Math.min(...s), batch: n, samples: s });
    return { ours: result(samples.ours), cupy: result(samples.cupy), cpus: { exporter: exporterCpu, child: childCpu } };
  } finally {
    for (const cleanup of cleanups.reverse()) {
      try {
        cleanup();
      } catch {
        // Ending what the measurement started: a pipe already gone is the same end.
      }
    }
  }
}

module.exports = { interleavedCycle, CHILDREN };
