// The asynchronous copies: copyToHostAsync, copyFromHostAsync, copyFromDeviceAsync and
// memsetAsync return Promises, leave the event loop free, keep what they touch alive, and
// reject with the same classes and codes as the synchronous methods.
import test from 'ava';
import {
  DEVICES, MemoryUSMDevice, MemoryUSMHost, eachDeviceKind, queueFor,
} from './helpers/addon.mjs';

const MiB = 1 << 20;

function pattern(n, seed) {
  const bytes = new Uint8Array(n);
  for (let i = 0; i < n; i++) bytes[i] = (i * 31 + seed) & 0xff;
  return bytes;
}

eachDeviceKind(test, 'async round trip: copyFromHostAsync, memsetAsync, copyToHostAsync', async (t, { device, Class }) => {
  const m = new Class(3 * MiB + 5, { queue: queueFor(device) });
  const src = pattern(3 * MiB + 5, 7);
  const pending = m.copyFromHostAsync(src);
  t.true(pending instanceof Promise);
  t.is(await pending, undefined);
  const dst = new Uint8Array(3 * MiB + 5);
  t.is(await m.copyToHostAsync(dst), dst, 'resolves to the destination it was given');
  t.true(Buffer.from(dst.buffer).equals(Buffer.from(src.buffer)));
  await m.memsetAsync(0x5a);
  const fresh = await m.copyToHostAsync();
  t.true(fresh instanceof Uint8Array);
  t.is(fresh.length, 3 * MiB + 5);
  t.true(fresh.every((b) => b === 0x5a));
  m.free();
});

eachDeviceKind(test, 'copyFromDeviceAsync copies from any kind', async (t, { device, Class }) => {
  const queue = queueFor(device);
  const src = new MemoryUSMDevice(MiB, { queue });
  src.copyFromHost(pattern(MiB, 3));
  const dst = new Class(MiB, { queue });
  await dst.copyFromDeviceAsync(src);
  t.true(dst.toBytes().equals(Buffer.from(pattern(MiB, 3).buffer)));
  src.free();
  dst.free();
});

eachDeviceKind(test, 'async errors reject with the synchronous class and code', async (t, { device, Class }) => {
  const m = new Class(64, { queue: queueFor(device) });
  await t.throwsAsync(m.copyToHostAsync(new Uint8Array(8)), { instanceOf: RangeError, code: 'ERR_DESTINATION_TOO_SMALL' });
  await t.throwsAsync(() => m.copyFromHostAsync(new Uint8Array(65)), { instanceOf: RangeError, code: 'ERR_SOURCE_TOO_LARGE' });
  t.throws(() => m.memsetAsync(256), { instanceOf: RangeError, code: 'ERR_INVALID_FILL_VALUE' }, 'bad arguments throw at once');
  t.throws(() => m.copyFromDeviceAsync({}), { instanceOf: TypeError, code: 'ERR_NOT_USM' });
  m.free();
  t.throws(() => m.copyToHostAsync(), { code: 'ERR_USM_FREED' });
});

eachDeviceKind(test, 'free() during an async copy never frees under it', async (t, { device, Class }) => {
  const m = new Class(8 * MiB, { queue: queueFor(device) });
  const src = pattern(8 * MiB, 11);
  m.copyFromHost(src);
  const dst = new Uint8Array(8 * MiB);
  const pending = m.copyToHostAsync(dst);
  m.free(); // releases the object's reference; the copy holds its own
  t.throws(() => m.nbytes, { code: 'ERR_USM_FREED' });
  await pending;
  t.true(Buffer.from(dst.buffer).equals(Buffer.from(src.buffer)), 'the copy completed with intact data');
});

const gpu = DEVICES.find((d) => d.backend === 'cuda');
const gpuTitle = 'a 1 ms setInterval keeps ticking during a 1 GiB asynchronous copy on the GPU';
if (gpu) {
  test.serial(`${gpuTitle} [${gpu.filterString}]`, async (t) => {
    const GiB = 1 << 30;
    const queue = queueFor(gpu);
    const device = new MemoryUSMDevice(GiB, { queue });
    const host = new Uint8Array(GiB);
    for (let i = 0; i < GiB; i += 4096) host[i] = (i >>> 12) & 0xff;
    let ticks = 0;
    const timer = setInterval(() => { ticks++; }, 1);
    const started = process.hrtime.bigint();
    await device.copyFromHostAsync(host);
    const back = await device.copyToHostAsync(new Uint8Array(GiB));
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    clearInterval(timer);
    t.log(`2 x 1 GiB in ${ms.toFixed(1)} ms; the 1 ms timer ticked ${ticks} times`);
    t.true(Buffer.compare(Buffer.from(back.buffer), Buffer.from(host.buffer)) === 0, 'bytes intact');
    // A blocked event loop would tick at most once or twice, after the copies.
    t.true(ticks >= Math.max(3, Math.floor(ms / 10)), `only ${ticks} ticks in ${ms.toFixed(1)} ms`);
    device.free();
  });
} else {
  test.skip(`${gpuTitle} [no GPU: no device with backend 'cuda': skipped]`, () => {});
}

test('a pinned MemoryUSMHost can be the host side of an async copy, and outlives its free()', async (t) => {
  if (DEVICES.length === 0) {
    t.pass('no device');
    return;
  }
  const queue = queueFor(DEVICES[0]);
  const host = new MemoryUSMHost(2 * MiB, { queue });
  const device = new MemoryUSMDevice(2 * MiB, { queue });
  device.copyFromHost(pattern(2 * MiB, 5));
  const view = new Uint8Array(host.buffer);
  const pending = device.copyToHostAsync(view);
  host.free(); // detaches `view`; the copy keeps the host allocation alive meanwhile
  await pending;
  t.is(view.length, 0, 'the view was detached by free()');
  device.free();
});
