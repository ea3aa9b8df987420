// Consuming __sycl_usm_array_interface__: extents (dpctl's tests), every malformed field,
// foreign pointers, bounds, read-only interfaces, and syclobj forms.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  KINDS,
  MemoryUSMDevice,
  MemoryUSMShared,
  SyclContext,
  SyclQueue,
  SyclQueueCreationError,
  asUsmMemory,
  eachDevice,
  eachDeviceKind,
  queueFor,
  pattern,
  exporter,
  rawExporter,
  freeAll,
} from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';

const INDEX = fileURLToPath(new URL('../index.js', import.meta.url));

/** Base memory of a kind, zeroed. */
function base(Class, device, nbytes) {
  const m = new Class(nbytes, { queue: queueFor(device) });
  m.memset(0);
  return m;
}

// ---------------------------------------------------------------------------------------
// Extents, as dpctl's test_suai_non_contig_1D / _2D
// ---------------------------------------------------------------------------------------

eachDeviceKind(test, 'shape [10], strides [2], offset 8 over 32 bytes: nbytes 19, writes land at [8, 27)', (t, { device, Class }) => {
  const m = base(Class, device, 32);
  const view = new Class(exporter(m, { shape: [10], strides: [2], offset: 8 }));
  t.is(view.nbytes, 19);
  t.is(view.pointer, m.pointer + 8n);
  view.copyFromHost(new Uint8Array(19).fill(1));
  const bytes = Array.from(m.copyToHost());
  t.deepEqual(bytes, bytes.map((_, i) => (i >= 8 && i < 27 ? 1 : 0)));
  freeAll(m, view);
});

eachDeviceKind(test, 'shape [10], strides [2], offset 8: memset through the view lands at [8, 27) too', (t, { device, Class }) => {
  const m = base(Class, device, 32);
  const view = new Class(exporter(m, { shape: [10], strides: [2], offset: 8 }));
  view.memset(0xff);
  const bytes = Array.from(m.copyToHost());
  t.deepEqual(bytes, bytes.map((_, i) => (i >= 8 && i < 27 ? 0xff : 0)));
  freeAll(m, view);
});

eachDeviceKind(test, 'shape [2,2], strides [10,-2], offset 9 over 20 bytes: nbytes 13, bytes 7..19', (t, { device, Class }) => {
  const m = base(Class, device, 20);
  const view = new Class(exporter(m, { shape: [2, 2], strides: [10, -2], offset: 9 }));
  t.is(view.nbytes, 13);
  t.is(view.pointer, m.pointer + 7n);
  view.copyFromHost(new Uint8Array(13).fill(1));
  const bytes = Array.from(m.copyToHost());
  t.deepEqual(bytes, bytes.map((_, i) => (i >= 7 ? 1 : 0)));
  freeAll(m, view);
});

eachDeviceKind(test, "typestr '<f4', shape [4], strides [2], offset 1: pointer +4 and nbytes 28", (t, { device, Class }) => {
  const m = base(Class, device, 32);
  const view = new Class(exporter(m, { typestr: '<f4', shape: [4], strides: [2], offset: 1 }));
  t.is(view.pointer, m.pointer + 4n);
  t.is(view.nbytes, 28);
  view.memset(7);
  const bytes = Array.from(m.copyToHost());
  t.deepEqual(bytes, bytes.map((_, i) => (i >= 4 ? 7 : 0)));
  freeAll(m, view);
});

eachDeviceKind(test, 'contiguous interfaces: shape product times itemsize, bigint fields, empty arrays', (t, { device, Class }) => {
  const m = base(Class, device, 64);
  const cases = [
    [{ shape: [2, 4], typestr: '<i4' }, 32, 0n],
    [{ shape: [3], typestr: '<f8', offset: 2 }, 24, 16n],
    [{ shape: [8n], typestr: '|u1', offset: 4n }, 8, 4n],
    [{ shape: [], typestr: '<i2', offset: 3 }, 2, 6n], // 0-d: one item at the offset
    [{ shape: [0], typestr: '|u1' }, 1, 0n], // an empty array still spans one item
    [{ shape: [4], typestr: '<c16' }, 64, 0n],
    [{ shape: [4], typestr: '|b1' }, 4, 0n],
    [{ shape: [4], typestr: '>u2', strides: null }, 8, 0n],
    [{ shape: [4], typestr: '=i8', strides: [1] }, 32, 0n],
    [{ shape: [2, 2], typestr: '<i4', strides: [0, 0] }, 4, 0n],
  ];
  for (const [fields, nbytes, shift] of cases) {
    const v = new Class(exporter(m, fields));
    t.is(v.nbytes, nbytes, JSON.stringify(fields, (_, x) => (typeof x === 'bigint' ? `${x}n` : x)));
    t.is(v.pointer, m.pointer + shift);
    v.free();
  }
  m.free();
});

eachDeviceKind(test, 'data[0] as a safe-integer number works like a bigint', (t, { device, Class }) => {
  const m = base(Class, device, 16);
  const v = new Class(exporter(m, { data: [Number(m.pointer), false] }));
  t.is(v.pointer, m.pointer);
  freeAll(m, v);
});

// ---------------------------------------------------------------------------------------
// Malformed fields. Each case runs through every entry point (constructor, copyFromDevice,
// asUsmMemory) for every kind on every device.
// ---------------------------------------------------------------------------------------

const omit = (key) => ({ [key]: undefined });

/** [title, fields (merged over a valid interface; a value of `undefined` deletes the key), class, code] */
const MALFORMED = [
  ['version 0', { version: 0 }, RangeError, 'ERR_SUAI_VERSION'],
  ['version 2', { version: 2 }, RangeError, 'ERR_SUAI_VERSION'],
  ['version 2n', { version: 2n }, RangeError, 'ERR_SUAI_VERSION'],
  ['version missing', omit('version'), TypeError, 'ERR_SUAI_VERSION'],
  ["version '1'", { version: '1' }, TypeError, 'ERR_SUAI_VERSION'],
  ['version null', { version: null }, TypeError, 'ERR_SUAI_VERSION'],
  ['version 1.5', { version: 1.5 }, TypeError, 'ERR_SUAI_VERSION'],
  ['data missing', omit('data'), TypeError, 'ERR_SUAI_DATA'],
  ['data null', { data: null }, TypeError, 'ERR_SUAI_DATA'],
  ['data []', { data: [] }, RangeError, 'ERR_SUAI_DATA'],
  ['data [p]', (m) => ({ data: [m.pointer] }), RangeError, 'ERR_SUAI_DATA'],
  ['data [p, false, x]', (m) => ({ data: [m.pointer, false, 'x'] }), RangeError, 'ERR_SUAI_DATA'],
  ["data 'x'", { data: 'x' }, TypeError, 'ERR_SUAI_DATA'],
  ['data a number', (m) => ({ data: Number(m.pointer) }), TypeError, 'ERR_SUAI_DATA'],
  ['data [-1n, false]', { data: [-1n, false] }, RangeError, 'ERR_SUAI_DATA'],
  ['data [-4096, false]', { data: [-4096, false] }, RangeError, 'ERR_SUAI_DATA'],
  ['data [2n**64n, false]', { data: [2n ** 64n, false] }, RangeError, 'ERR_SUAI_DATA'],
  ['data [2**53, false] (unsafe number)', { data: [2 ** 53, false] }, RangeError, 'ERR_SUAI_DATA'],
  ["data ['4096', false]", { data: ['4096', false] }, TypeError, 'ERR_SUAI_DATA'],
  ['data [1.5, false]', { data: [1.5, false] }, TypeError, 'ERR_SUAI_DATA'],
  ['data [p, null]', (m) => ({ data: [m.pointer, null] }), TypeError, 'ERR_SUAI_DATA'],
  ["data [p, 'true']", (m) => ({ data: [m.pointer, 'true'] }), TypeError, 'ERR_SUAI_DATA'],
  ['syclobj missing', omit('syclobj'), TypeError, 'ERR_SUAI_SYCLOBJ'],
  ['syclobj null', { syclobj: null }, TypeError, 'ERR_SUAI_SYCLOBJ'],
  ['syclobj 42', { syclobj: 42 }, TypeError, 'ERR_SUAI_SYCLOBJ'],
  ['syclobj {}', { syclobj: {} }, TypeError, 'ERR_SUAI_SYCLOBJ'],
  ['syclobj a SyclDevice', (m) => ({ syclobj: m.syclDevice }), TypeError, 'ERR_SUAI_SYCLOBJ'],
  ['syclobj a memory object', (m) => ({ syclobj: m }), TypeError, 'ERR_SUAI_SYCLOBJ'],
  ["syclobj 'foo:bar' (bad filter)", { syclobj: 'foo:bar' }, SyclQueueCreationError, 'ERR_QUEUE_CREATION'],
  ['shape missing', omit('shape'), TypeError, 'ERR_SUAI_SHAPE'],
  ['shape null', { shape: null }, TypeError, 'ERR_SUAI_SHAPE'],
  ['shape 16 (not an array)', { shape: 16 }, TypeError, 'ERR_SUAI_SHAPE'],
  ['shape [-1]', { shape: [-1] }, RangeError, 'ERR_SUAI_SHAPE'],
  ['shape [-1] with strides [2]', { shape: [-1], strides: [2] }, RangeError, 'ERR_SUAI_SHAPE'],
  ['shape [4, -1]', { shape: [4, -1], strides: null }, RangeError, 'ERR_SUAI_SHAPE'],
  ["shape ['4']", { shape: ['4'] }, TypeError, 'ERR_SUAI_SHAPE'],
  ['shape [4.5]', { shape: [4.5] }, TypeError, 'ERR_SUAI_SHAPE'],
  ['shape [null]', { shape: [null] }, TypeError, 'ERR_SUAI_SHAPE'],
  ["typestr 'invalid'", { typestr: 'invalid' }, RangeError, 'ERR_SUAI_TYPESTR'],
  ["typestr 'O'", { typestr: 'O' }, RangeError, 'ERR_SUAI_TYPESTR'],
  ["typestr '|O'", { typestr: '|O' }, RangeError, 'ERR_SUAI_TYPESTR'],
  ["typestr '|S1'", { typestr: '|S1' }, RangeError, 'ERR_SUAI_TYPESTR'],
  ["typestr '<U4'", { typestr: '<U4' }, RangeError, 'ERR_SUAI_TYPESTR'],
  ["typestr ''", { typestr: '' }, RangeError, 'ERR_SUAI_TYPESTR'],
  ['typestr missing', omit('typestr'), TypeError, 'ERR_SUAI_TYPESTR'],
  ['typestr 1', { typestr: 1 }, TypeError, 'ERR_SUAI_TYPESTR'],
  ['strides of the wrong length', { shape: [2, 2], strides: [1] }, RangeError, 'ERR_SUAI_STRIDES'],
  ['strides longer than shape', { shape: [4], strides: [1, 1] }, RangeError, 'ERR_SUAI_STRIDES'],
  ["strides 'x'", { strides: 'x' }, TypeError, 'ERR_SUAI_STRIDES'],
  ['strides 1 (not an array)', { strides: 1 }, TypeError, 'ERR_SUAI_STRIDES'],
  ["strides ['2']", { shape: [4], strides: ['2'] }, TypeError, 'ERR_SUAI_STRIDES'],
  ["offset 'x'", { offset: 'x' }, TypeError, 'ERR_SUAI_OFFSET'],
  ['offset 1.5', { offset: 1.5 }, TypeError, 'ERR_SUAI_OFFSET'],
  ['offset null', { offset: null }, TypeError, 'ERR_SUAI_OFFSET'],
  ['offset 2n**64n', { offset: 2n ** 64n }, RangeError, 'ERR_SUAI_OFFSET'],
  // Order: dpctl validates version, data, syclobj, shape, typestr, strides.
  ['version and data both bad: version first', { version: 2, data: 'x' }, RangeError, 'ERR_SUAI_VERSION'],
  ['data and shape both bad: data first', { data: [], shape: null }, RangeError, 'ERR_SUAI_DATA'],
  ['syclobj and shape both bad: syclobj first', { syclobj: 42, shape: null }, TypeError, 'ERR_SUAI_SYCLOBJ'],
  ['shape and typestr both bad: shape first', { shape: ['4'], typestr: 'O' }, TypeError, 'ERR_SUAI_SHAPE'],
  ['typestr and strides both bad: typestr first', { typestr: 'O', strides: 'x' }, RangeError, 'ERR_SUAI_TYPESTR'],
];

function interfaceOf(m, fields) {
  const iface = { ...exporter(m).__sycl_usm_array_interface__, ...(typeof fields === 'function' ? fields(m) : fields) };
  for (const key of Object.keys(iface)) if (iface[key] === undefined) delete iface[key];
  return iface;
}

for (const [title, fields, ErrorClass, code] of MALFORMED) {
  eachDeviceKind(test, `interface with ${title}: ${ErrorClass.name} ${code}`, (t, { device, Class }) => {
    const m = base(Class, device, 16);
    const exp = rawExporter(interfaceOf(m, fields));
    throwsExactly(t, () => new Class(exp), ErrorClass, code, 'constructor');
    throwsExactly(t, () => new Class(exp, { copy: true }), ErrorClass, code, 'constructor with copy');
    throwsExactly(t, () => m.copyFromDevice(exp), ErrorClass, code, 'copyFromDevice');
    throwsExactly(t, () => asUsmMemory(exp), ErrorClass, code, 'asUsmMemory');
    m.free();
  });
}

eachDeviceKind(test, 'an interface that is not an object is ERR_SUAI_MALFORMED', (t, { device, Class }) => {
  const m = base(Class, device, 8);
  for (const iface of [5, 'x', null, [1, 2], true]) {
    const exp = rawExporter(iface);
    throwsExactly(t, () => new Class(exp), TypeError, 'ERR_SUAI_MALFORMED', `constructor: ${JSON.stringify(iface)}`);
    throwsExactly(t, () => m.copyFromDevice(exp), TypeError, 'ERR_SUAI_MALFORMED', `copyFromDevice: ${JSON.stringify(iface)}`);
    throwsExactly(t, () => asUsmMemory(exp), TypeError, 'ERR_SUAI_MALFORMED', `asUsmMemory: ${JSON.stringify(iface)}`);
  }
  m.free();
});

eachDeviceKind(test, 'an extent beyond the 64-bit address space is a RangeError, never a wrap', (t, { device, Class }) => {
  const m = base(Class, device, 8);
  const huge = 2n ** 62n;
  for (const fields of [{ shape: [huge, huge] }, { shape: [huge], typestr: '<c16' }, { shape: [2], strides: [huge * 2n - 1n] }, { offset: -(2n ** 63n), typestr: '<f8' }]) {
    const exp = rawExporter(interfaceOf(m, fields));
    const err = t.throws(() => new Class(exp), { instanceOf: RangeError });
    t.true(/^ERR_SUAI_/.test(err?.code ?? ''), `code ${err?.code}`);
  }
  m.free();
});

// ---------------------------------------------------------------------------------------
// Out of bounds
// ---------------------------------------------------------------------------------------

eachDeviceKind(test, 'an interface view reaching past the allocation is ERR_SUAI_OUT_OF_BOUNDS', (t, { device, Class }) => {
  const m = base(Class, device, 32);
  const cases = [
    { shape: [33] },
    { shape: [1024] },
    { shape: [32], offset: 1 },
    { shape: [1], offset: 32 },
    { shape: [4], offset: -1 },
    { shape: [5], typestr: '<f8' },
    { shape: [17], strides: [2] },
    { shape: [2, 2], strides: [10, -2], offset: 1 }, // reaches back before the start
    { shape: [1], offset: -(2 ** 20) },
  ];
  for (const fields of cases) {
    const exp = exporter(m, fields);
    const note = JSON.stringify(fields);
    throwsExactly(t, () => new Class(exp), RangeError, 'ERR_SUAI_OUT_OF_BOUNDS', `constructor ${note}`);
    throwsExactly(t, () => new Class(exp, { copy: true }), RangeError, 'ERR_SUAI_OUT_OF_BOUNDS', `copy ${note}`);
    throwsExactly(t, () => asUsmMemory(exp), RangeError, 'ERR_SUAI_OUT_OF_BOUNDS', `asUsmMemory ${note}`);
    const dst = new MemoryUSMShared(4096, { queue: queueFor(device) });
    throwsExactly(t, () => dst.copyFromDevice(exp), RangeError, 'ERR_SUAI_OUT_OF_BOUNDS', `copyFromDevice ${note}`);
    dst.free();
  }
  // Exactly the allocation, and an interior range, are fine.
  for (const fields of [{ shape: [32] }, { shape: [31], offset: 1 }, { shape: [1], offset: 31 }, { shape: [4], typestr: '<f8' }]) {
    const v = new Class(exporter(m, fields));
    t.true(v.nbytes > 0);
    v.free();
  }
  m.free();
});

eachDeviceKind(test, 'an interior base pointer is bounds-checked against the whole allocation', (t, { device, Class }) => {
  const m = base(Class, device, 64);
  const inner = exporter(m, { data: [m.pointer + 16n, false], shape: [48] });
  const v = new Class(inner);
  t.is(v.pointer, m.pointer + 16n);
  t.is(v.nbytes, 48);
  v.free();
  throwsExactly(t, () => new Class(exporter(m, { data: [m.pointer + 16n, false], shape: [49] })), RangeError, 'ERR_SUAI_OUT_OF_BOUNDS');
  throwsExactly(t, () => new Class(exporter(m, { data: [m.pointer + 16n, false], shape: [4], offset: -17 })), RangeError, 'ERR_SUAI_OUT_OF_BOUNDS');
  m.free();
});

// ---------------------------------------------------------------------------------------
// Foreign pointers
// ---------------------------------------------------------------------------------------

const FOREIGN = [
  ['12345n', 12345n],
  ['0n', 0n],
  ['1n', 1n],
  ['0x1000n (the first page, never mapped)', 0x1000n],
  ['a kernel-space address', 0xffff_8000_0000_0000n],
  ['the top of the address space', 2n ** 64n - 16n],
];

for (const [name, pointer] of FOREIGN) {
  eachDeviceKind(test, `a foreign pointer (${name}) is ERR_SUAI_FOREIGN_POINTER with a queue, a context or a filter string`, (t, { device, Class }) => {
    const m = base(Class, device, 16);
    const syclobjs = [m.syclQueue, m.syclContext, device.filterString];
    for (const syclobj of syclobjs) {
      const exp = exporter(m, { data: [pointer, false], shape: [4], syclobj });
      const note = `syclobj ${String(syclobj)}`;
      throwsExactly(t, () => new Class(exp), Error, 'ERR_SUAI_FOREIGN_POINTER', note);
      throwsExactly(t, () => new Class(exp, { copy: true }), Error, 'ERR_SUAI_FOREIGN_POINTER', `${note}, copy`);
      throwsExactly(t, () => m.copyFromDevice(exp), Error, 'ERR_SUAI_FOREIGN_POINTER', `${note}, copyFromDevice`);
      const err = t.throws(() => asUsmMemory(exp), { instanceOf: Error }, `${note}, asUsmMemory`);
      t.true(['ERR_SUAI_FOREIGN_POINTER', 'ERR_UNKNOWN_USM_TYPE'].includes(err?.code), `asUsmMemory code ${err?.code}`);
    }
    m.free();
  });
}

eachDeviceKind(test, "USM memory of another context is foreign to the named context (dpctl would abort here)", (t, { device, Class }) => {
  const m = base(Class, device, 16);
  const otherContext = new SyclContext(device);
  t.false(otherContext.equals(m.syclContext), 'new SyclContext(device) is a new context');
  const otherQueue = new SyclQueue(otherContext, device);
  for (const syclobj of [otherContext, otherQueue]) {
    const exp = exporter(m, { syclobj });
    if (m.getUsmType(otherContext) === 'unknown') {
      throwsExactly(t, () => new Class(exp), Error, 'ERR_SUAI_FOREIGN_POINTER', String(syclobj));
      throwsExactly(t, () => asUsmMemory(exp), Error, 'ERR_SUAI_FOREIGN_POINTER', String(syclobj));
    } else {
      // A runtime that shares USM across contexts: then it is a valid view.
      const v = new Class(exp);
      t.is(v.pointer, m.pointer);
      v.free();
    }
  }
  m.free();
});

// The process must survive, not just the JS frame: run the context case in a child.
eachDevice(test, 'a foreign pointer with a SyclContext syclobj does not abort the process', (t, device) => {
  const script = `
    const m = require(${JSON.stringify(INDEX)});
    const S = m.MemoryUSMShared ?? m.MemoryUsmShared;
    const ctx = new m.SyclContext(new m.SyclDevice(${JSON.stringify(device.filterString)}));
    const codes = [];
    for (const p of [12345n, 0n, 0x1000n, 0xffff800000000000n]) {
      try { new S({ __sycl_usm_array_interface__: { data: [p, false], shape: [8], typestr: '|u1', version: 1, syclobj: ctx } }); codes.push('no error'); }
      catch (e) { codes.push(e.code); }
    }
    console.log(JSON.stringify(codes));`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 120_000 });
  t.is(r.signal, null, `killed by ${r.signal}: ${r.stderr}`);
  t.is(r.status, 0, r.stderr);
  t.deepEqual(JSON.parse(r.stdout.trim().split('\n').pop()), Array(4).fill('ERR_SUAI_FOREIGN_POINTER'));
});

// ---------------------------------------------------------------------------------------
// syclobj forms
// ---------------------------------------------------------------------------------------

eachDeviceKind(test, 'syclobj may be a SyclQueue, a SyclContext or a filter string (dpctl test_with_constructor)', (t, { device, kind, Class }) => {
  const m = base(Class, device, 32);
  m.copyFromHost(pattern(32, 91));
  // A queue: kept as given.
  const byQueue = asUsmMemory(exporter(m, { syclobj: m.syclQueue }));
  t.is(byQueue.syclQueue, m.syclQueue);
  // A context: a new queue in that context, on the pointer's device.
  const byContext = asUsmMemory(exporter(m, { syclobj: m.syclContext }));
  t.true(byContext.syclQueue instanceof SyclQueue);
  t.true(byContext.syclContext.equals(m.syclContext));
  if (kind === 'host') {
    t.true(byContext.syclDevice.equals(m.syclContext.devices[0]), "host memory: the context's first device");
  } else {
    t.true(byContext.syclDevice.equals(device));
  }
  // A filter string: the cached queue of that device.
  const byFilter = asUsmMemory(exporter(m, { syclobj: device.filterString }));
  t.true(byFilter.syclContext.equals(m.syclContext));
  t.true(byFilter.syclDevice.equals(device));
  for (const v of [byQueue, byContext, byFilter]) {
    t.true(v instanceof Class);
    t.is(v.pointer, m.pointer);
    t.is(v.getUsmType(), kind);
    t.deepEqual(v.copyToHost(), pattern(32, 91));
    v.free();
  }
  m.free();
});

eachDeviceKind(test, 'a filter string syclobj that matches no device is a SyclQueueCreationError', (t, { device, Class }) => {
  const m = base(Class, device, 8);
  throwsExactly(t, () => new Class(exporter(m, { syclobj: 'opencl:gpu:99' })), SyclQueueCreationError, 'ERR_QUEUE_CREATION');
  m.free();
});

// ---------------------------------------------------------------------------------------
// Read-only interfaces
// ---------------------------------------------------------------------------------------

eachDeviceKind(test, 'a read-only interface (data[1] === true) gives read-only memory', (t, { device, kind, Class }) => {
  const m = base(Class, device, 16);
  m.copyFromHost(pattern(16, 93));
  const ro = new Class(exporter(m, { data: [m.pointer, true] }));
  t.is(ro.__sycl_usm_array_interface__.data[1], true, 'it reports itself read-only');
  throwsExactly(t, () => ro.copyFromHost(new Uint8Array(4)), Error, 'ERR_READ_ONLY', 'copyFromHost');
  throwsExactly(t, () => ro.memset(1), Error, 'ERR_READ_ONLY', 'memset');
  throwsExactly(t, () => ro.memset(), Error, 'ERR_READ_ONLY', 'memset()');
  const src = new MemoryUSMShared(4, { queue: queueFor(device) });
  throwsExactly(t, () => ro.copyFromDevice(src), Error, 'ERR_READ_ONLY', 'copyFromDevice');
  if (kind !== 'device') {
    throwsExactly(t, () => ro.buffer, Error, 'ERR_READ_ONLY', 'buffer');
  } else {
    t.throws(() => ro.buffer, { code: 'ERR_NOT_HOST_ACCESSIBLE' });
  }
  t.deepEqual(m.copyToHost(), pattern(16, 93), 'nothing was written');
  // Reading works.
  t.deepEqual(ro.copyToHost(), pattern(16, 93));
  t.deepEqual(new Uint8Array(ro.toBytes()), pattern(16, 93));
  // Read-only survives views, asUsmMemory, and the interface it exports.
  const view = new Class(ro);
  throwsExactly(t, () => view.memset(1), Error, 'ERR_READ_ONLY', 'a view of read-only memory');
  const as = asUsmMemory(exporter(m, { data: [m.pointer, true] }));
  throwsExactly(t, () => as.memset(1), Error, 'ERR_READ_ONLY', 'asUsmMemory of a read-only interface');
  const reexported = new Class({ __sycl_usm_array_interface__: ro.__sycl_usm_array_interface__ });
  throwsExactly(t, () => reexported.copyFromHost(new Uint8Array(1)), Error, 'ERR_READ_ONLY', 're-exported');
  // Copying out of read-only memory into writable memory is fine.
  const dst = new MemoryUSMDevice(16, { queue: queueFor(device) });
  dst.copyFromDevice(ro);
  t.deepEqual(dst.copyToHost(), pattern(16, 93));
  for (const other of KINDS.filter((k) => k.kind !== kind)) {
    const copy = new other.Class(ro, { copy: true });
    t.deepEqual(copy.copyToHost(), pattern(16, 93));
    copy.memset(0);
    copy.free();
  }
  freeAll(m, ro, src, view, as, reexported, dst);
});

eachDeviceKind(test, 'data[1] === false gives writable memory', (t, { device, Class }) => {
  const m = base(Class, device, 8);
  const w = new Class(exporter(m, { data: [m.pointer, false] }));
  w.memset(6);
  t.true(m.copyToHost().every((b) => b === 6));
  freeAll(m, w);
});

// ---------------------------------------------------------------------------------------
// Kind checks through the interface
// ---------------------------------------------------------------------------------------

for (const src of KINDS) {
  for (const dst of KINDS.filter((k) => k.kind !== src.kind)) {
    eachDevice(test, `an interface over ${src.kind} memory given to ${dst.kind}: mismatch, or a copy with copy: true`, (t, device) => {
      const m = base(src.Class, device, 24);
      m.copyFromHost(pattern(24, 95));
      const exp = exporter(m, { shape: [16], offset: 4 });
      throwsExactly(t, () => new dst.Class(exp), Error, 'ERR_USM_KIND_MISMATCH');
      const c = new dst.Class(exp, { copy: true });
      t.is(c.nbytes, 16);
      t.is(c.getUsmType(), dst.kind);
      t.is(c.referenceObj, null, 'a copy owns its memory');
      t.deepEqual(c.copyToHost(), pattern(24, 95).subarray(4, 20));
      freeAll(m, c);
    });
  }
}
