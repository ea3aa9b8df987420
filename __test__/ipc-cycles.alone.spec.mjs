// IPC handles' cost to the device over many cycles: 1,000 exports opened and closed by a
// child leave the device's free memory and the pool where they were. The device's free
// memory is device-wide (cuMemGetInfo), so this file runs alone, after the rest of the
// suite (scripts/test.js runs `*.alone.spec.mjs` files one at a time): another test
// process starting a CUDA context would move it.
import test from 'ava';
import { createRequire } from 'node:module';
import { addon, DEVICES, CUDA_DEVICES, queueFor } from './helpers/addon.mjs';
import { withChild } from './fixtures/ipc-peer.mjs';

const require = createRequire(import.meta.url);
const { native } = require('../lib/native.js');
const { deviceHandle } = require('../lib/device.js');
const { IPCMemoryHandle, MemoryUSMDevice, poolStats } = addon;

const MiB = 2 ** 20;
const PRESENT = DEVICES.map((d) => d.filterString).join(', ') || 'none';

/** Registers `fn(t, device)` serially for every CUDA device, or one visible skip. */
function cudaTest(title, fn) {
  if (CUDA_DEVICES.length === 0) {
    test.skip(`${title} [no GPU: no device with backend 'cuda' (devices here: ${PRESENT}): skipped]`, () => {});
    return;
  }
  for (const device of CUDA_DEVICES) test.serial(`${title} [${device.filterString}]`, (t) => fn(t, device));
}

/** The device's free memory as the driver reports it (`cuMemGetInfo`). */
const freeMemory = (device) => native.deviceFreeMemory(deviceHandle(device)) ?? 0;

cudaTest('1,000 export/open/close cycles leave device free memory and the pool at their baseline', async (t, device) => {
  const nbytes = MiB;
  const queue = queueFor(device);
  const cycle = async (child) => {
    const mem = new MemoryUSMDevice(nbytes, { queue });
    mem.memset(0x5a);
    const bytes = new IPCMemoryHandle(mem).toBytes();
    const answer = await child.request({ op: 'cycle', filter: device.filterString, bytes, nbytes, read: true });
    mem.free();
    return answer;
  };
  await withChild(async (child) => {
    t.like(await cycle(child), { ok: true, first: 0x5a }, 'warm-up');
    const free0 = freeMemory(device);
    const pool0 = poolStats().device;
    for (let i = 0; i < 1000; i++) {
      const answer = await cycle(child);
      if (!answer.ok || answer.first !== 0x5a) return t.fail(`cycle ${i}: ${JSON.stringify(answer)}`);
    }
    const free1 = freeMemory(device);
    const pool1 = poolStats().device;
    t.log(`device free memory ${(free0 / MiB).toFixed(1)} MiB -> ${(free1 / MiB).toFixed(1)} MiB after 1,000 cycles`);
    t.true(free0 > 0, 'the driver reports free memory');
    t.true(free1 >= free0 - 8 * MiB, `free memory back to baseline (${free0} -> ${free1})`);
    t.is(pool1.inUseBytes, pool0.inUseBytes);
    t.is(pool1.cachedBytes, pool0.cachedBytes, 'no exported block was cached');
  });
});
