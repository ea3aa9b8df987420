// IPC handles: device memory shared with other processes (IPCMemoryHandle,
// MemoryIPCDevice). Everywhere: the argument checks, and the unavailable path on every
// device whose runtime has no IPC (the SYCL devices of the pinned runtime). On CUDA
// devices: two processes (child_process.fork), the child opening what the parent exports.
// Serial: the CUDA cases compare poolStats() with baselines (device free memory: in
// ipc-cycles.alone.spec.mjs, which runs alone).
import test from 'ava';
import { createRequire } from 'node:module';
import { addon, DEVICES, CUDA_DEVICES, eachDevice, queueFor, rawExporter } from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';
import { IpcChild, pattern, withChild } from './fixtures/ipc-peer.mjs';

const require = createRequire(import.meta.url);
const { IPCMemoryHandle, MemoryIPCDevice, MemoryUSMDevice, MemoryUSMHost, MemoryUSMShared, asUsmMemory, poolStats } = addon;

const MiB = 2 ** 20;
const PRESENT = DEVICES.map((d) => d.filterString).join(', ') || 'none';
const WITHOUT_IPC = DEVICES.filter((d) => d.backend !== 'cuda');

// ---------------------------------------------------------------------------------------
// Everywhere
// ---------------------------------------------------------------------------------------

test('the IPC classes are exported, and MemoryIPCDevice is a MemoryUSMDevice no one constructs', (t) => {
  t.is(typeof IPCMemoryHandle, 'function');
  t.is(Object.getPrototypeOf(MemoryIPCDevice), MemoryUSMDevice);
  throwsExactly(t, () => new MemoryIPCDevice(16), TypeError, 'ERR_CONSTRUCT_CALL_REQUIRED');
  throwsExactly(t, () => new MemoryIPCDevice(), TypeError, 'ERR_CONSTRUCT_CALL_REQUIRED');
});

test('IPCMemoryHandle refuses what is not memory, and its members a foreign this', (t) => {
  for (const value of [undefined, null, 5, 'x', {}, [], new Uint8Array(64)]) {
    throwsExactly(t, () => new IPCMemoryHandle(value), TypeError, 'ERR_NOT_USM', String(value));
  }
  for (const name of ['toBytes', 'toString']) {
    throwsExactly(t, () => IPCMemoryHandle.prototype[name].call({}), TypeError, 'ERR_INVALID_THIS', name);
  }
  const nbytes = Object.getOwnPropertyDescriptor(IPCMemoryHandle.prototype, 'nbytes').get;
  throwsExactly(t, () => nbytes.call({}), TypeError, 'ERR_INVALID_THIS');
});

test('IPCMemoryHandle.open checks its arguments before any runtime call', (t) => {
  const bytes = new Uint8Array(64);
  for (const value of [undefined, null, 5, 'x', [1, 2], new ArrayBuffer(64), new Uint16Array(32), new DataView(new ArrayBuffer(64))]) {
    throwsExactly(t, () => IPCMemoryHandle.open(value, { nbytes: 16 }), TypeError, 'ERR_INVALID_ARG_TYPE', Object.prototype.toString.call(value));
  }
  for (const options of [undefined, null, 5, [], { nbytes: 16, bogus: 1 }, {}, { nbytes: undefined }, { queue: 5, nbytes: 16 }, { device: {}, nbytes: 16 }]) {
    throwsExactly(t, () => IPCMemoryHandle.open(bytes, options), TypeError, 'ERR_INVALID_ARG_TYPE', JSON.stringify(options));
  }
  for (const nbytes of [0, -1, 1.5, NaN, 0n]) {
    throwsExactly(t, () => IPCMemoryHandle.open(bytes, { nbytes }), RangeError, 'ERR_INVALID_SIZE', String(nbytes));
  }
  throwsExactly(t, () => IPCMemoryHandle.isAvailable(5), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => IPCMemoryHandle.isAvailable({}), TypeError, 'ERR_INVALID_ARG_TYPE');
});

eachDevice(test, 'only USM device memory owning its whole allocation is exported, and never after free()', (t, device) => {
  const queue = queueFor(device);
  for (const Class of [MemoryUSMHost, MemoryUSMShared]) {
    const m = new Class(64, { queue });
    throwsExactly(t, () => new IPCMemoryHandle(m), Error, 'ERR_IPC_NOT_EXPORTABLE', Class.name);
    m.free();
  }
  const m = new MemoryUSMDevice(64, { queue });
  const part = new MemoryUSMDevice(rawExporter({ data: [m.pointer + 8n, false], shape: [8], typestr: '|u1', version: 1, syclobj: queue }));
  throwsExactly(t, () => new IPCMemoryHandle(part), Error, 'ERR_IPC_NOT_EXPORTABLE');
  part.free();
  m.free();
  throwsExactly(t, () => new IPCMemoryHandle(m), Error, 'ERR_USM_FREED');
});

for (const device of WITHOUT_IPC) {
  test(`without IPC in the runtime, isAvailable is false and export and open throw ERR_IPC_UNAVAILABLE [${device.filterString}]`, (t) => {
    t.false(IPCMemoryHandle.isAvailable(device));
    const queue = queueFor(device);
    const m = new MemoryUSMDevice(64, { queue });
    throwsExactly(t, () => new IPCMemoryHandle(m), Error, 'ERR_IPC_UNAVAILABLE');
    throwsExactly(t, () => new IPCMemoryHandle(asUsmMemory(m)), Error, 'ERR_IPC_UNAVAILABLE', 'a view of all of it is exportable memory');
    for (const options of [{ device, nbytes: 16 }, { queue, nbytes: 16 }]) {
      throwsExactly(t, () => IPCMemoryHandle.open(new Uint8Array(64), options), Error, 'ERR_IPC_UNAVAILABLE');
      throwsExactly(t, () => IPCMemoryHandle.open(new Uint8Array(3), options), Error, 'ERR_IPC_UNAVAILABLE', 'before the length');
    }
    // The failed export left the memory usable and poolable as before.
    m.copyFromHost(new Uint8Array(64).fill(7));
    t.is(m.copyToHost()[63], 7);
    m.free();
  });
}

if (DEVICES.length > 0 && CUDA_DEVICES.length === 0) {
  test('isAvailable() of the default device is false without a CUDA device', (t) => {
    t.false(IPCMemoryHandle.isAvailable());
    t.false(IPCMemoryHandle.isAvailable(null));
  });
}

// ---------------------------------------------------------------------------------------
// CUDA: two processes
// ---------------------------------------------------------------------------------------

/** Registers `fn(t, device)` serially for every CUDA device, or one visible skip. */
function cudaTest(title, fn) {
  if (CUDA_DEVICES.length === 0) {
    test.skip(`${title} [no GPU: no device with backend 'cuda' (devices here: ${PRESENT}): skipped]`, () => {});
    return;
  }
  for (const device of CUDA_DEVICES) test.serial(`${title} [${device.filterString}]`, (t) => fn(t, device));
}

/** Device memory of `nbytes` holding `pattern(nbytes, seed)`, and its handle. */
function exported(device, nbytes, seed) {
  const mem = new MemoryUSMDevice(nbytes, { queue: queueFor(device) });
  mem.copyFromHost(pattern(nbytes, seed));
  const handle = new IPCMemoryHandle(mem);
  return { mem, handle, bytes: handle.toBytes() };
}

cudaTest('a CUDA device has IPC, and a handle is the driver\'s 64 bytes, a new copy on each call', (t, device) => {
  t.true(IPCMemoryHandle.isAvailable(device));
  const { mem, handle, bytes } = exported(device, 4096, 1);
  t.true(bytes instanceof Uint8Array);
  t.is(bytes.byteLength, 64);
  t.is(bytes.buffer.byteLength, 64, 'its own buffer, not a view into a larger one');
  t.not(handle.toBytes(), bytes);
  t.deepEqual(handle.toBytes(), bytes);
  t.is(handle.nbytes, 4096);
  t.is(String(handle), 'IPCMemoryHandle(size=4096)');
  t.is(new IPCMemoryHandle(asUsmMemory(mem)).toBytes().byteLength, 64, 'a view of all of it is exported too');
  throwsExactly(t, () => structuredClone(handle), TypeError, 'ERR_NOT_CLONEABLE');
  mem.free();
});

cudaTest('the parent exports, the child opens, checks the bytes and writes back, the parent sees the write', async (t, device) => {
  const nbytes = 3 * MiB + 17;
  const { mem, bytes } = exported(device, nbytes, 2);
  await withChild(async (child) => {
    const answer = await child.request({ op: 'check', filter: device.filterString, bytes, nbytes, seed: 2, reply: 3 });
    t.like(answer, { ok: true, matches: true, className: 'MemoryIPCDevice' });
    t.deepEqual(mem.copyToHost(), pattern(nbytes, 3));
  });
  mem.free();
});

cudaTest('a handle opened twice in one process is ERR_IPC_HANDLE_OPEN, and opens again once closed', async (t, device) => {
  const { mem, bytes } = exported(device, 64 * 1024, 4);
  await withChild(async (child) => {
    const answer = await child.request({ op: 'twice', filter: device.filterString, bytes, nbytes: 64 * 1024, seed: 4 });
    t.like(answer, { ok: true, firstStillReads: true, second: { code: 'ERR_IPC_HANDLE_OPEN', name: 'Error' } });
  });
  mem.free();
});

cudaTest('bad handles in the child are coded errors: wrong length, nbytes beyond the export, freed memory, not a handle', async (t, device) => {
  const kept = exported(device, 8192, 5);
  // Large enough to be a driver allocation of its own: the driver carves smaller ones out
  // of blocks it keeps, whose handles still open after the small allocation is freed.
  const freed = exported(device, 4 * MiB, 6);
  freed.mem.free();
  const noise = Uint8Array.from({ length: 64 }, (_, i) => (i * 73 + 11) & 0xff);
  await withChild(async (child) => {
    const { ok, results } = await child.request({
      op: 'attempts',
      filter: device.filterString,
      attempts: [
        { bytes: kept.bytes.subarray(0, 63), nbytes: 16 },
        { bytes: new Uint8Array(65), nbytes: 16 },
        { bytes: kept.bytes, nbytes: 64 * MiB },
        { bytes: freed.bytes, nbytes: 16 },
        { bytes: new Uint8Array(64), nbytes: 16 },
        { bytes: noise, nbytes: 16 },
        { bytes: kept.bytes, nbytes: 8192 },
      ],
    });
    t.true(ok);
    t.like(results[0], { code: 'ERR_IPC_HANDLE_LENGTH', name: 'RangeError' });
    t.like(results[1], { code: 'ERR_IPC_HANDLE_LENGTH', name: 'RangeError' });
    t.like(results[2], { code: 'ERR_IPC_OUT_OF_BOUNDS', name: 'RangeError' });
    for (const i of [3, 4, 5]) t.like(results[i], { code: 'ERR_IPC_HANDLE_INVALID', name: 'Error' }, `attempt ${i}`);
    t.is(results[6], null, 'the good handle still opens after all of that');
  });
  kept.mem.free();
});

cudaTest('this process opening its own handle is ERR_IPC_HANDLE_INVALID, and the memory stays usable', (t, device) => {
  const { mem, bytes } = exported(device, 4096, 7);
  throwsExactly(t, () => IPCMemoryHandle.open(bytes, { device, nbytes: 4096 }), Error, 'ERR_IPC_HANDLE_INVALID');
  t.deepEqual(mem.copyToHost(), pattern(4096, 7));
  mem.free();
});

cudaTest('an exported allocation is freed when it goes, never cached in the pool', (t, device) => {
  const queue = queueFor(device);
  const size = 5 * MiB + 4096;
  addon.poolTrim();
  const before = poolStats().device;
  const { mem } = exported(device, size, 8);
  mem.free();
  const after = poolStats().device;
  t.is(after.cachedBytes, before.cachedBytes, 'nothing cached');
  t.is(after.inUseBytes, before.inUseBytes, 'nothing left in use');
  const plain = new MemoryUSMDevice(size, { queue });
  plain.free();
  if (poolStats().enabled) t.true(poolStats().device.cachedBytes > before.cachedBytes, 'an ordinary block of that size is cached');
});

cudaTest('a child that dies holding a mapping (after writing, or killed) leaves the parent working', async (t, device) => {
  const nbytes = MiB;
  const { mem, bytes } = exported(device, nbytes, 9);
  const crashing = await IpcChild.start();
  await t.throwsAsync(crashing.request({ op: 'crash', filter: device.filterString, bytes, nbytes, reply: 10 }));
  t.like(await crashing.exited, { signal: 'SIGKILL' });
  t.deepEqual(mem.copyToHost(), pattern(nbytes, 10), 'the write it made before dying is there');
  const holding = await IpcChild.start();
  t.like(await holding.request({ op: 'hold', filter: device.filterString, bytes, nbytes, name: 'a' }), { ok: true });
  await holding.kill();
  mem.memset(1);
  t.is(mem.copyToHost()[nbytes - 1], 1);
  const next = new MemoryUSMDevice(nbytes, { queue: queueFor(device) });
  next.copyFromDevice(mem);
  t.is(next.copyToHost()[0], 1);
  await withChild(async (child) => {
    mem.copyFromHost(pattern(nbytes, 11));
    t.like(await child.request({ op: 'check', filter: device.filterString, bytes, nbytes, seed: 11, reply: 12 }), { ok: true, matches: true });
  });
  t.deepEqual(mem.copyToHost(), pattern(nbytes, 12));
  next.free();
  mem.free();
});

