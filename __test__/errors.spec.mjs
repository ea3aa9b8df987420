// Every argument and runtime error path of the memory classes, with its class and code.
// (Errors of the interface parser live in interface.spec.mjs, of devices in devices.spec.mjs.)
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  KINDS,
  MemoryUSMDevice,
  MemoryUSMShared,
  SyclContext,
  USMAllocationError,
  asUsmMemory,
  eachDevice,
  eachDeviceKind,
  queueFor,
  freeAll,
} from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';

const INDEX = fileURLToPath(new URL('../index.js', import.meta.url));

// ---------------------------------------------------------------------------------------
// Sizes
// ---------------------------------------------------------------------------------------

const BAD_SIZES = [
  // [value, class, code]
  [0, RangeError, 'ERR_INVALID_SIZE'],
  [-1, RangeError, 'ERR_INVALID_SIZE'],
  [1.5, RangeError, 'ERR_INVALID_SIZE'],
  [NaN, RangeError, 'ERR_INVALID_SIZE'],
  [Infinity, RangeError, 'ERR_INVALID_SIZE'],
  [-Infinity, RangeError, 'ERR_INVALID_SIZE'],
  [2 ** 53, RangeError, 'ERR_INVALID_SIZE'], // not a safe integer
  [0n, RangeError, 'ERR_INVALID_SIZE'],
  [-1n, RangeError, 'ERR_INVALID_SIZE'],
  [2n ** 64n, RangeError, 'ERR_INVALID_SIZE'],
  ['8', TypeError, 'ERR_INVALID_ARG_TYPE'],
  [true, TypeError, 'ERR_INVALID_ARG_TYPE'],
  [null, TypeError, 'ERR_INVALID_ARG_TYPE'],
  [undefined, TypeError, 'ERR_INVALID_ARG_TYPE'],
  [Symbol('x'), TypeError, 'ERR_INVALID_ARG_TYPE'],
];

for (const [value, Class, code] of BAD_SIZES) {
  eachDeviceKind(test, `nbytes ${typeof value === 'bigint' ? `${value}n` : String(value)} is a ${Class.name} ${code}`, (t, { device, Class: Memory }) => {
    throwsExactly(t, () => new Memory(value, { queue: queueFor(device) }), Class, code);
  });
}

eachDeviceKind(test, 'no argument at all is a TypeError', (t, { Class }) => {
  throwsExactly(t, () => new Class(), TypeError, 'ERR_INVALID_ARG_TYPE');
});

// Each in a child process of its own: a constructor called without `new` must not wrap
// (and so poison) the global object of the test worker.
for (const name of ['MemoryUSMDevice', 'MemoryUSMHost', 'MemoryUSMShared', 'SyclDevice', 'SyclContext', 'SyclQueue']) {
  test(`calling ${name} without new is a TypeError and leaves globalThis alone`, (t) => {
    const script = `
      const m = require(${JSON.stringify(INDEX)});
      const C = m[${JSON.stringify(name)}] ?? m[${JSON.stringify(name.replace('USM', 'Usm'))}];
      let out;
      try { const r = ${name.startsWith('Memory') ? 'C(8)' : 'C()'}; out = 'returned ' + (r === globalThis ? 'globalThis' : typeof r); }
      catch (e) { out = e instanceof TypeError ? 'TypeError' : 'threw ' + e.constructor.name + ': ' + e.message; }
      console.log(JSON.stringify(out));`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    t.is(r.status, 0, r.stderr);
    t.is(JSON.parse(r.stdout.trim().split('\n').pop()), 'TypeError');
  });
}

// ---------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------

const BAD_ALIGNMENTS = [
  [3, RangeError, 'ERR_INVALID_ALIGNMENT'],
  [24, RangeError, 'ERR_INVALID_ALIGNMENT'],
  [-1, RangeError, 'ERR_INVALID_ALIGNMENT'],
  [1.5, RangeError, 'ERR_INVALID_ALIGNMENT'],
  [NaN, RangeError, 'ERR_INVALID_ALIGNMENT'],
  [3n, RangeError, 'ERR_INVALID_ALIGNMENT'],
  ['x', TypeError, 'ERR_INVALID_ARG_TYPE'],
  ['64', TypeError, 'ERR_INVALID_ARG_TYPE'],
  [true, TypeError, 'ERR_INVALID_ARG_TYPE'],
  [{}, TypeError, 'ERR_INVALID_ARG_TYPE'],
];

for (const [value, Class, code] of BAD_ALIGNMENTS) {
  eachDeviceKind(test, `alignment ${typeof value === 'bigint' ? `${value}n` : JSON.stringify(value) ?? String(value)} is a ${Class.name} ${code}`, (t, { device, Class: Memory }) => {
    throwsExactly(t, () => new Memory(64, { alignment: value, queue: queueFor(device) }), Class, code);
  });
}

eachDeviceKind(test, 'an unknown option key is a TypeError', (t, { device, Class }) => {
  throwsExactly(t, () => new Class(8, { queue: queueFor(device), foo: 1 }), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => new Class(8, { Alignment: 8 }), TypeError, 'ERR_INVALID_ARG_TYPE', 'keys are case-sensitive');
});

eachDeviceKind(test, 'options that are not an object are a TypeError', (t, { Class }) => {
  for (const options of [5, 'queue', true, 1n]) {
    throwsExactly(t, () => new Class(8, options), TypeError, 'ERR_INVALID_ARG_TYPE', String(options));
  }
});

eachDeviceKind(test, 'a non-boolean copy is a TypeError, also when it would not be used', (t, { device, Class }) => {
  const queue = queueFor(device);
  const m = new Class(8, { queue });
  for (const copy of [1, 0, 'yes', {}, 1n]) {
    throwsExactly(t, () => new Class(8, { copy, queue }), TypeError, 'ERR_INVALID_ARG_TYPE', `copy ${String(copy)} with a size`);
    throwsExactly(t, () => new Class(m, { copy }), TypeError, 'ERR_INVALID_ARG_TYPE', `copy ${String(copy)} with a memory object`);
  }
  m.free();
});

eachDeviceKind(test, 'a queue that is not a SyclQueue is a TypeError', (t, { device, Class }) => {
  for (const queue of ['cpu', device.filterString, device, new SyclContext(device), 42, {}, { syclDevice: device }]) {
    throwsExactly(t, () => new Class(8, { queue }), TypeError, 'ERR_INVALID_ARG_TYPE', String(queue));
  }
});

eachDeviceKind(test, 'undefined and null options mean defaults', (t, { device, Class }) => {
  const q = queueFor(device);
  const a = new Class(8, { queue: q, alignment: undefined, copy: undefined });
  t.is(a.nbytes, 8);
  t.is(a.syclQueue, q);
  freeAll(a);
});

// ---------------------------------------------------------------------------------------
// Allocation failures
// ---------------------------------------------------------------------------------------

eachDeviceKind(test, 'a huge allocation (2**50 and 2n**62n) is a USMAllocationError, and the process carries on', (t, { device, Class }) => {
  const queue = queueFor(device);
  for (const n of [2 ** 50, 2n ** 62n]) {
    const err = throwsExactly(t, () => new Class(n, { queue }), USMAllocationError, 'ERR_USM_ALLOCATION', String(n));
    t.is(err?.name, 'USMAllocationError');
    t.true(err instanceof Error);
  }
  const ok = new Class(1024, { queue });
  ok.memset(1);
  t.true(ok.toBytes().every((b) => b === 1), 'allocation still works afterwards');
  ok.free();
});

// ---------------------------------------------------------------------------------------
// Not USM
// ---------------------------------------------------------------------------------------

const NOT_USM = [
  ['{}', () => ({})],
  ['an array', () => [1, 2]],
  ['a Uint8Array', () => new Uint8Array(8)],
  ['an ArrayBuffer', () => new ArrayBuffer(8)],
  ['a Date', () => new Date()],
  ['a function', () => function f() {}],
  ['a SyclQueue', (device) => queueFor(device)],
  ['a SyclDevice', (device) => device],
];

for (const [name, make] of NOT_USM) {
  eachDeviceKind(test, `${name} is not USM: ERR_NOT_USM from the constructor, copyFromDevice and asUsmMemory`, (t, { device, Class }) => {
    const value = make(device);
    throwsExactly(t, () => new Class(value), TypeError, 'ERR_NOT_USM', 'constructor');
    throwsExactly(t, () => new Class(value, { copy: true }), TypeError, 'ERR_NOT_USM', 'constructor with copy');
    const m = new Class(8, { queue: queueFor(device) });
    throwsExactly(t, () => m.copyFromDevice(value), TypeError, 'ERR_NOT_USM', 'copyFromDevice');
    throwsExactly(t, () => asUsmMemory(value), TypeError, 'ERR_NOT_USM', 'asUsmMemory');
    m.free();
  });
}

eachDeviceKind(test, 'primitives given to copyFromDevice and asUsmMemory are ERR_NOT_USM TypeErrors', (t, { device, Class }) => {
  const m = new Class(8, { queue: queueFor(device) });
  for (const value of [5, 'abc', null, undefined, true, 5n]) {
    throwsExactly(t, () => m.copyFromDevice(value), TypeError, 'ERR_NOT_USM', `copyFromDevice(${String(value)})`);
    throwsExactly(t, () => asUsmMemory(value), TypeError, 'ERR_NOT_USM', `asUsmMemory(${String(value)})`);
  }
  m.free();
});

eachDeviceKind(test, 'an interface getter that throws propagates its own error', (t, { device, Class }) => {
  const boom = new SyntaxError('from the getter');
  const obj = {
    get __sycl_usm_array_interface__() {
      throw boom;
    },
  };
  const m = new Class(8, { queue: queueFor(device) });
  t.is(t.throws(() => new Class(obj)), boom);
  t.is(t.throws(() => m.copyFromDevice(obj)), boom);
  t.is(t.throws(() => asUsmMemory(obj)), boom);
  m.free();
});

// ---------------------------------------------------------------------------------------
// Kind mismatch
// ---------------------------------------------------------------------------------------

for (const src of KINDS) {
  for (const dst of KINDS.filter((k) => k.kind !== src.kind)) {
    eachDevice(test, `new ${dst.kind}(${src.kind} memory) without copy is ERR_USM_KIND_MISMATCH`, (t, device) => {
      const from = new src.Class(16, { queue: queueFor(device) });
      const err = throwsExactly(t, () => new dst.Class(from), Error, 'ERR_USM_KIND_MISMATCH');
      t.regex(err?.message ?? '', new RegExp(`USM ${dst.kind} pointer`));
      t.regex(err?.message ?? '', new RegExp(`'${src.kind}'`), 'the message names the kind to use instead');
      throwsExactly(t, () => new dst.Class(from, { copy: false }), Error, 'ERR_USM_KIND_MISMATCH', 'copy: false');
      throwsExactly(t, () => new dst.Class({ __sycl_usm_array_interface__: from.__sycl_usm_array_interface__ }), Error, 'ERR_USM_KIND_MISMATCH', 'through the interface');
      from.free();
    });
  }
}

// ---------------------------------------------------------------------------------------
// Host copies
// ---------------------------------------------------------------------------------------

eachDeviceKind(test, 'copyToHost into a too-small destination is ERR_DESTINATION_TOO_SMALL and writes nothing', (t, { device, Class }) => {
  const m = new Class(16, { queue: queueFor(device) });
  m.memset(9);
  for (const dst of [new Uint8Array(15), new ArrayBuffer(8), new Float64Array(1), new DataView(new ArrayBuffer(20), 5), Buffer.alloc(0), new SharedArrayBuffer(4), new Uint8Array(32).subarray(20)]) {
    const before = Array.from(new Uint8Array(ArrayBuffer.isView(dst) ? dst.buffer : dst));
    throwsExactly(t, () => m.copyToHost(dst), RangeError, 'ERR_DESTINATION_TOO_SMALL', `${dst.constructor.name} of ${dst.byteLength}`);
    t.deepEqual(Array.from(new Uint8Array(ArrayBuffer.isView(dst) ? dst.buffer : dst)), before, 'nothing written');
  }
  m.free();
});

eachDeviceKind(test, 'copyFromHost of a too-large source is ERR_SOURCE_TOO_LARGE and writes nothing', (t, { device, Class }) => {
  const m = new Class(16, { queue: queueFor(device) });
  m.memset(9);
  for (const src of [new Uint8Array(17), new ArrayBuffer(32), new Float64Array(3), Buffer.alloc(100, 1), new SharedArrayBuffer(17)]) {
    throwsExactly(t, () => m.copyFromHost(src), RangeError, 'ERR_SOURCE_TOO_LARGE', `${src.constructor.name} of ${src.byteLength}`);
  }
  t.true(m.toBytes().every((b) => b === 9), 'nothing written');
  m.free();
});

eachDeviceKind(test, 'copyFromDevice of a larger source is ERR_SOURCE_TOO_LARGE', (t, { device, Class }) => {
  const queue = queueFor(device);
  const m = new Class(16, { queue });
  m.memset(9);
  const big = new MemoryUSMShared(17, { queue });
  throwsExactly(t, () => m.copyFromDevice(big), RangeError, 'ERR_SOURCE_TOO_LARGE');
  t.true(m.toBytes().every((b) => b === 9), 'nothing written');
  freeAll(m, big);
});

eachDeviceKind(test, 'host copies reject what is not a buffer', (t, { device, Class }) => {
  const m = new Class(8, { queue: queueFor(device) });
  for (const value of ['abcdefgh', 8, [1, 2, 3], {}, { byteLength: 8 }, m]) {
    throwsExactly(t, () => m.copyToHost(value), TypeError, 'ERR_INVALID_ARG_TYPE', `copyToHost(${String(value)})`);
    throwsExactly(t, () => m.copyFromHost(value), TypeError, 'ERR_INVALID_ARG_TYPE', `copyFromHost(${String(value)})`);
  }
  throwsExactly(t, () => m.copyFromHost(), TypeError, 'ERR_INVALID_ARG_TYPE', 'copyFromHost() needs a source');
  m.free();
});

// ---------------------------------------------------------------------------------------
// memset, getUsmType, buffer
// ---------------------------------------------------------------------------------------

eachDeviceKind(test, 'memset rejects values outside 0..255 and non-integers, and writes nothing', (t, { device, Class }) => {
  const m = new Class(8, { queue: queueFor(device) });
  m.memset(4);
  for (const value of [256, -1, 1.5, NaN, Infinity, 1000, 256n, -1n]) {
    throwsExactly(t, () => m.memset(value), RangeError, 'ERR_INVALID_FILL_VALUE', String(value));
  }
  for (const value of ['a', '1', true, {}, [1]]) {
    throwsExactly(t, () => m.memset(value), TypeError, 'ERR_INVALID_ARG_TYPE', JSON.stringify(value));
  }
  t.true(m.toBytes().every((b) => b === 4), 'nothing written');
  m.free();
});

eachDeviceKind(test, 'getUsmType and getUsmTypeEnum reject a syclobj that is not a queue or context', (t, { device, Class }) => {
  const m = new Class(8, { queue: queueFor(device) });
  for (const syclobj of [device, device.filterString, 'cpu', 42, {}, [], m]) {
    throwsExactly(t, () => m.getUsmType(syclobj), TypeError, 'ERR_INVALID_SYCLOBJ', `getUsmType(${String(syclobj)})`);
    throwsExactly(t, () => m.getUsmTypeEnum(syclobj), TypeError, 'ERR_INVALID_SYCLOBJ', `getUsmTypeEnum(${String(syclobj)})`);
  }
  t.is(m.getUsmType(undefined), m.getUsmType(), 'undefined means its own context');
  t.is(m.getUsmType(null), m.getUsmType(), 'null means its own context (dpctl None)');
  m.free();
});

eachDevice(test, 'buffer of device memory is ERR_NOT_HOST_ACCESSIBLE, every time', (t, device) => {
  const m = new MemoryUSMDevice(8, { queue: queueFor(device) });
  throwsExactly(t, () => m.buffer, Error, 'ERR_NOT_HOST_ACCESSIBLE');
  throwsExactly(t, () => m.buffer, Error, 'ERR_NOT_HOST_ACCESSIBLE', 'second read');
  // The memory is still usable through copies.
  m.memset(2);
  t.true(m.toBytes().every((b) => b === 2));
  m.free();
});

eachDeviceKind(test, 'nbytes, size and pointer are read-only (assignment throws in strict code)', (t, { device, Class }) => {
  const m = new Class(8, { queue: queueFor(device) });
  const pointer = m.pointer;
  t.throws(() => {
    m.nbytes = 5;
  }, { instanceOf: TypeError });
  t.throws(() => {
    m.size = 5;
  }, { instanceOf: TypeError });
  t.throws(() => {
    m.pointer = 5n;
  }, { instanceOf: TypeError });
  t.is(m.nbytes, 8);
  t.is(m.pointer, pointer);
  m.free();
});
