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
const REPLACED = `
  const m = require(${JSON.stringify(INDEX)});
  const q = new m.SyclQueue();
  Number.isInteger = () => true;
  globalThis.BigInt = () => 0n;
  Array.isArray = () => false;
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
  console.log(JSON.stringify(out));
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
});
