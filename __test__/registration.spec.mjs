// registerHost / HostRegistration: registered host memory and its safety rules (detach,
// transfer, resize, GC, unregister during an async copy, bad arguments), on every device:
// the OpenCL CPU device reports a no-op (`registered: false`); a CUDA device pins.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { addon, DEVICES, MemoryUSMDevice, queueFor, label, pattern } from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';

const { registerHost, HostRegistration, ErrorCode } = addon;
const MiB = 2 ** 20;

/** Byte equality of two views (ava's deepEqual is slow on MiBs). */
const bytesOf = (view) => Buffer.from(view.buffer, view.byteOffset, view.byteLength);
const same = (t, a, b, note) => t.true(Buffer.compare(bytesOf(a), bytesOf(b)) === 0, note);
const INDEX = fileURLToPath(new URL('../index.js', import.meta.url));

/** Each case on every device, serially (registration is process-wide). */
function eachDevice(title, fn) {
  if (DEVICES.length === 0) {
    test.skip(`${title} [no device: skipped]`, () => {});
    return;
  }
  for (const device of DEVICES) test.serial(`${title} [${label(device)}]`, (t) => fn(t, device, queueFor(device)));
}

/** Detaches `buffer`, moving its memory to the returned buffer (`transfer()` where Node has it). */
const detach = (buffer) => structuredClone(buffer, { transfer: [buffer] });

const expected = (device) => device.backend === 'cuda';

eachDevice('registerHost reports what the runtime did, and copies through it round-trip', (t, device, queue) => {
  const n = 4 * MiB;
  const host = new ArrayBuffer(n);
  const bytes = new Uint8Array(host);
  bytes.set(pattern(n));
  const registration = registerHost(host, { queue });
  t.true(registration instanceof HostRegistration);
  t.is(registration.registered, expected(device));
  t.is(registration.byteLength, n);
  const dev = new MemoryUSMDevice(n, { queue });
  try {
    // Views inside the registration use it too.
    const small = new MemoryUSMDevice(MiB, { queue });
    small.copyFromHost(new Uint8Array(host, 0, MiB));
    small.copyToHost(new Uint8Array(host, MiB, MiB));
    small.free();
    same(t, bytes.subarray(MiB, 2 * MiB), pattern(n).subarray(0, MiB));
    bytes.set(pattern(n));
    dev.copyFromHost(host);
    bytes.fill(0);
    dev.copyToHost(host);
    same(t, bytes, pattern(n));
  } finally {
    dev.free();
    registration.unregister();
  }
});

eachDevice('registrations of a Buffer, a view and a SharedArrayBuffer serve their copies', (t, device, queue) => {
  const n = 2 * MiB;
  const sab = new SharedArrayBuffer(n);
  const buffer = Buffer.alloc(n);
  for (const [name, target, view] of [
    ['SharedArrayBuffer', sab, new Uint8Array(sab)],
    ['Buffer', buffer, buffer],
    ['DataView', new DataView(new ArrayBuffer(n)), null],
  ]) {
    const registration = registerHost(target, { queue });
    t.is(registration.byteLength, n, name);
    const bytes = view ?? new Uint8Array(target.buffer);
    bytes.set(pattern(n));
    const dev = new MemoryUSMDevice(n, { queue });
    dev.copyFromHost(target);
    bytes.fill(0);
    dev.copyToHost(target);
    same(t, new Uint8Array(bytes), pattern(n), name);
    dev.free();
    registration.unregister();
  }
});

eachDevice('registrations cannot overlap; unregister() frees the range; it is idempotent', (t, device, queue) => {
  const host = new ArrayBuffer(MiB);
  const first = registerHost(new Uint8Array(host, 0, 4096), { queue });
  throwsExactly(t, () => registerHost(host, { queue }), Error, ErrorCode.HostRangeRegistered);
  const adjacent = registerHost(new Uint8Array(host, 4096), { queue });
  first.unregister();
  first.unregister();
  first[Symbol.dispose ?? Symbol.for('nodejs.dispose')]();
  adjacent[Symbol.dispose ?? Symbol.for('nodejs.dispose')]();
  registerHost(host, { queue }).unregister();
  t.pass();
});

eachDevice('a detached (transferred) registered buffer ends its registration: copies go the ordinary way', (t, device, queue) => {
  const n = 2 * MiB;
  const host = new ArrayBuffer(n);
  new Uint8Array(host).set(pattern(n));
  const registration = registerHost(host, { queue });
  const moved = detach(host); // the same memory, now another buffer's
  t.is(host.byteLength, 0);
  const dev = new MemoryUSMDevice(n, { queue });
  try {
    dev.copyFromHost(moved);
    const back = new Uint8Array(n);
    dev.copyToHost(back);
    same(t, back, pattern(n));
    // The stale registration no longer blocks the bytes' new owner.
    registerHost(moved, { queue }).unregister();
    throwsExactly(t, () => dev.copyToHost(host), RangeError, ErrorCode.DestinationTooSmall);
    const clone = detach(moved);
    dev.copyToHost(clone);
    same(t, new Uint8Array(clone), pattern(n));
  } finally {
    dev.free();
    registration.unregister();
  }
});

eachDevice('a resized registered buffer is no longer served by its registration', (t, device, queue) => {
  const n = 2 * MiB;
  const host = new ArrayBuffer(n, { maxByteLength: 2 * n });
  new Uint8Array(host).set(pattern(n));
  const registration = registerHost(host, { queue });
  host.resize(n / 2);
  const dev = new MemoryUSMDevice(n, { queue });
  try {
    dev.copyFromHost(host); // the first half, the ordinary way
    const back = new Uint8Array(n);
    dev.copyToHost(back);
    same(t, back.subarray(0, n / 2), pattern(n).subarray(0, n / 2));
    const half = new Uint8Array(host);
    half.fill(0);
    const into = new MemoryUSMDevice(n / 2, { queue });
    into.copyFromHost(back.subarray(0, n / 2));
    into.copyToHost(host);
    into.free();
    same(t, half, pattern(n).subarray(0, n / 2));
    host.resize(2 * n); // grows in place: the registered length still differs
    // The stale registration ended: the bytes can be registered again.
    registerHost(host, { queue }).unregister();
  } finally {
    dev.free();
    registration.unregister();
  }
});

eachDevice('unregister() during an async copy of a registered SharedArrayBuffer is safe', async (t, device, queue) => {
  const n = 8 * MiB;
  const sab = new SharedArrayBuffer(n);
  new Uint8Array(sab).set(pattern(n));
  const registration = registerHost(sab, { queue });
  const dev = new MemoryUSMDevice(n, { queue });
  const copy = dev.copyFromHostAsync(sab);
  registration.unregister();
  await copy;
  const into = new SharedArrayBuffer(n);
  const second = registerHost(into, { queue });
  const back = dev.copyToHostAsync(new Uint8Array(into));
  dev.free(); // the task holds the memory, and the registration holds on until it is done
  second.unregister();
  await back;
  same(t, new Uint8Array(into), pattern(n));
});

test('bad arguments are refused with coded errors', (t) => {
  throwsExactly(t, () => registerHost(123), TypeError, ErrorCode.InvalidArgType);
  throwsExactly(t, () => registerHost([1, 2]), TypeError, ErrorCode.InvalidArgType);
  if (DEVICES.length === 0) return;
  throwsExactly(t, () => registerHost(new ArrayBuffer(0)), RangeError, ErrorCode.InvalidSize);
  const detached = new ArrayBuffer(8);
  detach(detached);
  throwsExactly(t, () => registerHost(detached), RangeError, ErrorCode.InvalidSize);
  const host = new ArrayBuffer(64);
  throwsExactly(t, () => registerHost(host, { queue: 5 }), TypeError, ErrorCode.InvalidArgType);
  throwsExactly(t, () => registerHost(host, { device: 1 }), TypeError, ErrorCode.InvalidArgType);
  throwsExactly(t, () => registerHost(host, 'queue'), TypeError, ErrorCode.InvalidArgType);
  throwsExactly(t, () => new HostRegistration(), TypeError, ErrorCode.ConstructCallRequired);
  throwsExactly(t, () => HostRegistration.prototype.unregister.call({}), TypeError, ErrorCode.InvalidThis);
  const registration = registerHost(host);
  throwsExactly(t, () => structuredClone(registration), TypeError, ErrorCode.NotCloneable);
  registration.unregister();
});

test.serial('a registration that is collected is unregistered', (t) => {
  if (DEVICES.length === 0) return t.pass();
  const script = `
    const m = require(${JSON.stringify(INDEX)});
    const host = new ArrayBuffer(1 << 20);
    (() => { m.registerHost(host); })();
    let blocked;
    try { m.registerHost(host); blocked = false; } catch (e) { blocked = e.code; }
    (async () => {
      for (let i = 0; i < 10; i++) { global.gc(); await new Promise((r) => setTimeout(r, 10)); }
      m.registerHost(host).unregister();
      console.log(JSON.stringify({ blocked }));
    })();`;
  const run = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' });
  t.is(run.status, 0, run.stderr);
  t.deepEqual(JSON.parse(run.stdout.trim().split('\n').pop()), { blocked: 'ERR_HOST_RANGE_REGISTERED' });
});

/** Runs a case of fixtures/registration-cases.cjs in a process of its own. */
function runCase(t, name) {
  const script = fileURLToPath(new URL('./fixtures/registration-cases.cjs', import.meta.url));
  const run = spawnSync(process.execPath, ['--expose-gc', script, INDEX, name], { encoding: 'utf8' });
  t.is(run.status, 0, run.stderr);
  return JSON.parse(run.stdout.trim().split('\n').pop());
}

test('a registration cached by its own buffer (WeakMap, or a property) is collected with it', (t) => {
  if (DEVICES.length === 0) return t.pass();
  t.deepEqual(runCase(t, 'cycle'), { registrations: 0, buffers: 0 });
  // 256 dropped 1 MiB buffers so cached: their memory comes back (it was all kept).
  t.true(runCase(t, 'cycleRss').grewMiB < 128);
});

test('a reachable HostRegistration keeps its buffer alive', (t) => {
  if (DEVICES.length === 0) return t.pass();
  t.deepEqual(runCase(t, 'heldWhileReachable'), { held: true });
});

test('an ArrayBuffer registered here and transferred to a worker is registered there', (t) => {
  if (DEVICES.length === 0) return t.pass();
  t.deepEqual(runCase(t, 'transferred'), { worker: 'ok' });
});

test("a freed memory's registered buffer does not block its block's next owner in a worker", (t) => {
  if (DEVICES.length === 0) return t.pass();
  // The pool hands the freed block to the next allocation of its size class.
  t.deepEqual(runCase(t, 'freedAndReused'), { reused: true, result: 'ok' });
});

test('a SharedArrayBuffer registered in two threads is a real overlap', (t) => {
  if (DEVICES.length === 0) return t.pass();
  t.deepEqual(runCase(t, 'sharedOverlap'), { worker: ErrorCode.HostRangeRegistered, after: 'ok' });
});
