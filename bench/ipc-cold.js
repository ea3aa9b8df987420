#!/usr/bin/env node
// Where an IPC open + close of ours spends what the bare driver does not, in one process
// (a CUDA machine with CuPy, the addon built, and peers/bare_ipc.node built as its source
// says). A CuPy process exports 1 MiB; this one opens and closes its handle over and over,
// in a hot loop and after a blocking wait (as the IPC cycle's child waits for its next
// request), round-robin over:
// - bare: the driver's open and close from JS (peers/bare_ipc.node);
// - driverCalls: every driver and Node-API call an open + free of ours makes, in one C call
//   with none of our code between (the same module's `ourDriverCalls`);
// - binding: the binding's two calls (`memIpcOpen`, `memFree`), no JS wrapper;
// - whole: `IPCMemoryHandle.open(...).free()`.
// Usage: node bench/ipc-cold.js   (BENCH_PYTHON: the python3 with CuPy)
'use strict';
const path = require('node:path');
const { spawn } = require('node:child_process');

const root = path.join(__dirname, '..');
const addon = require(root);
const { native } = require(path.join(root, 'lib', 'native.js'));
const { queueHandle } = require(path.join(root, 'lib', 'device.js'));

const FILTER = 'cuda:gpu:0';
const NBYTES = 1 << 20;
const CALLS = 1500; // per variant and pass; the first 200 are left out as warm-up
const WAITS_MS = [0, 0.2];
const EXPORTER = [
  'import cupy, sys',
  `pointer = cupy.cuda.runtime.malloc(${NBYTES})`,
  'print(bytes(cupy.cuda.runtime.ipcGetMemHandle(pointer)).hex(), flush=True)',
  'sys.stdin.read()',
].join('\n');

/** The first line the exporter prints: its handle, in hex. */
function firstLine(child) {
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (chunk) => {
      text += chunk;
      if (text.includes('\n')) resolve(text.trim());
    });
    child.on('exit', (code) => reject(new Error(`CuPy's exporter exited (${code}) before it printed a handle`)));
  });
}

/** `median (mean)` of microseconds, leaving out the warm-up. */
function summary(times) {
  const kept = times.slice(200);
  const sorted = [...kept].sort((a, b) => a - b);
  const mean = kept.reduce((a, b) => a + b, 0) / kept.length;
  return `${sorted[sorted.length >> 1].toFixed(1)} (${mean.toFixed(1)})`;
}

async function main() {
  if (!addon.getDevices().some((d) => d.filterString === FILTER)) {
    console.log(`ipc-cold: no ${FILTER}`);
    return;
  }
  const bare = require(path.join(__dirname, 'peers', 'bare_ipc.node'));
  bare.init();
  const queue = new addon.SyclQueue(FILTER);
  const queueId = queueHandle(queue);
  const exporter = spawn(process.env.BENCH_PYTHON || 'python3', ['-c', EXPORTER], { stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    const handle = new Uint8Array(Buffer.from(await firstLine(exporter), 'hex'));
    const variants = {
      bare: () => bare.close(bare.open(handle)),
      driverCalls: () => bare.ourDriverCalls(handle),
      binding: () => native.memFree(native.memIpcOpen(handle, queueId, NBYTES)),
      whole: () => addon.IPCMemoryHandle.open(handle, { queue, nbytes: NBYTES }).free(),
    };
    const names = Object.keys(variants);
    const pause = new Int32Array(new SharedArrayBuffer(4));
    console.log(`ipc-cold: microseconds an open + close, median (mean), ${names.join(', ')}`);
    for (const waitMs of WAITS_MS) {
      for (let pass = 0; pass < 2; pass++) {
        const times = Object.fromEntries(names.map((name) => [name, []]));
        for (let i = 0; i < CALLS; i++) {
          for (const name of names) {
            if (waitMs) Atomics.wait(pause, 0, 0, waitMs);
            const start = process.hrtime.bigint();
            variants[name]();
            times[name].push(Number(process.hrtime.bigint() - start) / 1e3);
          }
        }
        console.log(`  wait ${waitMs} ms, pass ${pass}: ${names.map((name) => `${name} ${summary(times[name])}`).join(' | ')}`);
      }
    }
  } finally {
    exporter.stdin.end();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
