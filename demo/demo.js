#!/usr/bin/env node
// The dpctl-memory demo: on the default device, allocate each kind of USM memory, fill
// host memory through a Float32Array with no copy, round-trip it through device memory,
// check the result and say what happened.
'use strict';
const {
  getDevices, getRuntimeDiagnostics, SyclQueue, MemoryUSMDevice, MemoryUSMHost, MemoryUSMShared,
} = require('..');

const COUNT = 1 << 20; // one million floats, 4 MiB
const NBYTES = COUNT * Float32Array.BYTES_PER_ELEMENT;

function main() {
  const devices = getDevices();
  if (devices.length === 0) {
    console.error('No device found.', getRuntimeDiagnostics().join('\n'));
    process.exit(1);
  }
  console.log('Devices:');
  for (const device of devices) {
    console.log(`  ${device.filterString.padEnd(16)} ${device.name} (${device.vendor}, driver ${device.driverVersion})`);
  }
  const queue = new SyclQueue();
  console.log(`Default device: ${queue.syclDevice.filterString} (${queue.syclDevice.name})`);

  const host = new MemoryUSMHost(NBYTES, { queue });
  const device = new MemoryUSMDevice(NBYTES, { queue });
  const shared = new MemoryUSMShared(NBYTES, { queue });
  try {
    roundTrip(queue, host, device, shared);
  } finally {
    // Release now rather than whenever the garbage collector gets to it.
    for (const m of [host, device, shared]) m.free();
  }
}

function roundTrip(queue, host, device, shared) {
  for (const m of [host, device, shared]) console.log(`Allocated ${m}`);

  // Zero-copy: the Float32Array writes straight into USM host memory.
  const input = new Float32Array(host.buffer);
  for (let i = 0; i < COUNT; i++) input[i] = Math.sqrt(i);
  console.log(`Filled ${COUNT} floats in host memory through a Float32Array (no copy)`);

  device.copyFromDevice(host); // host -> device
  shared.memset(0);
  shared.copyFromDevice(device); // device -> shared
  console.log(`Copied host -> device -> shared on ${queue.syclDevice.filterString}`);

  const output = new Float32Array(shared.buffer); // zero-copy view of shared memory
  let mismatches = 0;
  for (let i = 0; i < COUNT; i++) if (output[i] !== Math.fround(Math.sqrt(i))) mismatches++;
  const back = new Float32Array(device.copyToHost().buffer);
  for (let i = 0; i < COUNT; i += 4096) if (back[i] !== input[i]) mismatches++;
  if (mismatches > 0) {
    console.error(`FAILED: ${mismatches} values differ after the round trip`);
    process.exit(1);
  }
  console.log(`Checked: all ${COUNT} values came back intact (e.g. element 4 = ${output[4]})`);
  console.log(`USM kinds seen by the queue: ${host.getUsmType()}, ${device.getUsmType()}, ${shared.getUsmType()}`);
}

main();
