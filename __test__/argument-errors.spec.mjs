// Errors a new user meets: an async method finds its argument errors before any work
// starts and reports them exactly as the synchronous method does (code, class and
// message), and the common mistakes get errors that say what to do instead.
import test from 'ava';
import {
  addon,
  KINDS,
  MemoryUSMDevice,
  MemoryUSMHost,
  MemoryUSMShared,
  SyclContext,
  eachDevice,
  eachDeviceKind,
  exporter,
  queueFor,
  pattern,
  freeAll,
} from './helpers/addon.mjs';

const { poolStats, poolTrim } = addon;

/** The error `fn` throws, or fails the test. */
function thrown(t, fn) {
  try {
    fn();
  } catch (error) {
    return error;
  }
  t.fail('it did not throw');
  return null;
}

/** The error the Promise `fn()` returns rejects with; `fn` itself must not throw. */
async function rejection(t, fn) {
  let promise;
  try {
    promise = fn();
  } catch (error) {
    t.fail(`it threw at the call instead of rejecting: ${error.message}`);
    return null;
  }
  t.true(promise instanceof Promise);
  try {
    await promise;
  } catch (error) {
    return error;
  }
  t.fail('it resolved');
  return null;
}

/** The same error: class, code and message. */
function same(t, asyncError, syncError, what) {
  t.truthy(syncError, `${what}: the synchronous method throws`);
  t.is(asyncError?.constructor, syncError?.constructor, `${what}: the class`);
  t.is(asyncError?.code, syncError?.code, `${what}: the code`);
  t.is(asyncError?.message, syncError?.message, `${what}: the message`);
}

/** Read-only memory over `base`: a view from a read-only interface. */
const readOnlyView = (base) => new base.constructor(exporter(base, { data: [base.pointer, true] }));

eachDeviceKind(test, 'copyToHostAsync into a short destination rejects as copyToHost throws, and writes nothing', async (t, { device, Class }) => {
  const m = new Class(64, { queue: queueFor(device) });
  m.copyFromHost(pattern(64, 5));
  // A plain ArrayBuffer (copied through the task's own memory), a SharedArrayBuffer (copied
  // directly), and a view of USM host memory (pinned, copied directly).
  const usm = new MemoryUSMHost(63, { queue: queueFor(device) });
  const destinations = [new Uint8Array(63), new Uint8Array(new SharedArrayBuffer(63)), new Uint8Array(usm.buffer)];
  for (const dst of destinations) {
    dst.fill(0xee);
    const error = await rejection(t, () => m.copyToHostAsync(dst));
    same(t, error, thrown(t, () => m.copyToHost(dst)), `a ${dst.buffer.constructor.name} of 63 bytes`);
    t.is(error?.code, 'ERR_DESTINATION_TOO_SMALL');
    t.regex(error?.message ?? '', /too small to accommodate 64 bytes \(it has 63\)/);
    t.true(dst.every((b) => b === 0xee), 'nothing was written');
  }
  freeAll(m, usm);
});

eachDeviceKind(test, 'copyFromHostAsync of a long source rejects as copyFromHost throws, before copying anything', async (t, { device, Class }) => {
  const m = new Class(64, { queue: queueFor(device) });
  const before = pattern(64, 7);
  m.copyFromHost(before);
  for (const src of [pattern(65, 9), new Uint8Array(new SharedArrayBuffer(65)).fill(3)]) {
    const error = await rejection(t, () => m.copyFromHostAsync(src));
    same(t, error, thrown(t, () => m.copyFromHost(src)), `a ${src.buffer.constructor.name} of 65 bytes`);
    t.is(error?.code, 'ERR_SOURCE_TOO_LARGE');
    t.deepEqual(m.copyToHost(), before, 'the memory is unchanged');
  }
  m.free();
});

eachDevice(test.serial, 'copyFromHostAsync of a long plain source makes no copy of it before rejecting', async (t, device) => {
  // A plain ArrayBuffer source is copied into scratch memory of the task's own when the
  // task starts; an argument error must be found before that copy is made.
  const m = new MemoryUSMDevice(4096, { queue: queueFor(device) });
  const src = new Uint8Array(8 << 20);
  poolTrim();
  const idle = poolStats().scratch.bytes;
  const error = await rejection(t, () => m.copyFromHostAsync(src));
  t.is(error?.code, 'ERR_SOURCE_TOO_LARGE');
  t.true(poolStats().scratch.bytes <= idle, `no scratch was made for the source (${poolStats().scratch.bytes} bytes idle)`);
  m.free();
});

eachDeviceKind(test, 'copyFromDeviceAsync of larger memory rejects as copyFromDevice throws', async (t, { device, Class }) => {
  const queue = queueFor(device);
  const m = new Class(64, { queue });
  const before = pattern(64, 11);
  m.copyFromHost(before);
  const larger = new MemoryUSMDevice(65, { queue });
  const error = await rejection(t, () => m.copyFromDeviceAsync(larger));
  same(t, error, thrown(t, () => m.copyFromDevice(larger)), 'a source of 65 bytes');
  t.is(error?.code, 'ERR_SOURCE_TOO_LARGE');
  t.deepEqual(m.copyToHost(), before, 'the memory is unchanged');
  freeAll(m, larger);
});

eachDeviceKind(test, 'writes into read-only memory reject as the synchronous writes throw', async (t, { device, Class }) => {
  const base = new Class(64, { queue: queueFor(device) });
  const before = pattern(64, 13);
  base.copyFromHost(before);
  const view = readOnlyView(base);
  const source = new MemoryUSMDevice(16, { queue: queueFor(device) });
  const writes = [
    ['copyFromHostAsync', () => view.copyFromHostAsync(new Uint8Array(8)), () => view.copyFromHost(new Uint8Array(8))],
    ['memsetAsync', () => view.memsetAsync(1), () => view.memset(1)],
    ['copyFromDeviceAsync', () => view.copyFromDeviceAsync(source), () => view.copyFromDevice(source)],
  ];
  for (const [name, async, sync] of writes) {
    const error = await rejection(t, async);
    same(t, error, thrown(t, sync), name);
    t.is(error?.code, 'ERR_READ_ONLY', name);
  }
  t.deepEqual(base.copyToHost(), before, 'the memory is unchanged');
  t.deepEqual(await view.copyToHostAsync(), before, 'reading read-only memory works');
  freeAll(view, base, source);
});

eachDevice(test, 'a type error or use after free() of an async method still throws at the call, as the synchronous one', (t, device) => {
  const m = new MemoryUSMShared(64, { queue: queueFor(device) });
  for (const [async, sync] of [
    [() => m.copyToHostAsync('x'), () => m.copyToHost('x')],
    [() => m.copyFromHostAsync([1, 2]), () => m.copyFromHost([1, 2])],
    [() => m.memsetAsync(256), () => m.memset(256)],
    [() => m.copyFromDeviceAsync({}), () => m.copyFromDevice({})],
  ]) {
    same(t, thrown(t, async), thrown(t, sync), String(async));
  }
  m.free();
  same(t, thrown(t, () => m.copyToHostAsync()), thrown(t, () => m.copyToHost()), 'after free()');
});

// ---- errors that say what to do ----

eachDevice(test, 'an allocation beyond the device\'s maxMemAllocSize names the limit and that it is the device\'s', (t, device) => {
  const queue = queueFor(device);
  const over = device.maxMemAllocSize + 4096;
  // Host memory only off CUDA: pinning that much host memory would be tried there, not refused.
  const kinds = device.backend === 'cuda' ? [MemoryUSMDevice] : [MemoryUSMHost, MemoryUSMDevice];
  for (const Class of kinds) {
    const error = thrown(t, () => new Class(over, { queue }));
    t.is(error?.code, 'ERR_USM_ALLOCATION', Class.name);
    t.true(error instanceof addon.USMAllocationError);
    t.true(error?.message.includes(`more than the device's maxMemAllocSize, ${device.maxMemAllocSize} bytes`), error?.message);
  }
});

eachDevice(test, 'a constructor given host data says that memory is allocated by size and filled with copyFromHost', (t, device) => {
  const queue = queueFor(device);
  for (const { Class } of KINDS) {
    for (const data of [new Uint8Array(8), new ArrayBuffer(8), new SharedArrayBuffer(8), new DataView(new ArrayBuffer(8)), Buffer.alloc(8)]) {
      const error = thrown(t, () => new Class(data, { queue }));
      t.true(error instanceof TypeError);
      t.is(error?.code, 'ERR_NOT_USM');
      t.true(error?.message.includes(`new ${Class.name}(src.byteLength); m.copyFromHost(src)`), error?.message);
    }
  }
});

eachDevice(test, "dpctl's positional alignment suggests the option", (t, device) => {
  for (const alignment of [16, 16n]) {
    const error = thrown(t, () => new MemoryUSMShared(1024, alignment));
    t.true(error instanceof TypeError);
    t.is(error?.code, 'ERR_INVALID_ARG_TYPE');
    t.true(error?.message.includes(`pass { alignment: ${alignment}${typeof alignment === 'bigint' ? 'n' : ''} }`), error?.message);
  }
  const m = new MemoryUSMShared(1024, { alignment: 16, queue: queueFor(device) });
  t.is(m.pointer % 16n, 0n);
  m.free();
});

eachDevice(test, "a foreign pointer's error speaks of the JS syclobj, not of Python", (t, device) => {
  const queue = queueFor(device);
  const foreign = (syclobj) => ({ __sycl_usm_array_interface__: { data: [0x10000n, false], shape: [16], typestr: '|u1', version: 1, syclobj } });
  for (const [syclobj, named] of [
    [queue, 'a SyclQueue'],
    [new SyclContext(device), 'a SyclContext'],
  ]) {
    const error = thrown(t, () => new MemoryUSMDevice(foreign(syclobj)));
    t.is(error?.code, 'ERR_SUAI_FOREIGN_POINTER');
    t.notRegex(error?.message ?? '', /dict\(/);
    t.true(error?.message.includes(`its 'data' pointer 0x10000 is not USM memory of the SyclContext that its 'syclobj' (${named}) names`), error?.message);
  }
});
