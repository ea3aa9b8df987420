// The statistics agree with the driver where it can say: on a CUDA device, reserved
// bytes (what this process holds from the runtime through the pool: live and cached
// blocks) move as the device's used memory (cuMemGetInfo) does, within one 2 MiB
// allocation granularity, through allocating, caching and trimming. Skips visibly off a
// GPU (scripts/gpu-suite.sh runs it). It compares the device's memory with a
// baseline, which another test process starting a CUDA context would move: so it runs
// alone, after the rest of the suite (scripts/test.js runs `*.alone.spec.mjs` that way).
import test from 'ava';
import { createRequire } from 'node:module';
import { addon, CUDA_DEVICES, queueFor } from './helpers/addon.mjs';

const require = createRequire(import.meta.url);
const { native } = require('../lib/native.js');
const { deviceHandle } = require('../lib/device.js');
const { MemoryUSMDevice, memoryStats, poolTrim } = addon;

const MiB = 2 ** 20;
const GRANULARITY = 2 * MiB;
const freeMemory = (device) => native.deviceFreeMemory(deviceHandle(device));
const reserved = (device) => memoryStats(device).device.reservedBytes.current;

if (CUDA_DEVICES.length === 0) {
  test.skip('reserved bytes follow cuMemGetInfo within one allocation granularity [no CUDA device: skipped]', () => {});
}
for (const device of CUDA_DEVICES) {
  test.serial(`reserved bytes follow cuMemGetInfo within one allocation granularity [${device.filterString}]`, (t) => {
    const queue = queueFor(device);
    poolTrim();
    const free0 = freeMemory(device);
    const reserved0 = reserved(device);
    t.is(typeof free0, 'number', 'the driver reports free memory');
    const agree = (what) => {
      const used = free0 - freeMemory(device);
      const held = reserved(device) - reserved0;
      t.true(Math.abs(used - held) <= GRANULARITY, `${what}: the driver says ${used / MiB} MiB more used, the stats ${held / MiB} MiB more reserved`);
      return held;
    };
    // Sizes that are classes and multiples of the granularity: no rounding on either side.
    const blocks = [];
    for (let i = 0; i < 16; i++) blocks.push(new MemoryUSMDevice(64 * MiB, { queue }));
    for (let i = 0; i < 4; i++) blocks.push(new MemoryUSMDevice(256 * MiB, { queue }));
    t.is(agree('allocated'), 2048 * MiB);
    for (const m of blocks.splice(0, 10)) m.free();
    t.is(agree('half freed into the cache'), 2048 * MiB, 'cached blocks stay reserved');
    t.is(memoryStats(device).device.allocatedBytes.current - memoryStats(device).device.requestedBytes.current, 0);
    poolTrim();
    t.is(agree('trimmed'), 6 * 64 * MiB + 4 * 256 * MiB);
    for (const m of blocks) m.free();
    poolTrim();
    t.is(agree('all freed and trimmed'), 0);
  });
}

if (CUDA_DEVICES.length === 0) {
  test.skip('the pinned staging buffers of pageable copies are counted as staging [no CUDA device: skipped]', () => {});
}
for (const device of CUDA_DEVICES) {
  test.serial(`the pinned staging buffers of pageable copies are counted as staging, and poolTrim() frees them [${device.filterString}]`, (t) => {
    const queue = queueFor(device);
    poolTrim();
    const pinned = () => memoryStats(device).staging;
    t.is(pinned().pinnedBytes.current, 0, 'none before a staged copy');
    const m = new MemoryUSMDevice(64 * MiB, { queue });
    try {
      const reservedHost = memoryStats(device).host.reservedBytes.current;
      // A plain ArrayBuffer is pageable: a copy this large goes through the staging buffers.
      m.copyFromHost(new Uint8Array(64 * MiB).fill(3));
      const held = pinned();
      t.true(held.pinnedBytes.current > 0 && held.pinnedBuffers.current >= 2, JSON.stringify(held.pinnedBytes));
      t.is(held.pinnedBytes.current % held.pinnedBuffers.current, 0, 'buffers of one size');
      t.is(memoryStats(device).host.reservedBytes.current, reservedHost, 'not in the host kind');
      poolTrim();
      const trimmed = pinned();
      t.is(trimmed.pinnedBytes.current, 0, 'poolTrim() gives them back');
      t.is(trimmed.pinnedBytes.freed - held.pinnedBytes.freed, held.pinnedBytes.current);
      t.is(trimmed.pinnedBytes.peak, held.pinnedBytes.peak);
    } finally {
      m.free();
    }
  });
}
