// MemoryUSMShared prefetch() and memAdvise(): Promises of { applied }, on every device.
// The OpenCL CPU device accepts both and does nothing (applied: false); a CUDA device
// migrates and advises (applied: true). Contents never change.
import test from 'ava';
import { addon, DEVICES, MemoryUSMDevice, MemoryUSMShared, queueFor, label, pattern } from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';

const { ErrorCode } = addon;
const MiB = 2 ** 20;

/** Byte equality of two views (ava's deepEqual is slow on MiBs). */
const bytesOf = (view) => Buffer.from(view.buffer, view.byteOffset, view.byteLength);
const same = (t, a, b, note) => t.true(Buffer.compare(bytesOf(a), bytesOf(b)) === 0, note);
const ADVICE = ['read-mostly', 'unset-read-mostly', 'preferred-location', 'unset-preferred-location', 'accessed-by', 'unset-accessed-by'];

function eachDevice(title, fn) {
  if (DEVICES.length === 0) {
    test.skip(`${title} [no device: skipped]`, () => {});
    return;
  }
  for (const device of DEVICES) test.serial(`${title} [${label(device)}]`, (t) => fn(t, device, queueFor(device)));
}

const acts = (device) => device.backend === 'cuda';

eachDevice('prefetch() to the device and back keeps the contents and says whether it acted', async (t, device, queue) => {
  const n = 4 * MiB;
  const shared = new MemoryUSMShared(n, { queue });
  new Uint8Array(shared.buffer).set(pattern(n));
  const toDevice = await shared.prefetch();
  t.deepEqual(Object.keys(toDevice), ['applied']);
  t.true(Object.isFrozen(toDevice));
  t.is(toDevice.applied, acts(device));
  t.is((await shared.prefetch({ to: 'device' })).applied, acts(device));
  // SYCL has no prefetch to the host: only CUDA acts on it.
  t.is((await shared.prefetch({ to: 'host' })).applied, acts(device));
  same(t, new Uint8Array(shared.buffer), pattern(n));
  // A device-side copy out of prefetched memory sees the same bytes.
  await shared.prefetch();
  const dev = new MemoryUSMDevice(n, { queue });
  dev.copyFromDevice(shared);
  same(t, dev.copyToHost(), pattern(n));
  dev.free();
  shared.free();
});

eachDevice('memAdvise() takes every advice at either location', async (t, device, queue) => {
  const n = MiB;
  const shared = new MemoryUSMShared(n, { queue });
  new Uint8Array(shared.buffer).set(pattern(n));
  for (const advice of ADVICE) {
    for (const location of [undefined, 'device', 'host']) {
      const result = await shared.memAdvise(advice, location === undefined ? undefined : { location });
      t.is(result.applied, acts(device), `${advice} ${location}`);
    }
  }
  same(t, new Uint8Array(shared.buffer), pattern(n));
  shared.free();
});

eachDevice('free() during a prefetch lets it finish; afterwards it is refused', async (t, device, queue) => {
  const shared = new MemoryUSMShared(8 * MiB, { queue });
  const pending = shared.prefetch();
  shared.free();
  t.is(typeof (await pending).applied, 'boolean');
  throwsExactly(t, () => shared.prefetch(), Error, ErrorCode.UsmFreed);
  throwsExactly(t, () => shared.memAdvise('read-mostly'), Error, ErrorCode.UsmFreed);
});

test('bad arguments are refused with coded errors', async (t) => {
  if (DEVICES.length === 0) return t.pass();
  const shared = new MemoryUSMShared(64);
  throwsExactly(t, () => shared.prefetch({ to: 'gpu' }), TypeError, ErrorCode.InvalidArgValue);
  throwsExactly(t, () => shared.prefetch({ to: 1 }), TypeError, ErrorCode.InvalidArgType);
  throwsExactly(t, () => shared.prefetch({ where: 'host' }), TypeError, ErrorCode.InvalidArgType);
  throwsExactly(t, () => shared.prefetch('host'), TypeError, ErrorCode.InvalidArgType);
  throwsExactly(t, () => shared.memAdvise(), TypeError, ErrorCode.InvalidArgType);
  throwsExactly(t, () => shared.memAdvise('read-only'), TypeError, ErrorCode.InvalidArgValue);
  throwsExactly(t, () => shared.memAdvise('preferred-location', { location: 'gpu' }), TypeError, ErrorCode.InvalidArgValue);
  throwsExactly(t, () => shared.memAdvise('read-mostly', { to: 'host' }), TypeError, ErrorCode.InvalidArgType);
  throwsExactly(t, () => MemoryUSMShared.prototype.prefetch.call({}), TypeError, ErrorCode.InvalidThis);
  // Only shared memory takes hints.
  const device = new MemoryUSMDevice(64);
  const err = await t.throwsAsync(MemoryUSMShared.prototype.prefetch.call(device), { code: ErrorCode.UsmKindMismatch });
  t.is(err.constructor, Error);
  device.free();
  shared.free();
});
