// Devices, contexts and queues: the subset memory needs, and copies between contexts.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  KINDS,
  DEVICES,
  HAS_DEVICE,
  MemoryUSMDevice,
  MemoryUSMShared,
  SyclDevice,
  SyclContext,
  SyclQueue,
  SyclDeviceCreationError,
  SyclQueueCreationError,
  getDevices,
  eachDevice,
  eachDeviceKind,
  withDefaultDevice,
  queueFor,
  pattern,
  freeAll,
} from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';

const INDEX = fileURLToPath(new URL('../index.js', import.meta.url));
const DEVICE_TYPES = ['cpu', 'gpu', 'accelerator', 'custom', 'unknown'];

// ---------------------------------------------------------------------------------------
// getDevices
// ---------------------------------------------------------------------------------------

test('getDevices() lists SyclDevice objects, each once, each with a unique filter string', (t) => {
  const devices = getDevices();
  t.true(Array.isArray(devices));
  for (const d of devices) t.true(d instanceof SyclDevice);
  const filters = devices.map((d) => d.filterString);
  t.is(new Set(filters).size, filters.length, `duplicate filter strings: ${filters.join(', ')}`);
  for (let i = 0; i < devices.length; i++) {
    for (let j = i + 1; j < devices.length; j++) t.false(devices[i].equals(devices[j]), `${filters[i]} listed twice`);
  }
  t.log(`devices: ${filters.join(', ') || '(none)'}`);
});

for (const type of ['cpu', 'gpu']) {
  test(`getDevices('${type}') lists exactly the ${type} devices of getDevices()`, (t) => {
    const some = getDevices(type);
    t.true(Array.isArray(some));
    for (const d of some) t.is(d.deviceType, type);
    t.deepEqual(
      some.map((d) => d.filterString),
      DEVICES.filter((d) => d.deviceType === type).map((d) => d.filterString),
    );
  });
}

eachDevice(test, 'getDevices(filterString) and getDevices(backend) find the device', (t, device) => {
  const exact = getDevices(device.filterString);
  t.is(exact.length, 1);
  t.true(exact[0].equals(device));
  const byBackend = getDevices(device.backend);
  t.true(byBackend.some((d) => d.equals(device)));
  for (const d of byBackend) t.is(d.backend, device.backend);
  const byBoth = getDevices(`${device.backend}:${device.deviceType}`);
  t.true(byBoth.some((d) => d.equals(device)));
});

test('getDevices with a malformed filter is a TypeError ERR_INVALID_FILTER', (t) => {
  for (const filter of ['foo:bar', 'cpu:gpu', 'opencl:cpu:0:1', 'opencl:cpu:-1', '']) {
    throwsExactly(t, () => getDevices(filter), TypeError, 'ERR_INVALID_FILTER', JSON.stringify(filter));
  }
  throwsExactly(t, () => getDevices(5), TypeError, 'ERR_INVALID_ARG_TYPE');
});

test('getDevices of a filter that matches nothing is an empty list, not an error', (t) => {
  t.deepEqual(getDevices('hip:accelerator'), []);
  t.deepEqual(getDevices('opencl:gpu:99'), []);
});

// ---------------------------------------------------------------------------------------
// SyclDevice
// ---------------------------------------------------------------------------------------

eachDevice(test, 'SyclDevice properties have the right types and plausible values', (t, device) => {
  t.is(typeof device.name, 'string');
  t.true(device.name.length > 0);
  t.is(typeof device.vendor, 'string');
  t.true(device.vendor.length > 0);
  t.is(typeof device.backend, 'string');
  t.regex(device.backend, /^(opencl|level_zero|cuda|hip|native_cpu)$/);
  t.true(DEVICE_TYPES.includes(device.deviceType), device.deviceType);
  t.is(typeof device.filterString, 'string');
  t.regex(device.filterString, /^[a-z_]+:(cpu|gpu|accelerator):\d+$/);
  t.true(device.filterString.startsWith(`${device.backend}:${device.deviceType}:`));
  t.is(typeof device.driverVersion, 'string');
  t.true(device.driverVersion.length > 0);
  t.is(typeof device.globalMemSize, 'number');
  t.true(Number.isSafeInteger(device.globalMemSize) && device.globalMemSize > 0);
  t.is(typeof device.maxMemAllocSize, 'number');
  t.true(Number.isSafeInteger(device.maxMemAllocSize) && device.maxMemAllocSize > 0);
  t.true(device.maxMemAllocSize <= device.globalMemSize * 2, 'a single allocation is not wildly larger than memory');
  t.true(device.hasAspect('usm_device_allocations'), 'a device that serves USM device memory says so');
  t.is(typeof device.hasAspect('usm_shared_allocations'), 'boolean');
  t.false(device.hasAspect('no_such_aspect'));
  t.true(Array.isArray(device.aspects));
  t.is(device.hasAspect('usm_host_allocations'), device.aspects.includes('usm_host_allocations'));
  if (device.deviceType === 'cpu' || device.deviceType === 'gpu') t.true(device.aspects.includes(device.deviceType));
});

eachDevice(test, 'new SyclDevice(d.filterString) is the same device', (t, device) => {
  const again = new SyclDevice(device.filterString);
  t.true(again.equals(device));
  t.true(device.equals(again));
  t.not(again, device);
  t.is(again.name, device.name);
  t.is(again.filterString, device.filterString);
  t.true(new SyclDevice(device.filterString.toUpperCase()).equals(device), 'filter strings ignore case, as DPC++');
});

withDefaultDevice(test, 'new SyclDevice() is the default device, one of getDevices()', (t) => {
  const d = new SyclDevice();
  t.true(DEVICES.some((x) => x.equals(d)));
  t.true(new SyclDevice(undefined).equals(d));
  if (DEVICES.some((x) => x.deviceType === 'gpu')) t.is(d.deviceType, 'gpu');
});

// dpctl raises SyclDeviceCreationError for a filter string it cannot understand.
test("new SyclDevice('foo:bar') is a SyclDeviceCreationError, as in dpctl", (t) => {
  const err = throwsExactly(t, () => new SyclDevice('foo:bar'), SyclDeviceCreationError, 'ERR_DEVICE_NOT_FOUND');
  t.is(err?.message, "Device filter selector string 'foo:bar' is not understood.");
  throwsExactly(t, () => new SyclDevice(42), TypeError, 'ERR_INVALID_ARG_TYPE');
});

test("new SyclDevice('cuda:gpu:7') where there is no such device is a SyclDeviceCreationError", (t) => {
  if (DEVICES.some((d) => d.filterString === 'cuda:gpu:7')) {
    t.log('cuda:gpu:7 exists here; using cuda:gpu:99 instead');
  }
  const filter = DEVICES.some((d) => d.filterString === 'cuda:gpu:7') ? 'cuda:gpu:99' : 'cuda:gpu:7';
  const err = throwsExactly(t, () => new SyclDevice(filter), SyclDeviceCreationError, 'ERR_DEVICE_NOT_FOUND');
  t.true(err instanceof Error);
  t.is(err?.name, 'SyclDeviceCreationError');
  t.true(err?.message.includes(filter), 'the message names the filter');
});

// ---------------------------------------------------------------------------------------
// SyclContext
// ---------------------------------------------------------------------------------------

withDefaultDevice(test, "new SyclContext() is the default device's default context", (t) => {
  const ctx = new SyclContext();
  const devices = ctx.devices;
  t.true(Array.isArray(devices));
  t.true(devices.length >= 1);
  t.is(ctx.deviceCount, devices.length);
  t.true(devices.some((d) => d.equals(new SyclDevice())));
  t.true(ctx.equals(new SyclContext()), 'the same context every time');
  t.true(ctx.equals(new SyclQueue().syclContext));
  t.true(ctx.equals(new MemoryUSMShared(8).syclContext), 'default allocations live in it');
});

eachDevice(test, 'new SyclContext(device) makes a new context of its own', (t, device) => {
  const a = new SyclContext(device);
  const b = new SyclContext(device);
  const dflt = queueFor(device).syclContext;
  t.false(a.equals(dflt), 'not the default context');
  t.false(a.equals(b), 'a new one each time');
  t.true(a.equals(a));
  t.is(a.devices.length, 1);
  t.is(a.deviceCount, 1, "dpctl's device_count");
  t.true(a.devices[0].equals(device));
  t.true(new SyclContext(device.filterString).devices[0].equals(device), 'a filter string works too');
});

test('new SyclContext with a bad argument', (t) => {
  throwsExactly(t, () => new SyclContext('foo:bar'), SyclDeviceCreationError, 'ERR_DEVICE_NOT_FOUND');
  throwsExactly(t, () => new SyclContext(42), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => new SyclContext('cuda:gpu:99'), SyclDeviceCreationError, 'ERR_DEVICE_NOT_FOUND');
});

// ---------------------------------------------------------------------------------------
// SyclQueue
// ---------------------------------------------------------------------------------------

eachDevice(test, 'SyclQueue(device), SyclQueue(filter) and SyclQueue(ctx, dev)', (t, device) => {
  const q1 = new SyclQueue(device);
  t.true(q1.syclDevice.equals(device));
  const q2 = new SyclQueue(device.filterString);
  t.true(q2.syclDevice.equals(device));
  t.true(q1.syclContext.equals(q2.syclContext), 'queues on one device share its default context');
  t.false(q1.equals(q2), 'two new queues are two queues');
  t.true(q1.equals(q1));
  const ctx = new SyclContext(device);
  const q3 = new SyclQueue(ctx, device);
  t.true(q3.syclContext.equals(ctx));
  t.true(q3.syclDevice.equals(device));
  const q4 = new SyclQueue(ctx);
  t.true(q4.syclContext.equals(ctx), "a context alone: its first device");
  t.true(q4.syclDevice.equals(ctx.devices[0]));
  t.is(q1.wait(), undefined);
});

withDefaultDevice(test, 'new SyclQueue() is on the default device', (t) => {
  const q = new SyclQueue();
  t.true(q.syclDevice.equals(new SyclDevice()));
  t.true(q.syclContext.equals(new SyclContext()));
});

test("new SyclQueue('gpu:9') is a SyclQueueCreationError", (t) => {
  const err = throwsExactly(t, () => new SyclQueue('gpu:9'), SyclQueueCreationError, 'ERR_QUEUE_CREATION');
  t.is(err?.name, 'SyclQueueCreationError');
});

test('new SyclQueue of a device that does not exist is a SyclQueueCreationError, however named', (t) => {
  throwsExactly(t, () => new SyclQueue('cuda:gpu:99'), SyclQueueCreationError, 'ERR_QUEUE_CREATION');
  throwsExactly(t, () => new SyclQueue('opencl:accelerator:42'), SyclQueueCreationError, 'ERR_QUEUE_CREATION');
});

// dpctl: SyclQueue('foo:bar') raises SyclQueueCreationError ("Device filter selector
// string 'foo:bar' is not understood."); an argument of the wrong type is a TypeError.
test('new SyclQueue with a bad filter is a SyclQueueCreationError, with a bad type a TypeError', (t) => {
  const err = throwsExactly(t, () => new SyclQueue('foo:bar'), SyclQueueCreationError, 'ERR_QUEUE_CREATION');
  t.is(err?.message, "Device filter selector string 'foo:bar' is not understood.");
  throwsExactly(t, () => new SyclQueue(5), TypeError, 'ERR_INVALID_ARG_TYPE');
  if (HAS_DEVICE) throwsExactly(t, () => new SyclQueue(new SyclContext(), 'not a device object or filter'), SyclQueueCreationError, 'ERR_QUEUE_CREATION');
  if (HAS_DEVICE) throwsExactly(t, () => new SyclQueue(new SyclContext(), 5), TypeError, 'ERR_INVALID_ARG_TYPE');
});

if (DEVICES.length >= 2) {
  eachDevice(test, 'a queue in a context that does not hold the device is refused', (t, device) => {
    const other = DEVICES.find((d) => !d.equals(device));
    const ctx = new SyclContext(device);
    throwsExactly(t, () => new SyclQueue(ctx, other), SyclQueueCreationError, 'ERR_QUEUE_CREATION');
  });
} else {
  test.skip(`a queue in a context that does not hold the device is refused [needs two devices, found ${DEVICES.length}: skipped]`, () => {});
}

// ---------------------------------------------------------------------------------------
// Pointer kinds in other contexts; copies between contexts
// ---------------------------------------------------------------------------------------

eachDeviceKind(test, 'getUsmType(another context) is unknown or the real kind (CPU OpenCL may not tell)', (t, { device, kind, Class, enumValue }) => {
  const m = new Class(64, { queue: queueFor(device) });
  const other = new SyclContext(device);
  const seen = m.getUsmType(other);
  t.true(['unknown', kind].includes(seen), `got ${seen}`);
  t.is(m.getUsmTypeEnum(other), seen === 'unknown' ? 0 : enumValue);
  const viaQueue = m.getUsmType(new SyclQueue(other, device));
  t.is(viaQueue, seen, 'a queue of that context answers the same');
  t.is(m.getUsmType(), kind, 'in its own context the kind is known');
  t.log(`${kind} memory seen from a new context: ${seen}`);
  m.free();
});

for (const src of KINDS) {
  for (const dst of KINDS) {
    eachDevice(test, `copyFromDevice between two contexts, both ways: ${src.kind} <-> ${dst.kind}`, (t, device) => {
      const separate = new SyclQueue(new SyclContext(device));
      const dflt = queueFor(device);
      t.false(separate.syclContext.equals(dflt.syclContext));
      const a = new src.Class(4096 + 3, { queue: separate });
      const b = new dst.Class(4096 + 3, { queue: dflt });
      a.copyFromHost(pattern(4099, 101));
      b.memset(0);
      b.copyFromDevice(a);
      t.deepEqual(b.copyToHost(), pattern(4099, 101), 'separate context -> default context');
      b.copyFromHost(pattern(4099, 103));
      a.memset(0);
      a.copyFromDevice(b);
      t.deepEqual(a.copyToHost(), pattern(4099, 103), 'default context -> separate context');
      freeAll(a, b);
    });
  }
}

eachDevice(test, 'copy: true between contexts stages through the host', (t, device) => {
  const separate = new SyclQueue(new SyclContext(device));
  const from = new MemoryUSMShared(1000, { queue: separate });
  from.copyFromHost(pattern(1000, 107));
  const to = new MemoryUSMDevice(from, { copy: true, queue: queueFor(device) });
  t.true(to.syclContext.equals(queueFor(device).syclContext));
  t.deepEqual(to.copyToHost(), pattern(1000, 107));
  freeAll(from, to);
});

// ---------------------------------------------------------------------------------------
// ONEAPI_DEVICE_SELECTOR
// ---------------------------------------------------------------------------------------

eachDevice(test, 'ONEAPI_DEVICE_SELECTOR limits the devices a new process sees', (t, device) => {
  const script = `const m = require(${JSON.stringify(INDEX)}); console.log(JSON.stringify(m.getDevices().map((d) => [d.backend, d.deviceType])));`;
  const selector = `${device.backend}:${device.deviceType}`;
  const r = spawnSync(process.execPath, ['-e', script], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, ONEAPI_DEVICE_SELECTOR: selector },
  });
  t.is(r.status, 0, r.stderr);
  const seen = JSON.parse(r.stdout.trim().split('\n').pop());
  const expected = DEVICES.filter((d) => d.backend === device.backend && d.deviceType === device.deviceType).length;
  t.is(seen.length, expected, `with ONEAPI_DEVICE_SELECTOR=${selector}: ${JSON.stringify(seen)}`);
  for (const [backend, type] of seen) {
    t.is(backend, device.backend);
    t.is(type, device.deviceType);
  }
});
