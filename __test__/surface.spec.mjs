// The JS surface: plain classes with one base, coded errors for every misuse (a foreign
// `this`, cloning), readable display, and error classes that carry their codes.
import test from 'ava';
import { inspect } from 'node:util';
import { MessageChannel } from 'node:worker_threads';
import { addon, KINDS, eachDeviceKind, withDefaultDevice, queueFor, DEVICES } from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';

const { _Memory, ErrorCode, USMAllocationError, SyclQueueCreationError, SyclDeviceCreationError, SyclQueue, SyclContext } = addon;

test('_Memory is the one base class of the three memory classes and cannot be constructed', (t) => {
  for (const { Class } of KINDS) t.is(Object.getPrototypeOf(Class), _Memory);
  throwsExactly(t, () => new _Memory(), TypeError, 'ERR_CONSTRUCT_CALL_REQUIRED');
});

test('the error classes carry their own code unless given another, and ErrorCode is frozen', (t) => {
  t.is(new USMAllocationError('x').code, 'ERR_USM_ALLOCATION');
  t.is(new SyclQueueCreationError('x').code, 'ERR_QUEUE_CREATION');
  t.is(new SyclDeviceCreationError('x').code, 'ERR_DEVICE_NOT_FOUND');
  t.is(new USMAllocationError('x', { code: 'ERR_CUDA_DRIVER' }).code, 'ERR_CUDA_DRIVER');
  t.is(new USMAllocationError('x', { cause: 5 }).cause, 5);
  t.true(Object.isFrozen(ErrorCode));
  t.is(ErrorCode.UsmFreed, 'ERR_USM_FREED');
});

eachDeviceKind(test, 'every member called on a foreign this is a coded TypeError', (t, { Class, device }) => {
  const m = new Class(16, { queue: queueFor(device) });
  const members = Object.getOwnPropertyNames(_Memory.prototype).filter((name) => name !== 'constructor');
  t.true(members.length >= 20, members.join(', '));
  for (const name of members) {
    const descriptor = Object.getOwnPropertyDescriptor(_Memory.prototype, name);
    const call = descriptor.get ?? descriptor.value;
    for (const receiver of [undefined, {}, 5, Object.create(Class.prototype)]) {
      throwsExactly(t, () => Reflect.apply(call, receiver, []), TypeError, 'ERR_INVALID_THIS', `${name} on ${typeof receiver}`);
    }
  }
  const { free, copyToHost } = m;
  throwsExactly(t, () => free(), TypeError, 'ERR_INVALID_THIS');
  throwsExactly(t, () => copyToHost(), TypeError, 'ERR_INVALID_THIS');
  m.free();
});

withDefaultDevice(test, 'device, context and queue members on a foreign this are coded TypeErrors', (t) => {
  for (const Class of [addon.SyclDevice, SyclContext, SyclQueue]) {
    for (const name of Object.getOwnPropertyNames(Class.prototype).filter((n) => n !== 'constructor')) {
      const descriptor = Object.getOwnPropertyDescriptor(Class.prototype, name);
      throwsExactly(t, () => Reflect.apply(descriptor.get ?? descriptor.value, {}, [{}]), TypeError, 'ERR_INVALID_THIS', `${Class.name}.${name}`);
    }
  }
});

eachDeviceKind(test, 'structuredClone and postMessage of a memory object throw ERR_NOT_CLONEABLE', (t, { Class, device }) => {
  const m = new Class(16, { queue: queueFor(device) });
  throwsExactly(t, () => structuredClone(m), TypeError, 'ERR_NOT_CLONEABLE');
  const { port1, port2 } = new MessageChannel();
  try {
    throwsExactly(t, () => port1.postMessage(m), TypeError, 'ERR_NOT_CLONEABLE');
    throwsExactly(t, () => port1.postMessage({ nested: [m] }), TypeError, 'ERR_NOT_CLONEABLE');
  } finally {
    port1.close();
    port2.close();
  }
  m.free();
});

withDefaultDevice(test, 'devices, contexts and queues are not cloneable either, and inspect by filter string and name', (t) => {
  const q = new SyclQueue();
  const d = q.syclDevice;
  for (const v of [q, d, q.syclContext]) throwsExactly(t, () => structuredClone(v), TypeError, 'ERR_NOT_CLONEABLE');
  t.is(inspect(d), `SyclDevice { filterString: '${d.filterString}', name: '${d.name}' }`);
  t.is(inspect(q), `SyclQueue { device: '${d.filterString}', name: '${d.name}' }`);
  t.is(inspect(q.syclContext), `SyclContext { devices: ['${d.filterString}'] }`);
  t.is(inspect([d], { breakLength: Infinity }), `[ SyclDevice { filterString: '${d.filterString}', name: '${d.name}' } ]`);
});

eachDeviceKind(test, 'a memory object inspects as dpctl reprs it, also once freed', (t, { Class, device, kind }) => {
  const m = new Class(16, { queue: queueFor(device) });
  t.is(inspect(m), `<SYCL(TM) USM-${kind} allocation of 16 bytes at 0x${m.pointer.toString(16)}>`);
  m.free();
  t.is(inspect(m), `<SYCL(TM) USM-${kind} allocation (freed)>`);
});

withDefaultDevice(test, 'JSON.stringify writes the repr of every object (structured clone stays refused)', (t) => {
  const q = new SyclQueue();
  const m = new addon.MemoryUSMHost(8, { queue: q });
  t.is(JSON.stringify({ q, m, d: q.syclDevice, c: q.syclContext }), JSON.stringify({ q: String(q), m: String(m), d: String(q.syclDevice), c: String(q.syclContext) }));
  m.free();
});

test('the facts of a device are fields: aspects is a fresh array each read', (t) => {
  if (DEVICES.length === 0) return t.pass();
  const d = DEVICES[0];
  const a = d.aspects;
  a.push('not-an-aspect');
  t.false(d.aspects.includes('not-an-aspect'));
  t.false(d.hasAspect('not-an-aspect'));
});
