// Regressions of the reliability review: each defect it found has a test here that
// fails on the code it was found in.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { addon, eachDeviceKind, withDefaultDevice, queueFor, exporter, freeAll, pattern, MemoryUSMHost, MemoryUSMShared } from './helpers/addon.mjs';

const INDEX = fileURLToPath(new URL('../index.js', import.meta.url));
const { poolStats } = addon;
const kindKey = (Class) => (Class === MemoryUSMHost ? 'host' : Class === MemoryUSMShared ? 'shared' : 'device');

// Defect 1: an interface whose data pointer lies in the slack of a pooled block, with a
// negative offset back into the allocation, was accepted without holding the
// allocation: once freed, its block served a new owner that the stale view could read
// and write. Every size that is not a pool size class has such slack.
eachDeviceKind(test, 'an interface pointing past the end with an offset back in is refused', (t, { Class, device }) => {
  const q = queueFor(device);
  for (const nbytes of [64, 100, 5000]) {
    const base = new Class(nbytes, { queue: q });
    const pastEnd = exporter(base, { data: [base.pointer + BigInt(nbytes), false], shape: [nbytes], offset: -nbytes });
    const err = t.throws(() => new Class(pastEnd));
    t.is(err.code, 'ERR_SUAI_OUT_OF_BOUNDS', `${nbytes} bytes`);
    base.free();
  }
});

eachDeviceKind(test, 'an interface view with a negative offset holds the allocation it reads', (t, { Class, device }) => {
  const q = queueFor(device);
  const base = new Class(64, { queue: q });
  base.memset(0x11);
  const view = new Class(exporter(base, { data: [base.pointer + 32n, false], shape: [64], offset: -32 }));
  base.free();
  // The allocation is still the view's: a new allocation of the same size gets another block.
  const next = new Class(64, { queue: q });
  t.not(next.pointer, view.pointer);
  next.memset(0x22);
  t.deepEqual([...view.copyToHost()], new Array(64).fill(0x11));
  freeAll(view, next);
});

// Defect 4: a `buffer` read that failed because the object was frozen (it could not keep
// its buffer) left an orphaned ArrayBuffer holding the allocation until GC. The buffer
// now lives in a private field, which freezing does not touch.
eachDeviceKind(test, 'a frozen memory object keeps its buffer, and free() releases it', (t, { Class, device, hostAccessible }) => {
  const before = poolStats()[kindKey(Class)].inUseBytes;
  const m = new Class(1 << 20, { queue: queueFor(device) });
  Object.freeze(m);
  if (hostAccessible) t.is(m.buffer.byteLength, 1 << 20);
  else t.is(t.throws(() => m.buffer).code, 'ERR_NOT_HOST_ACCESSIBLE');
  m.free();
  t.is(poolStats()[kindKey(Class)].inUseBytes, before);
});

// Defect 6: array-likes were turned into a Uint8Array element by element: V8's own
// errors escaped without a code, and `{ length: 1e8 }` read 10^8 properties before
// failing. Each case counts every read and trap: a refusal reads nothing.
function counted() {
  const reads = { n: 0 };
  const traps = Object.fromEntries(
    ['get', 'has', 'ownKeys', 'getOwnPropertyDescriptor', 'getPrototypeOf'].map((name) => [
      name,
      (...args) => {
        reads.n++;
        return Reflect[name](...args);
      },
    ]),
  );
  const arrayLike = (length) => ({ get length() { reads.n++; return length; } });
  const cases = [
    ['a Proxy of a Uint8Array', () => new Proxy(new Uint8Array(16), traps)],
    ['a Proxy of an ArrayBuffer', () => new Proxy(new ArrayBuffer(16), traps)],
    ['a Proxy of a SharedArrayBuffer', () => new Proxy(new SharedArrayBuffer(16), traps)],
    ['{ length: 2**33 }', () => arrayLike(2 ** 33)],
    ['{ length: 1e8 }', () => arrayLike(1e8)],
    ['an array', () => new Proxy([1, 2, 3], traps)],
    ['an object inheriting from Uint8Array.prototype', () => new Proxy(Object.create(Uint8Array.prototype), traps)],
  ];
  return { reads, cases };
}

eachDeviceKind(test, 'copies refuse array-likes at once with ERR_INVALID_ARG_TYPE, reading nothing', async (t, { Class, device }) => {
  const m = new Class(64, { queue: queueFor(device) });
  const { reads, cases } = counted();
  for (const [what, make] of cases) {
    for (const call of [(v) => m.copyToHost(v), (v) => m.copyFromHost(v)]) {
      const err = t.throws(() => call(make()), undefined, what);
      t.is(err.code, 'ERR_INVALID_ARG_TYPE', what);
      t.true(err instanceof TypeError, what);
    }
    for (const call of [(v) => m.copyToHostAsync(v), (v) => m.copyFromHostAsync(v)]) {
      const err = await t.throwsAsync(async () => call(make()), undefined, what);
      t.is(err.code, 'ERR_INVALID_ARG_TYPE', what);
    }
    t.is(reads.n, 0, `${what} is refused without reading it`);
  }
  // A real SharedArrayBuffer (no Node-API accessor before Node 24) still works.
  const shared = new SharedArrayBuffer(64);
  new Uint8Array(shared).fill(7);
  m.copyFromHost(shared);
  t.deepEqual([...m.copyToHost()], new Array(64).fill(7));
  m.free();
});

// Defect 7: errors were built from the current `globalThis.RangeError` etc., and the
// produced interface was filled by assignment (prototype setters intercepted it).
const HOSTILE = `
  const m = require(${JSON.stringify(INDEX)});
  const real = { Error, TypeError, RangeError };
  globalThis.RangeError = function () { return 7; };
  globalThis.TypeError = function () { return 8; };
  globalThis.Error = function () { return 9; };
  let hijacked = 0;
  for (const name of ['data', 'shape', 'strides', 'typestr', 'version', 'syclobj', 'code', '0', '1']) {
    Object.defineProperty(Object.prototype, name, { set() { hijacked++; }, get() { return undefined; }, configurable: true });
  }
  const out = {};
  const mem = new m.MemoryUSMHost(64);
  try { mem.memset(300); } catch (e) { out.range = [e instanceof real.RangeError, e.code]; }
  try { mem.copyFromHost({}); } catch (e) { out.type = [e instanceof real.TypeError, e.code]; }
  try { new m.MemoryUSMHost(0); } catch (e) { out.size = [e instanceof real.Error, e.code]; }
  const iface = mem.__sycl_usm_array_interface__;
  out.iface = [Object.keys(iface).sort().join(','), typeof Object.getOwnPropertyDescriptor(iface, 'data').value[0],
    Object.getOwnPropertyDescriptor(iface.data, '1').value, Object.getOwnPropertyDescriptor(iface.shape, '0').value];
  out.hijacked = hijacked;
  for (const name of ['data', 'shape', 'strides', 'typestr', 'version', 'syclobj', 'code', '0', '1']) delete Object.prototype[name];
  Object.assign(globalThis, real);
  console.log(JSON.stringify(out));
`;
withDefaultDevice(test, 'errors and interfaces ignore replaced globals and prototype setters', (t) => {
  const child = spawnSync(process.execPath, ['-e', HOSTILE], { encoding: 'utf8' });
  t.is(child.status, 0, child.stderr);
  const out = JSON.parse(child.stdout.trim().split('\n').pop());
  t.deepEqual(out.range, [true, 'ERR_INVALID_FILL_VALUE']);
  t.deepEqual(out.type, [true, 'ERR_INVALID_ARG_TYPE']);
  t.deepEqual(out.size[1], 'ERR_INVALID_SIZE');
  t.true(out.size[0]);
  t.deepEqual(out.iface, ['data,shape,strides,syclobj,typestr,version', 'bigint', false, 64]);
  t.is(out.hijacked, 0);
});

// Found by the fuzz on the H200: copyFromDevice from a view of the same allocation
// (overlapping ranges) went to the runtime, whose copy of overlapping ranges is undefined.
// It must give what memmove gives, on every device.
eachDeviceKind(test, 'copyFromDevice between overlapping ranges of one allocation is a memmove', (t, { Class, device }) => {
  const n = 40000;
  const m = new Class(n, { queue: queueFor(device) });
  const bytes = pattern(n, 7);
  m.copyFromHost(bytes);
  const shift = 1237;
  // A view of bytes [shift, n) copied to offset 0 of m: the ranges overlap.
  const view = new Class(exporter(m, { data: [m.pointer + BigInt(shift), false], shape: [n - shift] }));
  m.copyFromDevice(view);
  const expected = bytes.slice();
  expected.copyWithin(0, shift);
  t.deepEqual(m.copyToHost(), expected);
  freeAll(view, m);
});

// Found by an adversarial review: argument checks read Number.isInteger, BigInt,
// Array.isArray and the array iterator at call time, and the error constructors read
// `cause` from an options literal (so from a polluted Object.prototype).
// Issue 24.6 found more read at call time: Map.prototype.get/set (openShared's queue),
// WeakMap.prototype.set, Set.prototype.has (every native error), Array.prototype.fill
// (async results), slice/join/map/includes, Array[Symbol.species], array destructuring
// (memAdvise), Array.from over the array iterator (context devices), Buffer.allocUnsafe
// (toBytes), String.prototype.slice, TypedArray.prototype.set/slice, BigInt's toString.
// Every method below is replaced by one that counts its calls and throws; the iterator
// by one that yields nothing, and the species by a class that counts.
const REPLACED = `
  const m = require(${JSON.stringify(INDEX)});
  const q = new m.SyclQueue();
  const filterString = q.syclDevice.filterString;
  let hits = 0;
  const hostile = function () { hits++; throw new Error('a replaced global ran'); };
  const TypedArray = Object.getPrototypeOf(Uint8Array);
  const { Buffer } = require('node:buffer');
  const replaced = [
    [Map.prototype, ['get', 'set', 'has']], [WeakMap.prototype, ['get', 'set', 'has']], [Set.prototype, ['has', 'add']],
    [Array.prototype, ['fill', 'slice', 'join', 'map', 'includes', 'push', 'concat', 'filter', 'forEach', 'indexOf', 'splice']],
    [String.prototype, ['slice', 'substring', 'padStart', 'toUpperCase']], [TypedArray.prototype, ['set', 'slice', 'subarray']],
    [Buffer, ['allocUnsafe', 'allocUnsafeSlow', 'alloc', 'from']], [BigInt.prototype, ['toString']],
    [Object, ['keys', 'freeze', 'defineProperty', 'setPrototypeOf', 'getPrototypeOf', 'getOwnPropertyDescriptor']],
    [Reflect, ['apply', 'construct']], [JSON, ['parse']],
  ];
  const species = class extends Array { constructor(...args) { hits++; super(...args); } };
  Number.isInteger = () => true;
  globalThis.BigInt = () => 0n;
  Array.isArray = () => false;
  Array.from = hostile;
  const defineProperty = Object.defineProperty;
  defineProperty(Array, Symbol.species, { configurable: true, get() { hits++; return species; } });
  for (let i = 0; i < replaced.length; i++) {
    const names = replaced[i][1];
    for (let j = 0; j < names.length; j++) defineProperty(replaced[i][0], names[j], { configurable: true, writable: true, value: hostile });
  }
  Array.prototype[Symbol.iterator] = function* () {};
  Object.prototype.cause = 'polluted';
  const code = (f) => { try { f(); return 'no error'; } catch (e) { return [e.code, Object.hasOwn(e, 'cause')]; } };
  const host = new m.MemoryUSMHost(16, { queue: q });
  const out = {
    fill: code(() => host.memset(1.5)),
    alignment: code(() => new m.MemoryUSMHost(8, { alignment: 3, queue: q })),
    unknown: code(() => new m.MemoryUSMHost(8, { bogus: 1 })),
    huge: code(() => new m.MemoryUSMHost(2 ** 52, { queue: q })),
    copied: new m.MemoryUSMDevice(host, { copy: true, queue: q }).getUsmType(),
  };
  (async () => {
    const shared = new m.MemoryUSMShared(64);
    const advised = await shared.memAdvise('read-mostly');
    const prefetched = await shared.prefetch();
    out.hints = [typeof advised.applied, typeof prefetched.applied];
    out.badAdvice = code(() => shared.memAdvise('bogus'));
    const dst = new Uint8Array(64);
    await shared.memsetAsync(9);
    out.asyncResult = (await shared.copyToHostAsync(dst)) === dst && dst[63] === 9;
    out.asyncUndefined = (await shared.copyFromHostAsync(new Uint8Array(64))) === undefined;
    const bytes = shared.toBytes();
    out.toBytes = [bytes.length, bytes.buffer.byteLength, bytes.constructor === Buffer];
    const opened = m.openShared(shared.share());
    const again = m.openShared(shared.share());
    out.openedQueue = [opened.syclQueue instanceof m.SyclQueue, opened.syclQueue === shared.syclQueue, again.syclQueue === shared.syclQueue];
    const token = shared.share();
    m.openShared(token).free();
    out.openedTwice = code(() => m.openShared(token));
    const iface = shared.__sycl_usm_array_interface__;
    const view = m.asUsmMemory({ __sycl_usm_array_interface__: { data: iface.data, shape: iface.shape, strides: null, typestr: '|u1', version: 1, syclobj: filterString } });
    out.filterView = [view.syclQueue === shared.syclQueue, view.nbytes];
    const context = q.syclContext;
    const devices = context.devices;
    out.devices = [m.getDevices().length > 0, devices.length > 0, devices[0] instanceof m.SyclDevice, String(context).length > 0];
    const aspects = q.syclDevice.aspects;
    out.aspects = [aspects.length > 0, q.syclDevice.hasAspect(aspects[0])];
    out.repr = String(shared).length > 0;
    out.ipc = typeof m.IPCMemoryHandle.isAvailable();
    view.free(); opened.free(); again.free(); shared.free();
    out.hits = hits;
    process.stdout.write(JSON.stringify(out) + '\\n');
  })().catch((error) => { process.stderr.write(String(error && error.stack) + '\\n'); process.exitCode = 1; });
`;
withDefaultDevice(test, 'argument checks and error classes ignore replaced intrinsics and a polluted Object.prototype', (t) => {
  const child = spawnSync(process.execPath, ['-e', REPLACED], { encoding: 'utf8' });
  t.is(child.status, 0, child.stderr);
  const out = JSON.parse(child.stdout.trim().split('\n').pop());
  t.deepEqual(out.fill, ['ERR_INVALID_FILL_VALUE', false]);
  t.deepEqual(out.alignment, ['ERR_INVALID_ALIGNMENT', false]);
  t.deepEqual(out.unknown, ['ERR_INVALID_ARG_TYPE', false]);
  t.deepEqual(out.huge, ['ERR_USM_ALLOCATION', false]);
  t.is(out.copied, 'device');
  t.deepEqual(out.hints, ['boolean', 'boolean'], 'memAdvise and prefetch resolve to { applied }');
  t.deepEqual(out.badAdvice, ['ERR_INVALID_ARG_VALUE', false]);
  t.true(out.asyncResult, 'copyToHostAsync resolves to its destination, filled');
  t.true(out.asyncUndefined);
  t.deepEqual(out.toBytes, [64, 64, true]);
  t.deepEqual(out.openedQueue, [true, true, true], "openShared's syclQueue is the cached SyclQueue");
  t.deepEqual(out.openedTwice, ['ERR_SHARE_TOKEN_OPENED', false]);
  t.deepEqual(out.filterView, [true, 64]);
  t.deepEqual(out.devices, [true, true, true, true]);
  t.deepEqual(out.aspects, [true, true]);
  t.true(out.repr);
  t.is(out.ipc, 'boolean');
  t.is(out.hits, 0, 'no replaced method, species or iterator was used');
});
