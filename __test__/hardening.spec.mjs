// Inputs that once crashed, corrupted or slipped through without a code: each is now a
// clean error with its code, and the process carries on.
import test from 'ava';
import { Worker } from 'node:worker_threads';
import {
  addon, HAS_DEVICE, DEVICES, MemoryUSMDevice, MemoryUSMShared, SyclContext, SyclDevice, SyclQueue,
  SyclQueueCreationError, USMAllocationError, asUsmMemory, queueFor,
} from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';

const device = DEVICES[0];
const withDevice = HAS_DEVICE ? test : test.skip;
const serialWithDevice = HAS_DEVICE ? test.serial : test.serial.skip;

serialWithDevice('memory beyond 4 GiB has no buffer and no default Uint8Array: ERR_HOST_BUFFER_TOO_LARGE', (t) => {
  let m;
  try {
    m = new MemoryUSMShared(2 ** 32 + 4096, { queue: queueFor(device) });
  } catch (err) {
    t.is(err.code, 'ERR_USM_ALLOCATION', 'the device may refuse 4 GiB; then there is nothing to check');
    return;
  }
  throwsExactly(t, () => m.buffer, RangeError, 'ERR_HOST_BUFFER_TOO_LARGE');
  throwsExactly(t, () => m.copyToHost(), RangeError, 'ERR_HOST_BUFFER_TOO_LARGE');
  m.free();
  t.is(new MemoryUSMShared(16, { queue: queueFor(device) }).buffer.byteLength, 16, 'the process carries on');
});

withDevice('async copies survive JS detaching, transferring or shrinking the buffer mid-copy', async (t) => {
  const n = 8 << 20;
  const m = new MemoryUSMDevice(n, { queue: queueFor(device) });
  m.memset(0x21);
  // Destination transferred away (and collectable) while the copy runs: a clean rejection.
  const dst = new ArrayBuffer(n);
  const pending = m.copyToHostAsync(dst);
  structuredClone(dst, { transfer: [dst] });
  await t.throwsAsync(pending, { instanceOf: RangeError, code: 'ERR_DESTINATION_TOO_SMALL' });
  // Destination shrunk meanwhile: the same.
  const resizable = new ArrayBuffer(n, { maxByteLength: n });
  const shrinking = m.copyToHostAsync(resizable);
  resizable.resize(16);
  await t.throwsAsync(shrinking, { instanceOf: RangeError, code: 'ERR_DESTINATION_TOO_SMALL' });
  // A resizable destination left alone is filled.
  const kept = new ArrayBuffer(n, { maxByteLength: 2 * n });
  t.is(await m.copyToHostAsync(kept), kept);
  t.is(new Uint8Array(kept)[n - 1], 0x21);
  // Source transferred away right after the call: the copy took its bytes at the call.
  const src = new Uint8Array(n).fill(0x42);
  const sending = m.copyFromHostAsync(src);
  structuredClone(src.buffer, { transfer: [src.buffer] });
  await sending;
  t.is(m.toBytes()[n - 1], 0x42);
  m.free();
});

withDevice('toBytes of memory beyond 4 GiB is refused before copying', (t) => {
  let m;
  try {
    m = new MemoryUSMDevice(2 ** 32 + 1, { queue: queueFor(device) });
  } catch (err) {
    t.is(err.code, 'ERR_USM_ALLOCATION');
    return;
  }
  // Our code, not Node's refusal of a 4 GiB Buffer: the check comes before any allocation or copy.
  throwsExactly(t, () => m.toBytes(), RangeError, 'ERR_HOST_BUFFER_TOO_LARGE');
  m.free();
});

withDevice('a frozen memory object still has its buffer, detached by free(); a memory object is no options bag', (t) => {
  const m = new MemoryUSMShared(16, { queue: queueFor(device) });
  Object.freeze(m);
  const buffer = m.buffer;
  t.is(buffer.byteLength, 16);
  t.is(m.buffer, buffer);
  m.free();
  t.is(buffer.byteLength, 0);
  throwsExactly(t, () => new MemoryUSMShared(8, new MemoryUSMShared(8, { queue: queueFor(device) })), TypeError, 'ERR_INVALID_ARG_TYPE');
});

withDevice('hidden slots are read as own properties only: Object.prototype getters are never called', async (t) => {
  const m = new MemoryUSMShared(64, { queue: queueFor(device) });
  const view = new MemoryUSMShared({ __sycl_usm_array_interface__: m.__sycl_usm_array_interface__ });
  let called = 0;
  const patched = [];
  for (const symbol of Object.getOwnPropertySymbols(view)) {
    Object.defineProperty(Object.prototype, symbol, { configurable: true, get() { called++; return new ArrayBuffer(1); } });
    patched.push(symbol);
  }
  try {
    const fresh = new MemoryUSMShared(64, { queue: queueFor(device) });
    t.is(fresh.referenceObj, null);
    t.is(fresh.buffer.byteLength, 64);
    await fresh.copyToHostAsync(new Uint8Array(64));
    fresh.free();
    t.is(called, 0);
  } finally {
    for (const symbol of patched) delete Object.prototype[symbol];
    view.free();
    m.free();
  }
});

withDevice('a queue, context, device or array in place of the options object is an error', (t) => {
  const queue = queueFor(device);
  for (const wrong of [queue, queue.syclContext, new SyclDevice(device.filterString), [queue]]) {
    throwsExactly(t, () => new MemoryUSMShared(16, wrong), TypeError, 'ERR_INVALID_ARG_TYPE');
  }
});

withDevice('messages never run user code: objects with no or a throwing toString still get coded errors', (t) => {
  const hostile = { toString() { throw new Error('user toString ran'); } };
  throwsExactly(t, () => asUsmMemory(Object.create(null)), TypeError, 'ERR_NOT_USM');
  throwsExactly(t, () => asUsmMemory(hostile), TypeError, 'ERR_NOT_USM');
  throwsExactly(t, () => new MemoryUSMShared(16, { queue: Object.create(null) }), TypeError, 'ERR_INVALID_ARG_TYPE');
  const m = new MemoryUSMShared(16, { queue: queueFor(device) });
  const iface = { ...m.__sycl_usm_array_interface__, syclobj: hostile };
  throwsExactly(t, () => new MemoryUSMShared({ __sycl_usm_array_interface__: iface }), TypeError, 'ERR_SUAI_SYCLOBJ');
  m.free();
});

withDevice('arguments napi-rs used to convert itself now carry codes', (t) => {
  const d = new SyclDevice(device.filterString);
  throwsExactly(t, () => d.hasAspect(1), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => d.equals({}), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => queueFor(device).equals(d), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => queueFor(device).syclContext.equals(null), TypeError, 'ERR_INVALID_ARG_TYPE');
});

withDevice('SyclQueue(context, unknown device) is a SyclQueueCreationError; a device after a filter is refused', (t) => {
  const context = new SyclContext();
  throwsExactly(t, () => new SyclQueue(context, 'cuda:gpu:9'), SyclQueueCreationError, 'ERR_QUEUE_CREATION');
  throwsExactly(t, () => new SyclQueue(device.filterString, device), TypeError, 'ERR_INVALID_ARG_TYPE');
});

withDevice('an alignment the runtime cannot honour is a USMAllocationError, never a misaligned pointer', (t) => {
  for (const alignment of [1n << 40n, 1n << 62n]) {
    let m;
    try {
      m = new MemoryUSMShared(100, { alignment, queue: queueFor(device) });
    } catch (err) {
      t.true(err instanceof USMAllocationError || err instanceof RangeError, `${err.constructor.name}: ${err.message}`);
      continue;
    }
    t.is(m.pointer % alignment, 0n, 'an allocation that succeeds is aligned');
    m.free();
  }
});

withDevice('a worker thread that used the addon exits cleanly, and the main thread carries on', async (t) => {
  const source = `
    const m = require(${JSON.stringify(new URL('../index.js', import.meta.url).pathname)});
    try { new m.MemoryUSMShared(0); } catch {}
    const s = new m.MemoryUSMShared(64); s.memset(7); s.free();
  `;
  for (let i = 0; i < 3; i++) {
    const code = await new Promise((resolve, reject) => {
      const worker = new Worker(source, { eval: true });
      worker.on('error', reject);
      worker.on('exit', resolve);
    });
    t.is(code, 0);
  }
  const m = new MemoryUSMShared(8, { queue: queueFor(device) });
  m.memset(3);
  t.is(m.toBytes()[7], 3);
  m.free();
});

withDevice('an exporter that holds its own view (a cycle) is still collected, with its memory', async (t) => {
  const { spawnSync } = await import('node:child_process');
  const script = `
    const m = require(${JSON.stringify(new URL('../index.js', import.meta.url).pathname)});
    let collected = 0;
    const registry = new FinalizationRegistry(() => collected++);
    function make() {
      const backing = new m.MemoryUSMShared(1 << 20);
      const x = { get __sycl_usm_array_interface__() { return backing.__sycl_usm_array_interface__; } };
      x.view = new m.MemoryUSMShared(x); // the exporter holds its view: a cycle
      x.buffer = x.view.buffer;          // and the view's buffer, which holds the exporter too
      registry.register(x, 'x');
    }
    (async () => {
      for (let i = 0; i < 50; i++) make();
      for (let i = 0; i < 10; i++) { global.gc(); await new Promise((r) => setTimeout(r, 10)); }
      console.log(JSON.stringify({ collected, inUse: m.poolStats().shared.inUseBytes }));
    })();`;
  const run = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' });
  t.is(run.status, 0, run.stderr);
  const { collected, inUse } = JSON.parse(run.stdout.trim().split('\n').pop());
  t.true(collected >= 45, `only ${collected} of 50 exporters were collected`);
  t.true(inUse < 8 << 20, `${inUse} bytes of shared memory still in use`);
});

// Issue 24.7: a token's handle is read in the one spelling share() writes. Upper case or
// zero padding used to name the same numbers, so the respelled token opened the share
// (and so closed it for the real receiver).
withDevice('a token respelled (upper case, zero padding) is ERR_SHARE_TOKEN_INVALID and the real one still opens', (t) => {
  const { openShared, revokeShared } = addon;
  const m = new MemoryUSMShared(64, { queue: queueFor(device) });
  const token = m.share();
  const [id, mac] = token.handle.split('.');
  const spellings = [
    token.handle.toUpperCase(),
    `${id}.${mac.toUpperCase()}`,
    `0${id}.${mac}`,
    `00${id}.${mac}`,
    `${id.padStart(16, '0')}.${mac}`,
    ` ${token.handle}`,
    `${token.handle}\n`,
  ].filter((handle) => handle !== token.handle);
  t.true(spellings.length >= 5);
  for (const handle of spellings) {
    throwsExactly(t, () => openShared({ ...token, handle }), TypeError, 'ERR_SHARE_TOKEN_INVALID', handle);
    throwsExactly(t, () => revokeShared({ ...token, handle }), TypeError, 'ERR_SHARE_TOKEN_INVALID', handle);
  }
  const opened = openShared(token);
  t.is(opened.pointer, m.pointer, 'no respelling burned the token');
  opened.free();
  m.free();
});

// Issue 24.7: Reflect.construct with another class as new.target made a MemoryUSMShared
// (by instanceof and methods) holding device memory.
withDevice('a memory object is only ever made as the class of its kind', (t) => {
  const { _Memory, MemoryUSMHost } = addon;
  const q = queueFor(device);
  const wrong = [
    [_Memory, [1, 16, { queue: q }], MemoryUSMShared],
    [_Memory, [3, 16, { queue: q }], MemoryUSMDevice],
    [_Memory, [2, 16, { queue: q }], Object],
    [_Memory, [9, 16, { queue: q }], MemoryUSMShared],
    [MemoryUSMDevice, [16, { queue: q }], MemoryUSMShared],
    [MemoryUSMShared, [16, { queue: q }], MemoryUSMHost],
    [MemoryUSMShared, [16, { queue: q }], function Plain() {}],
  ];
  // A prototype chain through a Proxy whose trap throws: refused with the code too.
  const trap = function Trapping() {};
  trap.prototype = Object.create(new Proxy(MemoryUSMShared.prototype, { getPrototypeOf() { throw new Error('trap ran'); } }));
  wrong.push([MemoryUSMShared, [16, { queue: q }], trap]);
  for (const [Class, args, NewTarget] of wrong) {
    throwsExactly(t, () => Reflect.construct(Class, args, NewTarget), TypeError, 'ERR_CONSTRUCT_CALL_REQUIRED', `${Class.name} as ${NewTarget.name}`);
  }
  // The right class as new.target, a subclass, or _Memory with the matching kind are fine.
  class Mine extends MemoryUSMShared {}
  const made = [
    Reflect.construct(MemoryUSMShared, [16, { queue: q }], MemoryUSMShared),
    new Mine(16, { queue: q }),
    Reflect.construct(_Memory, [2, 16, { queue: q }], MemoryUSMShared),
    Reflect.construct(_Memory, [1, 16, { queue: q }], MemoryUSMDevice),
  ];
  t.deepEqual(made.map((m) => m.getUsmType()), ['shared', 'shared', 'shared', 'device']);
  t.true(made[1] instanceof Mine);
  for (const m of made) m.free();
});

// Issue 24.7: toBytes() of small memory was a slice of Node's shared 8 KiB pool, whose
// `.buffer` showed other Buffers' bytes.
withDevice('toBytes() returns a Buffer over an ArrayBuffer of its own', (t) => {
  const q = queueFor(device);
  for (const nbytes of [1, 16, 100, 4000, 8192, 70000]) {
    const m = new MemoryUSMDevice(nbytes, { queue: q });
    m.memset(0x5a);
    const neighbour = Buffer.allocUnsafe(16).fill(0x11);
    const bytes = m.toBytes();
    t.true(Buffer.isBuffer(bytes));
    t.is(bytes.byteOffset, 0, `${nbytes}`);
    t.is(bytes.buffer.byteLength, nbytes, `${nbytes}: the buffer is exactly the memory's bytes`);
    t.true(bytes.every((b) => b === 0x5a));
    t.is(neighbour[0], 0x11);
    m.free();
  }
});

// Issue 24.6: a revoked Proxy made V8's uncoded "Cannot perform 'IsArray' on a proxy that
// has been revoked" escape from argument checks.
withDevice('a revoked Proxy in place of any argument is refused with a coded error', async (t) => {
  const { openShared, revokeShared, registerHost, getDevices, IPCMemoryHandle } = addon;
  const q = queueFor(device);
  const revoked = () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy;
  };
  const revokedFunction = () => {
    const { proxy, revoke } = Proxy.revocable(function f() {}, {});
    revoke();
    return proxy;
  };
  const m = new MemoryUSMShared(64, { queue: q });
  const iface = (field) => ({ __sycl_usm_array_interface__: { ...m.__sycl_usm_array_interface__, [field]: revoked() } });
  const cases = [
    ['copyFromHost', () => m.copyFromHost(revoked()), 'ERR_INVALID_ARG_TYPE'],
    ['copyToHost', () => m.copyToHost(revoked()), 'ERR_INVALID_ARG_TYPE'],
    ['copyFromDevice', () => m.copyFromDevice(revoked()), 'ERR_NOT_USM'],
    ['share', () => m.share(revoked()), 'ERR_INVALID_ARG_TYPE'],
    ['openShared', () => openShared(revoked()), 'ERR_SHARE_TOKEN_INVALID'],
    ['revokeShared', () => revokeShared(revoked()), 'ERR_SHARE_TOKEN_INVALID'],
    ['registerHost buffer', () => registerHost(revoked()), 'ERR_INVALID_ARG_TYPE'],
    ['registerHost options', () => registerHost(new ArrayBuffer(8), revoked()), 'ERR_INVALID_ARG_TYPE'],
    ['constructor options', () => new MemoryUSMShared(16, revoked()), 'ERR_INVALID_ARG_TYPE'],
    ['constructor source', () => new MemoryUSMShared(revoked()), 'ERR_NOT_USM'],
    ['constructor source (function)', () => new MemoryUSMShared(revokedFunction()), 'ERR_NOT_USM'],
    ['interface', () => new MemoryUSMShared({ __sycl_usm_array_interface__: revoked() }), 'ERR_SUAI_MALFORMED'],
    ['interface data', () => new MemoryUSMShared(iface('data')), 'ERR_SUAI_DATA'],
    ['interface shape', () => new MemoryUSMShared(iface('shape')), 'ERR_SUAI_SHAPE'],
    ['interface syclobj', () => new MemoryUSMShared(iface('syclobj')), 'ERR_SUAI_SYCLOBJ'],
    ['asUsmMemory', () => asUsmMemory(revoked()), 'ERR_NOT_USM'],
    ['getDevices', () => getDevices(revoked()), 'ERR_INVALID_ARG_TYPE'],
    ['SyclDevice', () => new SyclDevice(revoked()), 'ERR_INVALID_ARG_TYPE'],
    ['SyclQueue', () => new SyclQueue(revoked()), 'ERR_INVALID_ARG_TYPE'],
    ['SyclContext', () => new SyclContext(revoked()), 'ERR_INVALID_ARG_TYPE'],
    ['getUsmType', () => m.getUsmType(revoked()), 'ERR_INVALID_SYCLOBJ'],
    ['IPCMemoryHandle', () => new IPCMemoryHandle(revoked()), 'ERR_NOT_USM'],
    ['IPCMemoryHandle.open bytes', () => IPCMemoryHandle.open(revoked(), { nbytes: 64 }), 'ERR_INVALID_ARG_TYPE'],
    ['IPCMemoryHandle.open options', () => IPCMemoryHandle.open(new Uint8Array(64), revoked()), 'ERR_INVALID_ARG_TYPE'],
    ['IPCMemoryHandle.isAvailable', () => IPCMemoryHandle.isAvailable(revoked()), 'ERR_INVALID_ARG_TYPE'],
  ];
  for (const [what, call, code] of cases) {
    const err = t.throws(call, undefined, what);
    t.is(err?.code, code, `${what}: ${err?.message}`);
    t.false(/revoked/.test(err?.message) && /Cannot perform/.test(err?.message), `${what}: V8's own message`);
  }
  for (const [what, call] of [
    ['prefetch', () => m.prefetch(revoked())],
    ['memAdvise', () => m.memAdvise('read-mostly', revoked())],
    ['copyFromHostAsync', () => m.copyFromHostAsync(revoked())],
  ]) {
    const err = await t.throwsAsync(async () => call(), undefined, what);
    t.is(err?.code, 'ERR_INVALID_ARG_TYPE', `${what}: ${err?.message}`);
  }
  m.free();
});
