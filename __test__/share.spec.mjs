// Sharing memory between worker threads: mem.share() makes a token that postMessage
// carries, openShared() opens it once into an object of the same kind over the same
// allocation, and the allocation lives until the last holder in any thread lets go.
// Serial: each case compares poolStats() with its own baseline.
import test from 'ava';
import { MessageChannel } from 'node:worker_threads';
import { addon, eachDevice, eachDeviceKind, queueFor, KINDS } from './helpers/addon.mjs';
import { throwsExactly } from './helpers/expect.mjs';
import { Peer } from './fixtures/share-peer.mjs';
import { regionByte } from './fixtures/share-pattern.mjs';

const { openShared, revokeShared, poolStats, SyclQueue } = addon;
const HOST_KINDS = KINDS.filter((k) => k.hostAccessible);
const inUse = (kind) => poolStats()[kind].inUseBytes;
const pattern = (index, n) => Uint8Array.from({ length: n }, (_, i) => regionByte(index, i));

/** Waits until `done()` holds (the reaper and async tasks release on other threads). */
// The bound only ends a wait whose condition never comes: no loaded machine takes that long.
async function eventually(done, ms = 120_000) {
  const start = Date.now();
  while (!done() && Date.now() - start < ms) await new Promise((resolve) => setTimeout(resolve, 5));
  return done();
}

eachDeviceKind(test.serial, 'a token is a frozen plain object that structured clone carries, and opens into the same bytes in this thread too', (t, { Class, device, kind }) => {
  const queue = queueFor(device);
  const m = new Class(64, { queue });
  const token = m.share();
  t.true(Object.isFrozen(token));
  t.is(Object.getPrototypeOf(token), Object.prototype);
  t.deepEqual(Object.keys(token).sort(), ['dpctlMemoryShare', 'handle', 'kind', 'nbytes']);
  t.like(token, { dpctlMemoryShare: 1, kind, nbytes: 64 });
  const opened = openShared(structuredClone(token));
  t.true(opened instanceof Class);
  t.is(opened.pointer, m.pointer, 'zero-copy: the same allocation');
  t.is(opened.nbytes, 64);
  t.is(opened.syclQueue.syclDevice.filterString, device.filterString);
  t.true(opened.syclContext.equals(m.syclContext));
  opened.copyFromHost(pattern(3, 64));
  t.deepEqual(new Uint8Array(m.toBytes()), pattern(3, 64));
  if (kind !== 'device') t.not(opened.buffer, m.buffer, 'its own buffer over the same bytes');
  opened.free();
  t.deepEqual(new Uint8Array(m.toBytes()), pattern(3, 64), 'freeing one holder leaves the other');
  m.free();
});

eachDevice(test.serial, 'memory opened in a worker uses the same device, with a queue of the worker\'s realm', async (t, device) => {
  const peer = new Peer();
  try {
    const byDefault = new addon.MemoryUSMHost(16);
    const info = await peer.call('open', { token: byDefault.share() });
    t.like(info, { className: 'MemoryUSMHost', nbytes: 16, kind: 'host', queueIsSyclQueue: true, bufferLength: 16 });
    t.is(info.pointer, byDefault.pointer);
    t.true(info.defaultQueue, 'memory of the default queue gets that realm\'s own default queue object');
    await peer.call('free');
    const explicit = new addon.MemoryUSMShared(16, { queue: new SyclQueue(device) });
    const other = await peer.call('open', { token: explicit.share() });
    t.like(other, { className: 'MemoryUSMShared', queueIsSyclQueue: true, defaultQueue: false, filterString: device.filterString });
    await peer.call('free');
    byDefault.free();
    explicit.free();
  } finally {
    await peer.terminate();
  }
});

for (const { kind, Class } of KINDS) {
  eachDevice(test.serial, `8 workers read and write one shared ${kind} allocation (${kind === 'device' ? 'through copies' : 'through their buffers'})`, async (t, device) => {
    const workers = 8;
    const chunk = 4096;
    const before = inUse(kind);
    const m = new Class(workers * chunk, { queue: queueFor(device) });
    m.memset(0);
    const peers = Array.from({ length: workers }, () => new Peer());
    try {
      await Promise.all(peers.map((peer) => peer.call('open', { token: m.share() })));
      // Each writes its own region; messages order the writes before every read.
      await Promise.all(peers.map((peer, index) => peer.call('write', { index, chunk })));
      const seen = await Promise.all(peers.map((peer) => peer.call('check', { count: workers, chunk })));
      t.deepEqual(seen, peers.map(() => -1), 'every worker sees every region');
      m.free(); // the workers still hold it
      const bytes = await peers[0].call('check', { count: workers, chunk });
      t.is(bytes, -1);
      await Promise.all(peers.map((peer, index) => peer.call('write', { index: (index + 1) % workers, chunk })));
      await Promise.all(peers.map((peer) => peer.call('free')));
      t.true(await eventually(() => inUse(kind) === before), `${inUse(kind) - before} bytes still in use`);
    } finally {
      await Promise.all(peers.map((peer) => peer.terminate()));
    }
  });
}

for (const { kind, Class } of HOST_KINDS) {
  eachDevice(test.serial, `a worker terminated in the middle of a copy of shared ${kind} memory leaves the memory working, and it frees cleanly`, async (t, device) => {
    const before = inUse(kind);
    const nbytes = 64 << 20;
    const m = new Class(nbytes, { queue: queueFor(device) });
    const peer = new Peer();
    await peer.call('open', { token: m.share() });
    await peer.call('copyAsync', { copies: 4 });
    await peer.terminate();
    t.is(await peer.exited, 1);
    const view = new Uint8Array(m.buffer);
    m.copyFromHost(pattern(5, 4096));
    t.deepEqual(view.subarray(0, 4096), pattern(5, 4096));
    m.memset(9);
    t.is(view[nbytes - 1], 9);
    t.deepEqual(m.toBytes().subarray(nbytes - 4), Buffer.from([9, 9, 9, 9]));
    m.free();
    t.is(view.length, 0, 'free() detached the buffer');
    t.true(await eventually(() => inUse(kind) === before), `${inUse(kind) - before} bytes still in use after the copies settled`);
  });
}

eachDeviceKind(test.serial, 'the sender may free before the receiver opens: the token holds the allocation', async (t, { Class, device, kind }) => {
  const before = inUse(kind);
  const m = new Class(4096, { queue: queueFor(device) });
  m.copyFromHost(pattern(0, 4096));
  const token = m.share();
  m.free();
  t.true(inUse(kind) > before, 'still held by the token');
  const peer = new Peer();
  try {
    await peer.call('open', { token });
    t.is(await peer.call('check', { count: 1, chunk: 4096 }), -1, 'the bytes the sender wrote');
    await peer.call('free');
    t.true(await eventually(() => inUse(kind) === before));
  } finally {
    await peer.terminate();
  }
});

for (const { kind } of KINDS) {
  eachDevice(test.serial, `the owning thread may exit first: a worker allocates ${kind} memory, shares it and exits; this thread opens and uses it`, async (t) => {
    const before = inUse(kind);
    const peer = new Peer();
    const token = await peer.call('allocShare', { kind, nbytes: 8192 });
    await peer.call('exit');
    t.is(await peer.exited, 0);
    const m = openShared(token);
    t.is(m.getUsmType(), kind);
    t.deepEqual(new Uint8Array(m.toBytes()), pattern(0, 8192), 'the bytes the worker wrote');
    m.memset(1);
    t.is(m.toBytes()[8191], 1);
    if (kind !== 'device') t.is(new Uint8Array(m.buffer)[0], 1);
    m.free();
    t.true(await eventually(() => inUse(kind) === before), `${inUse(kind) - before} bytes still in use`);
  });
}

eachDevice(test.serial, 'a token opened by a worker that is then terminated is released with the worker', async (t, device) => {
  const before = inUse('shared');
  const m = new addon.MemoryUSMShared(1 << 20, { queue: queueFor(device) });
  const peer = new Peer();
  await peer.call('open', { token: m.share() });
  m.free();
  t.true(inUse('shared') > before);
  await peer.terminate();
  t.true(await eventually(() => inUse('shared') === before), 'the worker\'s hold went with it');
});

eachDevice(test.serial, '10^4 share/open/free cycles across a worker bring RSS and poolStats() back to baseline', async (t, device) => {
  const peer = new Peer();
  const queue = queueFor(device);
  const cycles = async (n) => {
    // A window of tokens in flight; the worker opens and frees each.
    const window = 32;
    let sent = 0;
    const inFlight = new Set();
    while (sent < n) {
      while (inFlight.size < window && sent < n) {
        const m = new addon.MemoryUSMHost(4096, { queue });
        const p = peer.call('openFree', { token: m.share() });
        m.free();
        inFlight.add(p);
        p.then(() => inFlight.delete(p));
        sent++;
      }
      await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
  };
  try {
    await cycles(1000);
    const stats = poolStats().host;
    const rss = process.memoryUsage().rss;
    await cycles(10_000);
    const after = poolStats().host;
    t.is(after.inUseBytes, stats.inUseBytes, 'nothing is left in use');
    t.is(after.cachedBlocks, stats.cachedBlocks, 'the same pooled blocks served every cycle');
    const grown = process.memoryUsage().rss - rss;
    t.true(grown < Math.max(rss * 0.05, 16 << 20), `RSS grew by ${(grown / 2 ** 20).toFixed(1)} MiB`);
  } finally {
    await peer.terminate();
  }
  // The same in one thread.
  const baseline = poolStats().host.inUseBytes;
  for (let i = 0; i < 10_000; i++) {
    const m = new addon.MemoryUSMHost(256, { queue });
    const token = m.share();
    m.free();
    openShared(token).free();
  }
  t.is(poolStats().host.inUseBytes, baseline);
});

eachDevice(test.serial, 'a token opened twice, expired, revoked or forged each throws its code', async (t, device) => {
  const queue = queueFor(device);
  const before = inUse('host');
  const m = new addon.MemoryUSMHost(64, { queue });

  const once = m.share();
  openShared(once).free();
  throwsExactly(t, () => openShared(once), Error, 'ERR_SHARE_TOKEN_OPENED');

  const revoked = m.share();
  t.true(revokeShared(revoked));
  t.false(revokeShared(revoked), 'revoking again changes nothing');
  t.false(revokeShared(once), 'an opened token has nothing to revoke');
  throwsExactly(t, () => openShared(revoked), Error, 'ERR_SHARE_TOKEN_REVOKED');

  const expiring = m.share({ timeout: 1 });
  m.free();
  t.true(await eventually(() => inUse('host') === before), 'an expired token gives its memory back by itself');
  throwsExactly(t, () => openShared(expiring), Error, 'ERR_SHARE_TOKEN_EXPIRED');

  const m2 = new addon.MemoryUSMHost(64, { queue });
  const good = m2.share();
  const [id, mac] = good.handle.split('.');
  const flipped = mac.slice(0, -1) + (mac.endsWith('0') ? '1' : '0');
  const forged = [
    { ...good, handle: `${id}.${flipped}` },
    { ...good, handle: `${(parseInt(id, 16) + 1000).toString(16)}.${mac}` },
    { ...good, handle: 'not a handle' },
    { ...good, kind: 'device' },
    { ...good, nbytes: 65 },
    { ...good, dpctlMemoryShare: 2 },
    { ...good, kind: 'toString' },
    { ...good, nbytes: 1.5 },
    { handle: good.handle },
    {},
    [],
    null,
    undefined,
    good.handle,
    m2,
  ];
  for (const token of forged) throwsExactly(t, () => openShared(token), TypeError, 'ERR_SHARE_TOKEN_INVALID', JSON.stringify(token));
  throwsExactly(t, () => revokeShared({ ...good, handle: `${id}.${flipped}` }), TypeError, 'ERR_SHARE_TOKEN_INVALID');
  const opened = openShared(good);
  t.is(opened.pointer, m2.pointer, 'the altered copies did not close the real token');
  opened.free();
  m2.free();
});

eachDevice(test.serial, 'share() checks its receiver, its options and the object\'s state', (t, device) => {
  const m = new addon.MemoryUSMDevice(16, { queue: queueFor(device) });
  throwsExactly(t, () => m.share({ timeout: 0 }), RangeError, 'ERR_INVALID_TIMEOUT');
  throwsExactly(t, () => m.share({ timeout: 2 ** 31 }), RangeError, 'ERR_INVALID_TIMEOUT');
  throwsExactly(t, () => m.share({ timeout: 1.5 }), RangeError, 'ERR_INVALID_TIMEOUT');
  throwsExactly(t, () => m.share({ timeout: NaN }), RangeError, 'ERR_INVALID_TIMEOUT');
  throwsExactly(t, () => m.share({ timeout: '5' }), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => m.share({ ttl: 5 }), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => m.share(5), TypeError, 'ERR_INVALID_ARG_TYPE');
  throwsExactly(t, () => Reflect.apply(addon._Memory.prototype.share, {}, []), TypeError, 'ERR_INVALID_THIS');
  t.true(revokeShared(m.share({ timeout: null })));
  m.free();
  throwsExactly(t, () => m.share(), Error, 'ERR_USM_FREED');
});

eachDevice(test.serial, 'posting the memory object itself throws ERR_NOT_CLONEABLE and points to share()', (t, device) => {
  const m = new addon.MemoryUSMShared(16, { queue: queueFor(device) });
  const { port1, port2 } = new MessageChannel();
  try {
    const error = throwsExactly(t, () => port1.postMessage(m), TypeError, 'ERR_NOT_CLONEABLE');
    t.regex(error.message, /share\(\)/);
    t.notThrows(() => port1.postMessage(m.share({ timeout: 1 })));
  } finally {
    port1.close();
    port2.close();
    m.free();
  }
});

eachDevice(test.serial, 'a read-only view shares as read-only memory', (t, device) => {
  const m = new addon.MemoryUSMHost(32, { queue: queueFor(device) });
  const iface = { ...m.__sycl_usm_array_interface__, data: [m.pointer, true] };
  const view = addon.asUsmMemory({ __sycl_usm_array_interface__: iface });
  const opened = openShared(view.share());
  throwsExactly(t, () => opened.memset(1), Error, 'ERR_READ_ONLY');
  throwsExactly(t, () => opened.buffer, Error, 'ERR_READ_ONLY');
  opened.free();
  view.free();
  m.free();
});
