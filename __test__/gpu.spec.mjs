// GPU-only cases, on every CUDA device (backend 'cuda'). Where there is none, each case is
// registered as a skipped test whose title says why, so the skip is visible in the report.
import test from 'ava';
import {
  addon,
  KINDS,
  DEVICES,
  CUDA_DEVICES,
  MemoryUSMDevice,
  MemoryUSMHost,
  MemoryUSMShared,
  SyclContext,
  SyclQueue,
  USMAllocationError,
  asUsmMemory,
  queueFor,
  pattern,
  exporter,
  freeAll,
} from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';
import { stagedRoundTrips } from './fixtures/staged-copies.mjs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MiB = 2 ** 20;
const GiB = 2 ** 30;

const PRESENT = DEVICES.map((d) => d.filterString).join(', ') || 'none';

/**
 * Registers `fn` (serially: these tests are memory-heavy) for every CUDA device.
 * `needs` optionally names a further requirement: `[ok, why-not]`.
 */
function gpuTest(title, fn, needs = [true, '']) {
  if (CUDA_DEVICES.length === 0) {
    test.skip(`${title} [no GPU: no device with backend 'cuda' (devices here: ${PRESENT}): skipped]`, () => {});
    return;
  }
  if (!needs[0]) {
    test.skip(`${title} [${needs[1]} (devices here: ${PRESENT}): skipped]`, () => {});
    return;
  }
  for (const device of CUDA_DEVICES) {
    test.serial(`${title} [${device.filterString}]`, (t) => fn(t, device));
  }
}

// ---------------------------------------------------------------------------------------
// The devices
// ---------------------------------------------------------------------------------------

gpuTest('a CUDA device describes itself as a GPU with USM aspects', (t, device) => {
  t.is(device.backend, 'cuda');
  t.is(device.deviceType, 'gpu');
  t.regex(device.filterString, /^cuda:gpu:\d+$/);
  t.true(device.globalMemSize >= GiB);
  for (const aspect of ['usm_device_allocations', 'usm_host_allocations']) t.true(device.hasAspect(aspect), aspect);
  t.log(`${device.filterString}: ${device.name}, ${(device.globalMemSize / GiB).toFixed(1)} GiB, driver ${device.driverVersion}`);
});

gpuTest('the default device is a GPU when a CUDA device is present', (t) => {
  const m = new MemoryUSMShared(8);
  t.is(m.syclDevice.deviceType, 'gpu');
  m.free();
});

// ---------------------------------------------------------------------------------------
// Pointer kinds
// ---------------------------------------------------------------------------------------

gpuTest('pointer-kind queries of each kind (getUsmType / getUsmTypeEnum)', (t, device) => {
  const queue = queueFor(device);
  for (const { kind, Class, enumValue } of KINDS) {
    const m = new Class(4096, { queue });
    t.is(m.getUsmType(), kind);
    t.is(m.getUsmTypeEnum(), enumValue);
    t.is(m.getUsmType(queue), kind);
    t.is(m.getUsmType(queue.syclContext), kind);
    const other = new SyclContext(device);
    const seen = m.getUsmType(other);
    t.true(['unknown', kind].includes(seen), `${kind} in a new CUDA context: ${seen}`);
    t.true(m.toString().startsWith(`<SYCL(TM) USM-${kind} allocation of 4096 bytes at 0x`));
    // Memory of another provider's device is unknown to this context, and the reverse.
    for (const foreign of DEVICES.filter((d) => d.backend !== 'cuda')) {
      const f = new Class(64, { queue: queueFor(foreign) });
      t.is(f.getUsmType(queue), 'unknown', `${kind} memory of ${foreign.filterString} seen from CUDA`);
      t.is(m.getUsmType(queueFor(foreign)), 'unknown', `CUDA ${kind} memory seen from ${foreign.filterString}`);
      f.free();
    }
    m.free();
  }
});

gpuTest('memory of another GPU is foreign to this GPU', (t, device) => {
  const others = CUDA_DEVICES.filter((d) => !d.equals(device));
  const m = new MemoryUSMDevice(4096, { queue: queueFor(others[0]) });
  t.is(m.getUsmType(queueFor(device)), 'unknown');
  throwsExactly(t, () => new MemoryUSMDevice(exporter(m, { syclobj: queueFor(device) })), Error, 'ERR_SUAI_FOREIGN_POINTER');
  throwsExactly(t, () => new MemoryUSMDevice(exporter(m, { syclobj: queueFor(device).syclContext })), Error, 'ERR_SUAI_FOREIGN_POINTER');
  // A copy between the two GPUs still works (staged through the host where needed).
  m.copyFromHost(pattern(4096, 201));
  const here = new MemoryUSMDevice(4096, { queue: queueFor(device) });
  here.copyFromDevice(m);
  t.deepEqual(here.copyToHost(), pattern(4096, 201));
  freeAll(m, here);
}, [CUDA_DEVICES.length >= 2, 'needs two CUDA devices']);

// ---------------------------------------------------------------------------------------
// Zero-copy host views of pinned (host) and managed (shared) memory
// ---------------------------------------------------------------------------------------

for (const { kind, Class } of KINDS.filter((k) => k.hostAccessible)) {
  const what = kind === 'host' ? 'pinned (host)' : 'managed (shared)';

  gpuTest(`zero-copy view of ${what} memory: JS writes reach the GPU`, (t, device) => {
    const queue = queueFor(device);
    const n = 4 * MiB;
    const m = new Class(n, { queue });
    const view = new Uint8Array(m.buffer);
    t.is(view.length, n);
    view.set(pattern(n, 211));
    const d = new MemoryUSMDevice(n, { queue });
    d.memset(0);
    d.copyFromDevice(m); // the GPU reads what JS wrote
    t.is(Buffer.compare(Buffer.from(d.copyToHost().buffer), Buffer.from(pattern(n, 211).buffer)), 0);
    freeAll(m, d);
  });

  gpuTest(`zero-copy view of ${what} memory: GPU writes are seen through the TypedArray`, (t, device) => {
    const queue = queueFor(device);
    const n = 4 * MiB;
    const m = new Class(n, { queue });
    const view = new Uint8Array(m.buffer);
    m.memset(0x77);
    t.true(view.every((b) => b === 0x77), 'memset by the GPU');
    const d = new MemoryUSMDevice(n, { queue });
    d.copyFromHost(pattern(n, 213));
    m.copyFromDevice(d);
    t.is(Buffer.compare(Buffer.from(view.buffer, view.byteOffset, view.byteLength), Buffer.from(pattern(n, 213).buffer)), 0, 'device-to-host copy by the GPU');
    // A view object and an interface view show the same bytes, with no copy.
    const v = new Class(m);
    const iv = asUsmMemory(exporter(m));
    t.true(iv instanceof Class);
    t.is(v.pointer, m.pointer);
    t.is(iv.pointer, m.pointer);
    new Uint8Array(v.buffer)[5] = 0xab;
    t.is(view[5], 0xab);
    m.free();
    t.is(view.length, 0, "free() detaches the parent's buffer");
    t.is(new Uint8Array(v.buffer)[5], 0xab, 'the view keeps the memory alive');
    freeAll(v, iv, d);
  });

  gpuTest(`registerHost of ${what} memory's buffer is a reported no-op (the GPU reaches it already)`, (t, device) => {
    const queue = queueFor(device);
    const n = MiB;
    const m = new Class(n, { queue });
    const registration = addon.registerHost(m.buffer, { queue });
    t.false(registration.registered, 'cuMemHostRegister would refuse memory the driver already maps');
    t.is(registration.byteLength, n);
    const d = new MemoryUSMDevice(n, { queue });
    new Uint8Array(m.buffer).set(pattern(n, 17));
    d.copyFromHost(new Uint8Array(m.buffer));
    t.is(Buffer.compare(Buffer.from(d.copyToHost().buffer), Buffer.from(pattern(n, 17).buffer)), 0);
    registration.unregister();
    freeAll(m, d);
  });
}

// ---------------------------------------------------------------------------------------
// 1 GiB round trip
// ---------------------------------------------------------------------------------------

/** 1 GiB of a pattern where every MiB differs (so a shifted copy is caught), built fast. */
function bigPattern(n) {
  const out = new Uint8Array(n);
  const block = pattern(MiB, 223);
  const dv = new DataView(out.buffer);
  for (let off = 0, i = 0; off < n; off += MiB, i++) {
    out.set(block.subarray(0, Math.min(MiB, n - off)), off);
    dv.setUint32(off, i, true);
    dv.setUint32(off + MiB / 2, i ^ 0xa5a5a5a5, true);
  }
  return out;
}

gpuTest('1 GiB round trip host -> device -> host', (t, device) => {
  const n = GiB;
  const src = bigPattern(n);
  const d = new MemoryUSMDevice(n, { queue: queueFor(device) });
  t.is(d.nbytes, n);
  let start = process.hrtime.bigint();
  d.copyFromHost(src);
  const up = Number(process.hrtime.bigint() - start) / 1e9;
  const back = new Uint8Array(n);
  start = process.hrtime.bigint();
  t.is(d.copyToHost(back), back);
  const down = Number(process.hrtime.bigint() - start) / 1e9;
  t.log(`1 GiB up ${(1 / up).toFixed(1)} GiB/s, down ${(1 / down).toFixed(1)} GiB/s`);
  t.is(Buffer.compare(Buffer.from(back.buffer), Buffer.from(src.buffer)), 0, 'bytes equal after the round trip');
  // And through pinned memory on the way back.
  const pinned = new MemoryUSMHost(n, { queue: queueFor(device) });
  pinned.copyFromDevice(d);
  t.is(Buffer.compare(Buffer.from(pinned.buffer), Buffer.from(src.buffer)), 0, 'device -> pinned host, read zero-copy');
  freeAll(d, pinned);
});

// Pageable copies from 1 MiB are staged: to the host pipelined from the calling thread up
// to 32 MiB, through the lanes above that and in every copy to the device. Sizes on both
// sides of each boundary, odd lengths, odd host offsets, guard bytes around every
// destination (fixtures/staged-copies.mjs).
const STAGED_SIZES = [MiB - 1, MiB, MiB + 1, 3 * MiB + 12345, 4 * MiB, 8 * MiB, 8 * MiB + 1, 16 * MiB - 1, 16 * MiB, 16 * MiB + 1, 32 * MiB, 33 * MiB + 7];

gpuTest('staged pageable copies at the sizes around each path, at odd offsets, both ways', (t, device) => {
  t.deepEqual(stagedRoundTrips(addon, queueFor(device), STAGED_SIZES), []);
});

// The pipelined path to the device is off by default; the same checks with it on, and with
// every staged copy pipelined (settings the addon reads once: a child process).
gpuTest('staged pageable copies with the pipelined path both ways (DPCTL_MEMORY_STAGING_PIPELINE_MAX)', (t, device) => {
  const script = fileURLToPath(new URL('./fixtures/staged-copies.mjs', import.meta.url));
  for (const max of [String(32 * MiB), String(64 * MiB)]) {
    const child = spawnSync(process.execPath, [script, device.filterString, ...STAGED_SIZES.map(String)], {
      env: { ...process.env, DPCTL_MEMORY_STAGING_PIPELINE_MAX: max },
      encoding: 'utf8',
    });
    t.is(child.status, 0, child.stderr);
    t.deepEqual(JSON.parse(child.stdout.trim().split('\n').pop()), [], `pipelined to ${max} bytes`);
  }
});

// ---------------------------------------------------------------------------------------
// Out of memory, and managed memory beyond free memory
// ---------------------------------------------------------------------------------------

gpuTest('device out-of-memory (2 x globalMemSize) is a USMAllocationError and the process carries on', (t, device) => {
  const queue = queueFor(device);
  const request = 2 * device.globalMemSize;
  const err = throwsExactly(t, () => new MemoryUSMDevice(request, { queue }), USMAllocationError, 'ERR_USM_ALLOCATION');
  t.log(err?.message);
  // The device still works.
  const m = new MemoryUSMDevice(MiB, { queue });
  m.copyFromHost(pattern(MiB, 227));
  t.deepEqual(m.copyToHost(), pattern(MiB, 227));
  m.free();
  // So do the other kinds.
  const h = new MemoryUSMHost(MiB, { queue });
  h.memset(1);
  t.is(new Uint8Array(h.buffer)[MiB - 1], 1);
  h.free();
});

gpuTest('managed memory beyond free device memory is refused up front (never attempted)', (t, device) => {
  const queue = queueFor(device);
  const request = device.globalMemSize + GiB;
  const err = throwsExactly(t, () => new MemoryUSMShared(request, { queue }), USMAllocationError, 'ERR_USM_ALLOCATION');
  t.log(err?.message);
  // The message is the admission check's: the driver was never asked (no clock needed).
  t.regex(err?.message ?? '', /refus|oversubscri/i, 'refused by the free-memory check, not by a failed attempt');
  const m = new MemoryUSMShared(MiB, { queue });
  m.memset(9);
  t.is(m.toBytes()[0], 9, 'a managed allocation that fits still works');
  m.free();
});

// ---------------------------------------------------------------------------------------
// Bounds and foreign pointers on CUDA memory
// ---------------------------------------------------------------------------------------

gpuTest('bounds checks on CUDA pointers: views beyond the allocation are ERR_SUAI_OUT_OF_BOUNDS', (t, device) => {
  const queue = queueFor(device);
  for (const { kind, Class } of KINDS) {
    const m = new Class(MiB, { queue });
    for (const syclobj of [queue, queue.syclContext, device.filterString]) {
      for (const fields of [{ shape: [MiB + 1] }, { shape: [MiB], offset: 1 }, { shape: [16], offset: -1 }, { shape: [MiB / 4 + 1], typestr: '<f4' }]) {
        const note = `${kind} ${String(syclobj)} ${JSON.stringify(fields)}`;
        throwsExactly(t, () => new Class(exporter(m, { ...fields, syclobj })), RangeError, 'ERR_SUAI_OUT_OF_BOUNDS', note);
        throwsExactly(t, () => asUsmMemory(exporter(m, { ...fields, syclobj })), RangeError, 'ERR_SUAI_OUT_OF_BOUNDS', note);
      }
      const ok = new Class(exporter(m, { shape: [MiB - 8], offset: 8, syclobj }));
      t.is(ok.pointer, m.pointer + 8n);
      ok.free();
    }
    m.free();
  }
});

gpuTest('foreign pointers given with a CUDA queue or context are ERR_SUAI_FOREIGN_POINTER, never a crash', (t, device) => {
  const queue = queueFor(device);
  const m = new MemoryUSMDevice(64, { queue });
  for (const pointer of [12345n, 0n, 0x1000n, 0xffff_8000_0000_0000n]) {
    for (const syclobj of [queue, queue.syclContext, device.filterString]) {
      throwsExactly(t, () => new MemoryUSMDevice(exporter(m, { data: [pointer, false], shape: [8], syclobj })), Error, 'ERR_SUAI_FOREIGN_POINTER', `${pointer} ${String(syclobj)}`);
    }
  }
  // CUDA memory of a separate context is foreign to the primary one.
  const own = new SyclQueue(new SyclContext(device), device);
  const x = new MemoryUSMDevice(64, { queue: own });
  if (x.getUsmType(queue) === 'unknown') {
    throwsExactly(t, () => new MemoryUSMDevice(exporter(x, { syclobj: queue })), Error, 'ERR_SUAI_FOREIGN_POINTER');
  }
  // ...and copies between the two contexts are staged correctly.
  x.copyFromHost(pattern(64, 229));
  m.copyFromDevice(x);
  t.deepEqual(m.copyToHost(), pattern(64, 229));
  freeAll(m, x);
});

const NON_CUDA = DEVICES.filter((d) => d.backend !== 'cuda');

gpuTest('copies between the GPU and a non-CUDA device, both ways', (t, device) => {
  for (const other of NON_CUDA) {
    const g = new MemoryUSMDevice(MiB, { queue: queueFor(device) });
    const c = new MemoryUSMShared(MiB, { queue: queueFor(other) });
    c.copyFromHost(pattern(MiB, 233));
    g.copyFromDevice(c);
    t.deepEqual(g.copyToHost(), pattern(MiB, 233), `${other.filterString} -> ${device.filterString}`);
    g.copyFromHost(pattern(MiB, 239));
    c.copyFromDevice(g);
    t.deepEqual(new Uint8Array(c.buffer), pattern(MiB, 239), `${device.filterString} -> ${other.filterString}`);
    const converted = new MemoryUSMHost(g, { copy: true, queue: queueFor(other) });
    t.deepEqual(converted.copyToHost(), pattern(MiB, 239), 'copy: true across providers');
    freeAll(g, c, converted);
  }
}, [NON_CUDA.length > 0, 'needs a non-CUDA device (e.g. opencl:cpu:0) too']);
