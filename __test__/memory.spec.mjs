// Every method and property of the three memory classes, on every kind and every device.
import test from 'ava';
import util from 'node:util';
import {
  KINDS,
  kindOf,
  DEVICES,
  MemoryUSMDevice,
  MemoryUSMHost,
  MemoryUSMShared,
  SyclQueue,
  SyclDevice,
  SyclContext,
  asUsmMemory,
  eachDevice,
  eachDeviceKind,
  withDefaultDevice,
  queueFor,
  pattern,
  bytesOf,
  exporter,
  freeAll,
} from './helpers/addon.mjs';

const REPR = /^<SYCL\(TM\) USM-(device|shared|host) allocation of (\d+) bytes at 0x([0-9a-f]+)>$/;

// ---------------------------------------------------------------------------------------
// Construction and the plain properties
// ---------------------------------------------------------------------------------------

eachDeviceKind(test, 'allocates nbytes given as a number, with every property consistent', (t, { device, kind, Class, enumValue }) => {
  const queue = queueFor(device);
  const m = new Class(1024, { alignment: 64, queue });
  t.is(m.nbytes, 1024);
  t.is(typeof m.nbytes, 'number');
  t.is(m.size, 1024);
  t.is(typeof m.size, 'number');
  t.is(typeof m.pointer, 'bigint');
  t.true(m.pointer > 0n);
  t.is(m.pointer % 64n, 0n, 'alignment 64 is honoured');
  t.is(m.referenceObj, null, 'a fresh allocation has no reference object');
  t.is(m.syclQueue, queue, 'syclQueue is the very queue object given');
  t.true(m.syclQueue instanceof SyclQueue);
  t.true(m.syclContext instanceof SyclContext);
  t.true(m.syclContext.equals(queue.syclContext));
  t.true(m.syclDevice instanceof SyclDevice);
  t.true(m.syclDevice.equals(device));
  t.is(m.getUsmType(), kind);
  t.is(m.getUsmTypeEnum(), enumValue);
  t.is(m.getUsmType(queue), kind, 'queried with its own queue');
  t.is(m.getUsmType(queue.syclContext), kind, 'queried with its own context');
  t.is(m.getUsmTypeEnum(queue), enumValue);
  t.is(m.getUsmTypeEnum(queue.syclContext), enumValue);
  t.true(m instanceof Class);
  m.free();
});

eachDeviceKind(test, 'allocates nbytes given as a bigint', (t, { device, kind, Class }) => {
  const m = new Class(16384n, { queue: queueFor(device) });
  t.is(m.nbytes, 16384);
  t.is(typeof m.nbytes, 'number', 'nbytes is a number even when the request was a bigint');
  t.is(m.getUsmType(), kind);
  m.free();
});

eachDeviceKind(test, 'a bigint alignment and a large alignment are honoured; 0 means the default', (t, { device, Class }) => {
  const queue = queueFor(device);
  const a = new Class(100, { alignment: 4096n, queue });
  t.is(a.pointer % 4096n, 0n);
  const b = new Class(100, { alignment: 0, queue });
  t.is(b.nbytes, 100);
  const c = new Class(1, { queue });
  t.is(c.nbytes, 1, 'a single byte is a valid allocation');
  freeAll(a, b, c);
});

eachDeviceKind(test, 'toString() and util.inspect() show the kind, the size and the address', (t, { device, kind, Class }) => {
  const m = new Class(16, { queue: queueFor(device) });
  const text = m.toString();
  const match = REPR.exec(text);
  t.truthy(match, `unexpected format: ${text}`);
  t.is(match[1], kind);
  t.is(match[2], '16');
  t.is(BigInt(`0x${match[3]}`), m.pointer, 'the address shown is the pointer');
  t.is(String(m), text);
  t.is(`${m}`, text);
  t.is(util.inspect(m), text);
  t.is(m.toString(), `<SYCL(TM) USM-${kind} allocation of 16 bytes at 0x${m.pointer.toString(16)}>`);
  m.free();
});

// ---------------------------------------------------------------------------------------
// Host copies
// ---------------------------------------------------------------------------------------

eachDeviceKind(test, 'copyFromHost then copyToHost() round-trips the bytes into a new Uint8Array', (t, { device, Class }) => {
  const m = new Class(4096, { queue: queueFor(device) });
  const src = pattern(4096, 7);
  t.is(m.copyFromHost(src), undefined);
  const out = m.copyToHost();
  t.true(out instanceof Uint8Array);
  t.is(out.constructor, Uint8Array);
  t.is(out.length, 4096);
  t.deepEqual(out, src);
  const again = m.copyToHost();
  t.not(again, out, 'every call without dst makes a new array');
  t.deepEqual(again, src);
  m.free();
});

// Destinations of every view type; each entry gives the destination and the bytes it covers.
const DESTINATIONS = {
  Uint8Array: (n) => new Uint8Array(n),
  Float64Array: (n) => new Float64Array(n / 8),
  Int32Array: (n) => new Int32Array(n / 4),
  DataView: (n) => new DataView(new ArrayBuffer(n)),
  Buffer: (n) => Buffer.alloc(n),
  ArrayBuffer: (n) => new ArrayBuffer(n),
  SharedArrayBuffer: (n) => new SharedArrayBuffer(n),
  'Uint8Array over a SharedArrayBuffer': (n) => new Uint8Array(new SharedArrayBuffer(n)),
};

for (const [name, make] of Object.entries(DESTINATIONS)) {
  eachDeviceKind(test, `copyToHost(dst) writes into a ${name} and returns that very dst`, (t, { device, Class }) => {
    const m = new Class(64, { queue: queueFor(device) });
    const src = pattern(64, 3);
    m.copyFromHost(src);
    const dst = make(64);
    const result = m.copyToHost(dst);
    t.is(result, dst, 'copyToHost returns dst itself');
    t.deepEqual(Array.from(bytesOf(dst)), Array.from(src));
    m.free();
  });

  eachDeviceKind(test, `copyFromHost(src) reads from a ${name}`, (t, { device, Class }) => {
    const m = new Class(64, { queue: queueFor(device) });
    const src = make(64);
    bytesOf(src).set(pattern(64, 11));
    m.copyFromHost(src);
    t.deepEqual(Array.from(m.copyToHost()), Array.from(pattern(64, 11)));
    m.free();
  });
}

eachDeviceKind(test, 'copyToHost into a subarray honours its byteOffset and touches nothing around it', (t, { device, Class }) => {
  const m = new Class(32, { queue: queueFor(device) });
  const src = pattern(32, 5);
  m.copyFromHost(src);
  const backing = new Uint8Array(100).fill(0xee);
  const sub = backing.subarray(13, 13 + 40); // longer than nbytes: only the first 32 bytes are written
  t.is(m.copyToHost(sub), sub);
  t.deepEqual(backing.subarray(13, 45), src);
  t.true(backing.subarray(0, 13).every((b) => b === 0xee), 'bytes before the view are untouched');
  t.true(backing.subarray(45).every((b) => b === 0xee), 'bytes after nbytes are untouched');
  // The same through a DataView with an offset.
  const ab = new ArrayBuffer(50);
  new Uint8Array(ab).fill(0x11);
  const dv = new DataView(ab, 7, 32);
  m.copyToHost(dv);
  t.deepEqual(new Uint8Array(ab, 7, 32), src);
  t.is(new Uint8Array(ab)[6], 0x11);
  t.is(new Uint8Array(ab)[39], 0x11);
  m.free();
});

eachDeviceKind(test, 'copyToHost into a longer dst writes only the first nbytes', (t, { device, Class }) => {
  const m = new Class(8, { queue: queueFor(device) });
  m.memset(0x42);
  const dst = new Uint8Array(20).fill(7);
  t.is(m.copyToHost(dst), dst);
  t.deepEqual(Array.from(dst), [...Array(8).fill(0x42), ...Array(12).fill(7)]);
  m.free();
});

eachDeviceKind(test, 'copyFromHost from a subarray reads from its byteOffset', (t, { device, Class }) => {
  const m = new Class(16, { queue: queueFor(device) });
  m.memset(0);
  const all = pattern(64, 9);
  m.copyFromHost(all.subarray(20, 36));
  t.deepEqual(m.copyToHost(), all.slice(20, 36));
  // A Float32Array view with an offset into a larger buffer.
  const f = new Float32Array(all.buffer, 8, 4);
  m.copyFromHost(f);
  t.deepEqual(m.copyToHost(), all.slice(8, 24));
  m.free();
});

eachDeviceKind(test, 'copyFromHost with a shorter source writes at offset 0 and leaves the tail unchanged', (t, { device, Class }) => {
  const m = new Class(16, { queue: queueFor(device) });
  m.memset(0xaa);
  m.copyFromHost(new Uint8Array([1, 2, 3, 4, 5]));
  t.deepEqual(Array.from(m.copyToHost()), [1, 2, 3, 4, 5, ...Array(11).fill(0xaa)]);
  m.copyFromHost(new ArrayBuffer(0));
  t.deepEqual(Array.from(m.copyToHost()), [1, 2, 3, 4, 5, ...Array(11).fill(0xaa)], 'an empty source changes nothing');
  m.copyFromHost(Buffer.from([9, 9]));
  t.deepEqual(Array.from(m.copyToHost()).slice(0, 6), [9, 9, 3, 4, 5, 0xaa]);
  m.free();
});

// ---------------------------------------------------------------------------------------
// toBytes, memset
// ---------------------------------------------------------------------------------------

eachDeviceKind(test, 'toBytes() returns a Buffer copy of the memory', (t, { device, Class }) => {
  const m = new Class(256, { queue: queueFor(device) });
  const src = pattern(256, 13);
  m.copyFromHost(src);
  const bytes = m.toBytes();
  t.true(Buffer.isBuffer(bytes));
  t.is(bytes.length, 256);
  t.deepEqual(new Uint8Array(bytes), src);
  bytes.fill(0);
  t.deepEqual(m.copyToHost(), src, 'the Buffer is a copy: changing it leaves the memory alone');
  t.not(m.toBytes(), bytes, 'each call gives a new Buffer');
  m.free();
});

eachDeviceKind(test, 'memset fills every byte (dpctl test_memset: 0, j, 7) and defaults to 0', (t, { device, Class }) => {
  const n = 4086;
  const m = new Class(n, { queue: queueFor(device) });
  m.copyFromHost(pattern(n, 2));
  t.is(m.memset(), undefined);
  t.true(m.toBytes().equals(Buffer.alloc(n, 0)), 'memset() gives zeros');
  m.memset('j'.charCodeAt(0));
  t.true(m.toBytes().equals(Buffer.alloc(n, 'j')));
  m.memset('7'.charCodeAt(0));
  t.true(m.toBytes().equals(Buffer.alloc(n, '7')));
  m.memset(255);
  t.true(m.toBytes().equals(Buffer.alloc(n, 255)));
  m.memset(0n);
  t.true(m.toBytes().equals(Buffer.alloc(n, 0)), 'a bigint value is accepted');
  m.free();
});

// ---------------------------------------------------------------------------------------
// copyFromDevice
// ---------------------------------------------------------------------------------------

for (const src of KINDS) {
  eachDeviceKind(test, `copyFromDevice from ${src.kind} memory copies the bytes`, (t, { device, Class }) => {
    const queue = queueFor(device);
    const from = new src.Class(512, { queue });
    const to = new Class(512, { queue });
    from.copyFromHost(pattern(512, 21));
    to.memset(0);
    t.is(to.copyFromDevice(from), undefined);
    t.deepEqual(to.copyToHost(), pattern(512, 21));
    freeAll(from, to);
  });
}

eachDeviceKind(test, 'copyFromDevice from a shorter source writes at offset 0 and leaves the tail unchanged', (t, { device, Class }) => {
  const queue = queueFor(device);
  const from = new MemoryUSMShared(4, { queue });
  from.copyFromHost(new Uint8Array([1, 2, 3, 4]));
  const to = new Class(10, { queue });
  to.memset(0x55);
  to.copyFromDevice(from);
  t.deepEqual(Array.from(to.copyToHost()), [1, 2, 3, 4, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55]);
  freeAll(from, to);
});

eachDeviceKind(test, 'copyFromDevice from a plain object exposing __sycl_usm_array_interface__', (t, { device, Class }) => {
  const queue = queueFor(device);
  const from = new MemoryUSMDevice(64, { queue });
  from.copyFromHost(pattern(64, 33));
  const to = new Class(64, { queue });
  to.copyFromDevice(exporter(from));
  t.deepEqual(to.copyToHost(), pattern(64, 33));
  // Only part of the source, through an interface with an offset.
  const part = exporter(from, { shape: [16], offset: 8 });
  to.memset(0);
  to.copyFromDevice(part);
  t.deepEqual(to.copyToHost().subarray(0, 16), pattern(64, 33).subarray(8, 24));
  t.true(to.copyToHost().subarray(16).every((b) => b === 0));
  freeAll(from, to);
});

// ---------------------------------------------------------------------------------------
// __sycl_usm_array_interface__
// ---------------------------------------------------------------------------------------

eachDeviceKind(test, '__sycl_usm_array_interface__ describes the memory as dpctl does, a new object on each read', (t, { device, Class }) => {
  const queue = queueFor(device);
  const m = new Class(48, { queue });
  const iface = m.__sycl_usm_array_interface__;
  t.is(typeof iface, 'object');
  t.deepEqual(Object.keys(iface).sort(), ['data', 'shape', 'strides', 'syclobj', 'typestr', 'version']);
  t.true(Array.isArray(iface.data));
  t.is(iface.data.length, 2);
  t.is(typeof iface.data[0], 'bigint');
  t.is(iface.data[0], m.pointer);
  t.is(iface.data[1], false, 'data[1] is the read-only flag: false for writable memory');
  t.deepEqual(iface.shape, [48]);
  t.is(iface.strides, null);
  t.is(iface.typestr, '|u1');
  t.is(iface.version, 1);
  t.is(iface.syclobj, m.syclQueue);
  t.is(iface.syclobj, queue);
  const again = m.__sycl_usm_array_interface__;
  t.not(again, iface, 'a new object on each read');
  t.not(again.data, iface.data);
  t.not(again.shape, iface.shape);
  iface.shape[0] = 1;
  t.deepEqual(m.__sycl_usm_array_interface__.shape, [48], 'changing a returned object changes nothing');
  m.free();
});

// ---------------------------------------------------------------------------------------
// buffer: zero-copy host access
// ---------------------------------------------------------------------------------------

for (const { kind, Class } of KINDS.filter((k) => k.hostAccessible)) {
  eachDevice(test, `${kind}: buffer is one zero-copy ArrayBuffer of nbytes`, (t, device) => {
    const m = new Class(64, { queue: queueFor(device) });
    const buf = m.buffer;
    t.true(buf instanceof ArrayBuffer);
    t.is(buf.byteLength, 64);
    t.is(m.buffer, buf, 'the same ArrayBuffer on every read');
    m.free();
  });

  eachDevice(test, `${kind}: a TypedArray write through buffer is seen by device-side copies`, (t, device) => {
    const queue = queueFor(device);
    const m = new Class(64, { queue });
    m.memset(0);
    const view = new Uint8Array(m.buffer);
    view.set(pattern(64, 41));
    t.deepEqual(m.copyToHost(), pattern(64, 41), 'copyToHost sees the JS write');
    t.deepEqual(new Uint8Array(m.toBytes()), pattern(64, 41), 'toBytes sees the JS write');
    // Through device memory and back: the runtime itself read what JS wrote.
    const d = new MemoryUSMDevice(64, { queue });
    d.memset(0);
    d.copyFromDevice(m);
    t.deepEqual(d.copyToHost(), pattern(64, 41), 'a device-side copy sees the JS write');
    // Other views of the same buffer.
    new DataView(m.buffer).setUint32(0, 0xdeadbeef, true);
    const back = new MemoryUSMDevice(64, { queue });
    back.copyFromDevice(m);
    t.deepEqual(Array.from(back.copyToHost().subarray(0, 4)), [0xef, 0xbe, 0xad, 0xde]);
    new Float64Array(m.buffer)[7] = 1.5;
    t.is(m.toBytes().readDoubleLE(56), 1.5, 'a Float64Array write is seen too');
    freeAll(m, d, back);
  });

  eachDevice(test, `${kind}: device-side writes are seen through the TypedArray`, (t, device) => {
    const queue = queueFor(device);
    const m = new Class(64, { queue });
    const view = new Uint8Array(m.buffer);
    m.memset(0x5a);
    t.true(view.every((b) => b === 0x5a), 'memset is seen through the view');
    m.copyFromHost(pattern(64, 43));
    t.deepEqual(view, pattern(64, 43), 'copyFromHost is seen through the view');
    const d = new MemoryUSMDevice(64, { queue });
    d.copyFromHost(pattern(64, 47));
    m.copyFromDevice(d);
    t.deepEqual(view, pattern(64, 47), 'copyFromDevice from device memory is seen through the view');
    const f64 = new Float64Array(m.buffer);
    const expected = new Float64Array(pattern(64, 47).buffer);
    t.deepEqual(Array.from(f64), Array.from(expected));
    freeAll(m, d);
  });

  eachDevice(test, `${kind}: a view object shares the memory that buffer shows`, (t, device) => {
    const m = new Class(32, { queue: queueFor(device) });
    const v = new Class(m);
    const a = new Uint8Array(m.buffer);
    const b = new Uint8Array(v.buffer);
    a[3] = 77;
    t.is(b[3], 77);
    b[30] = 99;
    t.is(a[30], 99);
    freeAll(m, v);
  });
}

// ---------------------------------------------------------------------------------------
// Constructing from other memory
// ---------------------------------------------------------------------------------------

eachDeviceKind(test, 'new Class(memory of the same kind) is a zero-copy view (dpctl test_zero_copy)', (t, { device, kind, Class }) => {
  const queue = queueFor(device);
  const m = new Class(128, { queue });
  const v = new Class(m);
  t.true(v instanceof Class);
  t.not(v, m);
  t.is(v.pointer, m.pointer);
  t.is(v.nbytes, 128);
  t.is(v.referenceObj, null, 'a view of owning memory has no reference object');
  t.is(v.syclQueue, m.syclQueue, 'the view keeps the very same queue object');
  t.deepEqual(v.__sycl_usm_array_interface__.data, m.__sycl_usm_array_interface__.data);
  t.is(v.getUsmType(), kind);
  v.copyFromHost(pattern(128, 51));
  t.deepEqual(m.copyToHost(), pattern(128, 51), 'writes through the view reach the original');
  m.memset(3);
  t.true(v.copyToHost().every((b) => b === 3), 'writes to the original are seen by the view');
  // copy: true with a matching kind still does not copy (dpctl semantics).
  const w = new Class(m, { copy: true });
  t.is(w.pointer, m.pointer);
  // Options other than copy are ignored for views.
  const x = new Class(m, { alignment: 4096, queue: new SyclQueue(device) });
  t.is(x.pointer, m.pointer);
  freeAll(m, v, w, x);
});

eachDeviceKind(test, 'new Class(object exposing the interface) is a zero-copy view that keeps the exporter', (t, { device, kind, Class }) => {
  const queue = queueFor(device);
  const m = new Class(64, { queue });
  m.copyFromHost(pattern(64, 61));
  const exp = exporter(m);
  const v = new Class(exp);
  t.is(v.referenceObj, exp, 'referenceObj is the exporter');
  t.is(v.pointer, m.pointer);
  t.is(v.nbytes, 64);
  t.is(v.getUsmType(), kind);
  t.is(v.syclQueue, queue, 'a SyclQueue syclobj is kept as given');
  t.deepEqual(v.copyToHost(), pattern(64, 61));
  v.memset(1);
  t.true(m.copyToHost().every((b) => b === 1));
  // Memory objects themselves expose the interface: a class-agnostic exporter.
  const viaIface = new Class({ __sycl_usm_array_interface__: m.__sycl_usm_array_interface__ });
  t.is(viaIface.pointer, m.pointer);
  freeAll(m, v, viaIface);
});

// All six pairs of different kinds: an error without copy, a copy with copy: true.
for (const src of KINDS) {
  for (const dst of KINDS.filter((k) => k.kind !== src.kind)) {
    eachDevice(test, `new ${dst.kind}(${src.kind} memory, { copy: true }) copies into a new allocation`, (t, device) => {
      const queue = queueFor(device);
      const from = new src.Class(1000, { queue });
      from.copyFromHost(pattern(1000, 71));
      const to = new dst.Class(from, { copy: true, queue });
      t.true(to instanceof dst.Class);
      t.is(to.getUsmType(), dst.kind);
      t.is(to.nbytes, 1000);
      t.not(to.pointer, from.pointer, 'a new allocation');
      t.is(to.referenceObj, null, 'the copy owns its allocation');
      t.deepEqual(to.copyToHost(), from.copyToHost(), 'bytes equal');
      to.memset(0);
      t.deepEqual(from.copyToHost(), pattern(1000, 71), 'the source is untouched by writes to the copy');
      freeAll(from, to);
    });
  }
}

withDefaultDevice(test, 'copy: true without a queue lands on the default cached queue (dpctl semantics)', (t) => {
  const device = new SyclDevice();
  const own = new SyclQueue(new SyclContext(device), device);
  const from = new MemoryUSMShared(64, { queue: own });
  from.copyFromHost(pattern(64, 81));
  const to = new MemoryUSMDevice(from, { copy: true });
  const fresh = new MemoryUSMHost(8);
  t.is(to.syclQueue, fresh.syclQueue, 'the default cached queue, not the source queue');
  t.not(to.syclQueue, own);
  t.deepEqual(to.copyToHost(), pattern(64, 81));
  freeAll(from, to, fresh);
});

// ---------------------------------------------------------------------------------------
// asUsmMemory
// ---------------------------------------------------------------------------------------

eachDeviceKind(test, 'asUsmMemory returns the class of the kind, without copying', (t, { device, kind, Class }) => {
  const queue = queueFor(device);
  const m = new Class(32, { queue });
  for (const arg of [m, exporter(m)]) {
    const a = asUsmMemory(arg);
    t.true(a instanceof Class, `asUsmMemory gives a ${Class.name} for ${kind} memory`);
    for (const other of KINDS.filter((k) => k.kind !== kind)) t.false(a instanceof other.Class);
    t.is(a.pointer, m.pointer);
    t.is(a.nbytes, 32);
    t.is(a.getUsmType(), kind);
    t.true(a.syclContext.equals(m.syclContext));
    a.free();
  }
  m.free();
});

// ---------------------------------------------------------------------------------------
// The default queue
// ---------------------------------------------------------------------------------------

withDefaultDevice(test, 'allocations without a queue share one cached SyclQueue object', (t) => {
  const objs = [new MemoryUSMDevice(8), new MemoryUSMHost(8), new MemoryUSMShared(8), new MemoryUSMShared(8, {})];
  const q = objs[0].syclQueue;
  t.true(q instanceof SyclQueue);
  for (const o of objs) t.is(o.syclQueue, q, 'the very same object');
  t.true(q.syclDevice.equals(new SyclDevice()), 'on the default device');
  t.true(q.syclContext.equals(new SyclContext()), "in the default device's default context");
  t.is(objs[1].__sycl_usm_array_interface__.syclobj, q);
  freeAll(...objs);
});

withDefaultDevice(test, 'the default device prefers a GPU when there is one', (t) => {
  const hasGpu = DEVICES.some((d) => d.deviceType === 'gpu');
  const dflt = new SyclDevice();
  if (hasGpu) t.is(dflt.deviceType, 'gpu');
  t.true(DEVICES.some((d) => d.equals(dflt)), 'the default device is one of getDevices()');
  t.is(new MemoryUSMShared(8).syclDevice.filterString, dflt.filterString);
});

eachDeviceKind(test, 'memory made through the queue of another device-default queue works the same', (t, { device, kind, Class }) => {
  // A fresh SyclQueue(device) object: a different queue from the cached one, same context.
  const q = new SyclQueue(device);
  const m = new Class(16, { queue: q });
  t.is(m.syclQueue, q);
  t.is(m.getUsmType(queueFor(device)), kind, 'same default context: the kind is known there too');
  m.free();
});

// Make sure kindOf is used (and the table is complete).
test('the kind table covers device, shared and host with dpctl enum values', (t) => {
  t.deepEqual(KINDS.map((k) => [k.kind, k.enumValue]), [['device', 1], ['shared', 2], ['host', 3]]);
  t.is(kindOf('host').Class, MemoryUSMHost);
});
