// Several devices: peer access (dpctl 0.20+'s can_access_peer/enable/disable), copies
// between devices, per-device pool statistics. Runs on every device present; the CUDA
// cases skip visibly without a CUDA device, the two-GPU cases with fewer than two (the
// model's rules for two devices are the cargo tests of src/memory/peer.rs, over the fake
// provider). Serial: the GPU cases are memory-heavy.
import test from 'ava';
import {
  DEVICES,
  CUDA_DEVICES,
  KINDS,
  MemoryUSMDevice,
  MemoryUSMHost,
  MemoryUSMShared,
  SyclContext,
  SyclDevice,
  SyclQueue,
  eachDevice,
  exporter,
  freeAll,
  pattern,
  queueFor,
  addon,
} from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';

const { poolStats } = addon;
const MiB = 2 ** 20;
const GiB = 2 ** 30;
const PRESENT = DEVICES.map((d) => d.filterString).join(', ') || 'none';
const UNSUPPORTED = 'ERR_PEER_ACCESS_UNSUPPORTED';

/** A serial case that needs at least `count` CUDA devices, or a visible skip. */
function cudaTest(count, title, fn) {
  if (CUDA_DEVICES.length < count) {
    const why = count === 1 ? 'no GPU: no device with backend \'cuda\'' : `needs ${count} CUDA devices, found ${CUDA_DEVICES.length}`;
    test.skip(`${title} [${why} (devices here: ${PRESENT}): skipped]`, () => {});
    return;
  }
  test.serial(title, (t) => fn(t, CUDA_DEVICES));
}

// ---------------------------------------------------------------------------------------
// Every device
// ---------------------------------------------------------------------------------------

eachDevice(test, 'canAccessPeer of a device and itself is false (both queries)', (t, device) => {
  t.false(device.canAccessPeer(device));
  t.false(device.canAccessPeer(new SyclDevice(device.filterString)), 'another object of the same device');
  t.false(device.canAccessPeer(device, 'atomics_supported'));
});

eachDevice(test, 'enablePeerAccess and disablePeerAccess of a device and itself throw ERR_PEER_ACCESS_UNSUPPORTED', (t, device) => {
  for (const method of ['enablePeerAccess', 'disablePeerAccess']) {
    const err = throwsExactly(t, () => device[method](device), Error, UNSUPPORTED, method);
    if (device.backend === 'opencl') t.is(err?.message, 'Peer access not supported for backend opencl', method);
    else t.regex(err?.message ?? '', /reaches its own memory without peer access/, method);
  }
});

eachDevice(test, 'the peer methods check their arguments as dpctl does', (t, device) => {
  for (const peer of [undefined, null, 'cpu', {}, queueFor(device)]) {
    throwsExactly(t, () => device.canAccessPeer(peer), TypeError, 'ERR_INVALID_ARG_TYPE', String(peer));
    throwsExactly(t, () => device.enablePeerAccess(peer), TypeError, 'ERR_INVALID_ARG_TYPE', String(peer));
    throwsExactly(t, () => device.disablePeerAccess(peer), TypeError, 'ERR_INVALID_ARG_TYPE', String(peer));
  }
  throwsExactly(t, () => device.canAccessPeer(device, 1), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => device.canAccessPeer(device, 'peer'), TypeError, 'ERR_INVALID_ARG_VALUE');
  throwsExactly(t, () => SyclDevice.prototype.canAccessPeer.call({}, device), TypeError, 'ERR_INVALID_THIS');
  throwsExactly(t, () => SyclDevice.prototype.enablePeerAccess.call(queueFor(device), device), TypeError, 'ERR_INVALID_THIS');
});

const opencl = DEVICES.find((d) => d.backend === 'opencl');
if (opencl === undefined || CUDA_DEVICES.length === 0) {
  test.skip(`two backends cannot have peer access [needs an OpenCL and a CUDA device (devices here: ${PRESENT}): skipped]`, () => {});
} else {
  test('two backends cannot have peer access: false, and dpctl\'s error', (t) => {
    const gpu = CUDA_DEVICES[0];
    t.false(opencl.canAccessPeer(gpu));
    t.false(gpu.canAccessPeer(opencl));
    const err = throwsExactly(t, () => opencl.enablePeerAccess(gpu), Error, UNSUPPORTED);
    t.is(err?.message, 'Device with backend opencl cannot peer access device with backend cuda');
    throwsExactly(t, () => gpu.disablePeerAccess(opencl), Error, UNSUPPORTED);
  });
}

// ---------------------------------------------------------------------------------------
// One GPU
// ---------------------------------------------------------------------------------------

let seed = 1;
/**
 * Copies `src` into `dst` and checks every byte by reading `dst` back; `dst` holds the
 * complement of every byte first, so no byte can be right unless it was copied.
 */
function roundTrip(t, dst, src, n, note) {
  const bytes = pattern(n, seed++);
  src.copyFromHost(bytes);
  dst.copyFromHost(bytes.map((b) => ~b & 0xff));
  dst.copyFromDevice(src);
  t.true(Buffer.from(dst.copyToHost()).equals(Buffer.from(bytes)), note);
}

cudaTest(1, 'two contexts of one GPU copy device to device, both ways, at every size', (t, [gpu]) => {
  const own = new SyclQueue(new SyclContext(gpu), gpu);
  for (const n of [1, 4097, MiB + 3, 64 * MiB]) {
    const a = new MemoryUSMDevice(n, { queue: queueFor(gpu) });
    const b = new MemoryUSMDevice(n, { queue: own });
    roundTrip(t, b, a, n, `${n} B default -> own context`);
    roundTrip(t, a, b, n, `${n} B own -> default context`);
    freeAll(a, b);
  }
});

cudaTest(1, 'copyFromDeviceAsync between two contexts of one GPU', async (t, [gpu]) => {
  const own = new SyclQueue(new SyclContext(gpu), gpu);
  const n = 8 * MiB + 5;
  const a = new MemoryUSMDevice(n, { queue: queueFor(gpu) });
  const b = new MemoryUSMDevice(n, { queue: own });
  const bytes = pattern(n, 3);
  a.copyFromHost(bytes);
  await b.copyFromDeviceAsync(a);
  t.true(Buffer.from(b.copyToHost()).equals(Buffer.from(bytes)));
  freeAll(a, b);
});

cudaTest(1, 'two contexts of one GPU: host and shared memory copy to and from device memory of the other', (t, [gpu]) => {
  const own = new SyclQueue(new SyclContext(gpu), gpu);
  for (const Class of [MemoryUSMHost, MemoryUSMShared]) {
    for (const n of [1, 4097, MiB + 3]) {
      const a = new MemoryUSMDevice(n, { queue: queueFor(gpu) });
      const b = new Class(n, { queue: own });
      roundTrip(t, b, a, n, `${n} B device (default) -> ${Class.name} (own context)`);
      roundTrip(t, a, b, n, `${n} B ${Class.name} (own context) -> device (default)`);
      freeAll(a, b);
    }
  }
});

cudaTest(1, 'a queue\'s memcpy refuses memory of another context of its GPU; copyFromDevice copies it', (t, [gpu]) => {
  const own = new SyclQueue(new SyclContext(gpu), gpu);
  const n = MiB + 1;
  const a = new MemoryUSMDevice(n, { queue: queueFor(gpu) });
  const b = new MemoryUSMDevice(n, { queue: own });
  throwsExactly(t, () => queueFor(gpu).memcpy(b, a, n), Error, 'ERR_KERNEL_QUEUE_MISMATCH');
  throwsExactly(t, () => own.memcpy(b, a, n), Error, 'ERR_KERNEL_QUEUE_MISMATCH');
  roundTrip(t, b, a, n, 'copyFromDevice instead');
  freeAll(a, b);
});

const cpu = DEVICES.find((d) => d.backend !== 'cuda');
if (cpu === undefined || CUDA_DEVICES.length === 0) {
  test.skip(`device memory of a GPU and of a SYCL device copies both ways [needs a CUDA and a non-CUDA device (devices here: ${PRESENT}): skipped]`, () => {});
} else {
  test.serial(`device memory of a GPU and of a SYCL device copies both ways, sync and async [${cpu.filterString}]`, async (t) => {
    const gpu = CUDA_DEVICES[0];
    t.false(gpu.canAccessPeer(cpu));
    for (const n of [1, 4097, MiB + 3, 16 * MiB]) {
      const g = new MemoryUSMDevice(n, { queue: queueFor(gpu) });
      const c = new MemoryUSMDevice(n, { queue: queueFor(cpu) });
      roundTrip(t, c, g, n, `${n} B ${gpu.filterString} -> ${cpu.filterString}`);
      roundTrip(t, g, c, n, `${n} B ${cpu.filterString} -> ${gpu.filterString}`);
      const bytes = pattern(n, seed++);
      g.copyFromHost(bytes);
      await c.copyFromDeviceAsync(g);
      t.true(Buffer.from(c.copyToHost()).equals(Buffer.from(bytes)), `${n} B async`);
      freeAll(g, c);
    }
  });
}

// ---------------------------------------------------------------------------------------
// Per-device pool statistics (every device present)
// ---------------------------------------------------------------------------------------

const OFF = ['0', 'false', 'off', 'no'];
const STATS_ON = !OFF.includes((process.env.DPCTL_MEMORY_STATS ?? '').trim().toLowerCase());
const POOL_ON = !OFF.includes((process.env.DPCTL_MEMORY_POOL ?? '').trim().toLowerCase());
const POOL_FIELDS = ['hits', 'misses', 'cachedBlocks', 'cachedBytes', 'inUseBytes', 'evictions'];
const entryOf = (stats, device) => stats.byDevice.find((d) => d.filterString === device.filterString);
const cachedOn = (stats, device, kind) => entryOf(stats, device)?.[kind].cachedBlocks ?? 0;

if (DEVICES.length === 0 || !STATS_ON || !POOL_ON) {
  const why = DEVICES.length === 0 ? 'no device' : 'DPCTL_MEMORY_STATS or DPCTL_MEMORY_POOL is off';
  test.skip(`poolStats().byDevice [${why} (devices here: ${PRESENT}): skipped]`, () => {});
} else {
  test.serial('poolStats().byDevice: a freed block is cached in its own device\'s figures, and the devices add up to the totals', (t) => {
    for (const device of DEVICES) {
      for (const { kind, Class } of KINDS) {
        // Counted with the block in use: a cached block of its size class may have served it.
        const m = new Class(MiB + 7, { queue: queueFor(device) });
        const before = poolStats();
        m.free();
        const after = poolStats();
        const mine = entryOf(after, device);
        t.deepEqual(Object.keys(mine ?? {}).sort(), ['device', 'filterString', 'host', 'name', 'shared'], device.filterString);
        t.is(mine?.name, device.name);
        t.is(cachedOn(after, device, kind), cachedOn(before, device, kind) + 1, `${kind} on ${device.filterString}: cached there`);
        for (const other of DEVICES.filter((d) => !d.equals(device))) {
          t.is(cachedOn(after, other, kind), cachedOn(before, other, kind), `${kind} on ${device.filterString}: not on ${other.filterString}`);
        }
      }
    }
    const stats = poolStats();
    t.is(new Set(stats.byDevice.map((d) => d.filterString)).size, stats.byDevice.length, 'one entry per device');
    for (const { kind } of KINDS) {
      for (const field of POOL_FIELDS) {
        const sum = stats.byDevice.reduce((total, d) => total + d[kind][field], 0);
        t.is(sum, stats[kind][field], `${kind}.${field}: the devices add up to the total`);
      }
    }
  });
}

// ---------------------------------------------------------------------------------------
// Two GPUs
// ---------------------------------------------------------------------------------------

const CROSS_SIZES = [1, 4097, MiB + 3, 64 * MiB, GiB];

cudaTest(2, 'canAccessPeer between two GPUs answers, and enable/disable are idempotent', (t, [gpu0, gpu1]) => {
  const can = gpu0.canAccessPeer(gpu1);
  t.is(typeof can, 'boolean');
  t.is(typeof gpu0.canAccessPeer(gpu1, 'atomics_supported'), 'boolean');
  t.log(`${gpu0.filterString} -> ${gpu1.filterString}: peer access ${can}, back ${gpu1.canAccessPeer(gpu0)}`);
  if (!can) {
    throwsExactly(t, () => gpu0.enablePeerAccess(gpu1), Error, UNSUPPORTED);
    return;
  }
  gpu0.disablePeerAccess(gpu1); // not enabled: no error
  gpu0.enablePeerAccess(gpu1);
  gpu0.enablePeerAccess(gpu1); // already enabled: no error
  gpu0.disablePeerAccess(gpu1);
  gpu0.disablePeerAccess(gpu1);
  t.pass();
});

/** Runs `fn` with peer access both ways on (where the pair can have it) or off. */
function withPeerAccess(gpus, on, fn) {
  const [a, b] = gpus;
  const enable = on && a.canAccessPeer(b) && b.canAccessPeer(a);
  if (enable) {
    a.enablePeerAccess(b);
    b.enablePeerAccess(a);
  }
  try {
    return fn(enable);
  } finally {
    if (enable) {
      a.disablePeerAccess(b);
      b.disablePeerAccess(a);
    }
  }
}

for (const on of [false, true]) {
  cudaTest(2, `copies between two GPUs both ways, 1 B to 1 GiB, peer access ${on ? 'on' : 'off'}`, (t, gpus) => {
    withPeerAccess(gpus, on, (enabled) => {
      if (on && !enabled) t.log('this pair cannot have peer access: the copies are staged');
      for (const n of CROSS_SIZES) {
        const a = new MemoryUSMDevice(n, { queue: queueFor(gpus[0]) });
        const b = new MemoryUSMDevice(n, { queue: queueFor(gpus[1]) });
        roundTrip(t, b, a, n, `${n} B GPU 0 -> GPU 1`);
        roundTrip(t, a, b, n, `${n} B GPU 1 -> GPU 0`);
        freeAll(a, b);
      }
    });
  });
}

// A queue's memcpy takes memory its context reaches (the kernels' rule): memory of
// another GPU, or of another context of the same GPU, is refused with a code, never
// copied by a driver call that cannot reach it; copyFromDevice is the copy between them.
cudaTest(2, 'a queue\'s memcpy refuses memory of the other GPU, with or without peer access; copyFromDevice copies it', (t, gpus) => {
  for (const on of [false, true]) {
    withPeerAccess(gpus, on, () => {
      const n = 4 * MiB + 3;
      const a = new MemoryUSMDevice(n, { queue: queueFor(gpus[0]) });
      const b = new MemoryUSMDevice(n, { queue: queueFor(gpus[1]) });
      for (const queue of [queueFor(gpus[0]), queueFor(gpus[1])]) {
        throwsExactly(t, () => queue.memcpy(b, a, n), Error, 'ERR_KERNEL_QUEUE_MISMATCH', `peer access ${on}`);
      }
      roundTrip(t, b, a, n, `copyFromDevice instead, peer access ${on}`);
      freeAll(a, b);
    });
  }
});

cudaTest(2, 'copyFromDeviceAsync between two GPUs', async (t, gpus) => {
  const n = 32 * MiB + 1;
  const a = new MemoryUSMDevice(n, { queue: queueFor(gpus[0]) });
  const b = new MemoryUSMDevice(n, { queue: queueFor(gpus[1]) });
  const bytes = pattern(n, 5);
  a.copyFromHost(bytes);
  await b.copyFromDeviceAsync(a);
  t.true(Buffer.from(b.copyToHost()).equals(Buffer.from(bytes)));
  freeAll(a, b);
});

for (const on of [false, true]) {
  cudaTest(2, `an interface view of GPU 1 memory with a GPU 0 queue or context is refused, peer access ${on ? 'on' : 'off'}`, (t, gpus) => {
    withPeerAccess(gpus, on, () => {
      const m = new MemoryUSMDevice(4096, { queue: queueFor(gpus[1]) });
      for (const syclobj of [queueFor(gpus[0]), queueFor(gpus[0]).syclContext, gpus[0].filterString]) {
        throwsExactly(t, () => new MemoryUSMDevice(exporter(m, { syclobj })), Error, 'ERR_SUAI_FOREIGN_POINTER', String(syclobj));
      }
      // With GPU 1's own queue the view is made, and GPU 0 memory copies from it.
      const view = new MemoryUSMDevice(exporter(m, { syclobj: queueFor(gpus[1]) }));
      const on0 = new MemoryUSMDevice(4096, { queue: queueFor(gpus[0]) });
      roundTrip(t, on0, view, 4096, 'through the view');
      freeAll(view, on0, m);
    });
  });
}

cudaTest(2, 'a block freed on GPU 1 is never reused on GPU 0', (t, [gpu0, gpu1]) => {
  const n = 3 * MiB;
  const on1 = new MemoryUSMDevice(n, { queue: queueFor(gpu1) });
  const freed = on1.pointer;
  const before = poolStats();
  on1.free();
  if (poolStats().enabled && STATS_ON) {
    const after = poolStats();
    t.is(cachedOn(after, gpu1, 'device'), cachedOn(before, gpu1, 'device') + 1, 'cached in GPU 1\'s figures');
    t.is(cachedOn(after, gpu0, 'device'), cachedOn(before, gpu0, 'device'), 'not in GPU 0\'s');
  }
  const on0 = new MemoryUSMDevice(n, { queue: queueFor(gpu0) });
  t.not(on0.pointer, freed);
  t.is(on0.syclDevice.filterString, gpu0.filterString);
  const again = new MemoryUSMDevice(n, { queue: queueFor(gpu1) });
  if (poolStats().enabled) t.is(again.pointer, freed, 'GPU 1 reuses its own block');
  freeAll(on0, again);
});
