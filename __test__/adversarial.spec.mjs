// Adversarial inputs to this round's surfaces: worker sharing (share/openShared/
// revokeShared), registered host memory, the pool's address book behind interface views,
// the IPC surface where the runtime has none, and copies between a memory and its own
// bytes. Each bad input must give a coded error, never a crash or silent corruption.
// Serial where a case compares poolStats() with its own baseline.
import test from 'ava';
import { Worker } from 'node:worker_threads';
import { addon, eachDevice, KINDS, queueFor, pattern, exporter, freeAll } from './helpers/addon.mjs';

const { openShared, revokeShared, registerHost, poolStats, poolTrim, asUsmMemory, IPCMemoryHandle, SyclQueue } = addon;
const HOST_KINDS = KINDS.filter((k) => k.hostAccessible);
const MiB = 1 << 20;
const detach = (buffer) => structuredClone(buffer, { transfer: [buffer] });
const codeOf = (fn) => {
  try {
    fn();
    return 'ok';
  } catch (error) {
    return error.code;
  }
};
/** Whether two byte views hold the same bytes (ava's deepEqual is slow at a MiB). */
const same = (a, b) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
const settled = (promise) => promise.then(() => 'ok', (error) => error.code);

/** Waits until `done()` holds (the reaper and other threads release asynchronously). */
// The bound only ends a wait whose condition never comes: no loaded machine takes that long.
async function eventually(done, ms = 120_000) {
  const start = Date.now();
  while (!done() && Date.now() - start < ms) await new Promise((resolve) => setTimeout(resolve, 5));
  return done();
}

// --- Worker sharing ---------------------------------------------------------------------

eachDevice(test, 'an altered token never opens another share, and the real one still opens after it', (t, device) => {
  const m = new addon.MemoryUSMHost(64, { queue: queueFor(device) });
  const token = m.share();
  const [id, mac] = token.handle.split('.');
  const flipped = mac.slice(0, 15) + (mac[15] === '0' ? '1' : '0');
  const altered = [
    { ...token, kind: 'device' },
    { ...token, kind: 'shared' },
    { ...token, nbytes: 63 },
    { ...token, nbytes: 2 ** 53 - 1 },
    { ...token, handle: `${id}.${flipped}` },
    { ...token, handle: `${(BigInt(`0x${id}`) + 1n).toString(16)}.${mac}` },
    { ...token, handle: `0.${mac}` },
    { ...token, handle: `${'1'.repeat(17)}.${mac}` },
    { ...token, handle: `${id}.${mac}.1` },
    { ...token, handle: `${id}\0.${mac}` },
    { ...token, handle: `é.${mac}` },
    { ...token, handle: 'x'.repeat(65) },
  ];
  for (const bad of altered) t.is(codeOf(() => openShared(bad)), 'ERR_SHARE_TOKEN_INVALID', JSON.stringify(bad));
  for (const bad of [{ ...token, nbytes: 64.5 }, { ...token, nbytes: 0 }, { ...token, kind: 'bogus' }, { ...token, dpctlMemoryShare: 2 }, [token], null, m]) {
    t.is(codeOf(() => openShared(bad)), 'ERR_SHARE_TOKEN_INVALID');
    t.is(codeOf(() => revokeShared(bad)), 'ERR_SHARE_TOKEN_INVALID');
  }
  const opened = openShared(token);
  t.is(opened.pointer, m.pointer);
  t.is(codeOf(() => openShared(token)), 'ERR_SHARE_TOKEN_OPENED');
  t.false(revokeShared(token));
  freeAll(opened, m);
});

eachDevice(test, 'share() timeouts: 1 ms to 2^31 - 1 ms, integers only', (t, device) => {
  const m = new addon.MemoryUSMDevice(8, { queue: queueFor(device) });
  for (const timeout of [0, -0, 0.5, -1, NaN, Infinity, -Infinity, 2 ** 31, 1e300, Number.MIN_VALUE]) {
    t.is(codeOf(() => m.share({ timeout })), 'ERR_INVALID_TIMEOUT', String(timeout));
  }
  for (const timeout of [1n, '5', {}, true]) t.is(codeOf(() => m.share({ timeout })), 'ERR_INVALID_ARG_TYPE');
  for (const timeout of [2 ** 31 - 1, undefined, null]) t.true(revokeShared(m.share({ timeout })), String(timeout));
  // 1 ms may pass before the revoke (a loaded machine): either way the token closed once,
  // and an open says how.
  const brief = m.share({ timeout: 1 });
  const revoked = revokeShared(brief);
  t.is(codeOf(() => openShared(brief)), revoked ? 'ERR_SHARE_TOKEN_REVOKED' : 'ERR_SHARE_TOKEN_EXPIRED');
  m.free();
});

eachDevice(test, 'share() whose options free the memory meanwhile is ERR_USM_FREED and shares nothing', (t, device) => {
  for (const { Class } of KINDS) {
    const m = new Class(64, { queue: queueFor(device) });
    const options = {
      get timeout() {
        m.free();
        return 100;
      },
    };
    t.is(codeOf(() => m.share(options)), 'ERR_USM_FREED');
  }
});

eachDevice(test, 'a token of a read-only interface view opens read-only, over the view\'s bytes only', (t, device) => {
  const base = new addon.MemoryUSMShared(256, { queue: queueFor(device) });
  const view = new addon.MemoryUSMShared(exporter(base, { data: [base.pointer + 16n, true], shape: [32] }));
  const opened = openShared(view.share());
  t.is(opened.pointer, base.pointer + 16n);
  t.is(opened.nbytes, 32);
  t.is(codeOf(() => opened.copyFromHost(new Uint8Array(1))), 'ERR_READ_ONLY');
  t.is(codeOf(() => opened.buffer), 'ERR_READ_ONLY');
  freeAll(opened, view, base);
});

const OPENER = `
const { parentPort } = require('node:worker_threads');
const { openShared } = require(${JSON.stringify(new URL('../index.js', import.meta.url).pathname)});
parentPort.on('message', (token) => {
  try {
    const memory = openShared(token);
    memory.memset(1);
    memory.free();
    parentPort.postMessage('opened');
  } catch (error) {
    parentPort.postMessage(error.code);
  }
});`;

eachDevice(test.serial, 'workers racing to open one token: exactly one opens it, the others get ERR_SHARE_TOKEN_OPENED', async (t, device) => {
  const workers = Array.from({ length: 4 }, () => new Worker(OPENER, { eval: true }));
  await Promise.all(workers.map((w) => new Promise((resolve) => w.once('online', resolve))));
  try {
    for (let round = 0; round < 10; round++) {
      const m = new addon.MemoryUSMShared(4096, { queue: queueFor(device) });
      const token = m.share();
      const answers = await Promise.all(workers.map((w) => new Promise((resolve) => {
        w.once('message', resolve);
        w.postMessage(token);
      })));
      t.is(answers.filter((a) => a === 'opened').length, 1, `round ${round}: ${answers}`);
      t.true(answers.every((a) => a === 'opened' || a === 'ERR_SHARE_TOKEN_OPENED'), `round ${round}: ${answers}`);
      m.free();
    }
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
});

eachDevice(test.serial, 'workers terminated while a token is on its way or being opened leave nothing held', async (t, device) => {
  const before = poolStats().device.inUseBytes;
  for (let i = 0; i < 8; i++) {
    const worker = new Worker(OPENER, { eval: true });
    await new Promise((resolve) => worker.once('online', resolve));
    const m = new addon.MemoryUSMDevice(64 << 10, { queue: queueFor(device) });
    worker.postMessage(m.share({ timeout: 50 }));
    if (i % 2) await new Promise((resolve) => setImmediate(resolve));
    await worker.terminate();
    m.free();
  }
  // An unopened token lets go at its timeout; an opened one with its worker.
  t.true(await eventually(() => poolStats().device.inUseBytes === before), JSON.stringify(poolStats().device));
});

// --- Copies between a memory and its own bytes ------------------------------------------

for (const { kind, Class } of HOST_KINDS) {
  // 1 MiB: above the size the CPU copies itself on devices whose shared memory migrates,
  // so there the runtime's copy is the one that must never see overlapping ranges.
  eachDevice(test, `${kind}: copies between the memory and its own buffer, shifted, act as memmove`, async (t, device) => {
    const n = MiB;
    const m = new Class(n, { queue: queueFor(device) });
    const bytes = pattern(n, 7);
    const shiftedDown = bytes.subarray(1);
    const shiftedUp = new Uint8Array(n);
    shiftedUp.set(bytes.subarray(0, n / 2), 1);
    shiftedUp.set(bytes.subarray(n / 2 + 1), n / 2 + 1);

    m.copyFromHost(bytes);
    m.copyFromHost(new Uint8Array(m.buffer, 1));
    t.true(same(m.toBytes().subarray(0, n - 1), shiftedDown), 'copyFromHost');
    m.copyFromHost(bytes);
    await m.copyFromHostAsync(new Uint8Array(m.buffer, 1));
    t.true(same(m.toBytes().subarray(0, n - 1), shiftedDown), 'copyFromHostAsync');

    // A view of the first half copied into the buffer one byte further on.
    for (const method of ['copyToHost', 'copyToHostAsync']) {
      m.copyFromHost(bytes);
      const half = new Class(exporter(m, { shape: [n / 2] }));
      await half[method](new Uint8Array(m.buffer, 1, n / 2));
      shiftedUp[0] = bytes[0];
      t.true(same(m.toBytes(), shiftedUp), method);
      half.free();
    }
    m.copyFromHost(m.buffer);
    m.free();
  });
}

eachDevice(test, 'zero-length and detached host buffers: nothing moves, or a coded error', async (t, device) => {
  for (const { kind, Class } of KINDS) {
    const m = new Class(1024, { queue: queueFor(device) });
    m.memset(9);
    m.copyFromHost(new Uint8Array(0));
    await m.copyFromHostAsync(new Uint8Array(0));
    const gone = new ArrayBuffer(1024);
    detach(gone);
    m.copyFromHost(gone);
    t.is(m.toBytes()[0], 9, kind);
    t.is(codeOf(() => m.copyToHost(gone)), 'ERR_DESTINATION_TOO_SMALL', kind);
    t.is(await settled(m.copyToHostAsync(gone)), 'ERR_DESTINATION_TOO_SMALL', kind);
    const resizable = new ArrayBuffer(1024, { maxByteLength: 4096 });
    const tracking = new Uint8Array(resizable);
    const pending = m.copyToHostAsync(tracking);
    resizable.resize(16);
    t.is(await settled(pending), 'ERR_DESTINATION_TOO_SMALL', `${kind}: shrunk while the copy ran`);
    const target = new ArrayBuffer(1024);
    const moving = m.copyToHostAsync(target);
    const moved = detach(target);
    t.is(await settled(moving), 'ERR_DESTINATION_TOO_SMALL', `${kind}: transferred while the copy ran`);
    t.is(new Uint8Array(moved)[0], 0, `${kind}: nothing written into the transferred bytes`);
    m.free();
  }
});

// --- Registered host memory -------------------------------------------------------------

eachDevice(test, 'registrations of views of one buffer cannot overlap; adjacent ones can', (t, device) => {
  const queue = queueFor(device);
  const buffer = new ArrayBuffer(8192);
  const first = registerHost(new Uint8Array(buffer, 0, 4096), { queue });
  t.is(codeOf(() => registerHost(new Uint8Array(buffer, 4095, 2), { queue })), 'ERR_HOST_RANGE_REGISTERED');
  t.is(codeOf(() => registerHost(buffer, { queue })), 'ERR_HOST_RANGE_REGISTERED');
  t.is(codeOf(() => registerHost(new DataView(buffer, 100, 8), { queue })), 'ERR_HOST_RANGE_REGISTERED');
  const second = registerHost(new Uint8Array(buffer, 4096), { queue });
  t.is(codeOf(() => registerHost(new Uint8Array(buffer, 8192, 0), { queue })), 'ERR_INVALID_SIZE');
  first.unregister();
  second.unregister();
  registerHost(buffer, { queue }).unregister();
});

eachDevice(test, 'a registered buffer transferred away: its registration ends, and the moved bytes register anew', async (t, device) => {
  const queue = queueFor(device);
  const d = new addon.MemoryUSMDevice(1024, { queue });
  d.memset(5);
  const buffer = new ArrayBuffer(1024);
  const old = new Uint8Array(buffer);
  const registration = registerHost(buffer, { queue });
  const pending = d.copyToHostAsync(buffer);
  const moved = detach(buffer);
  t.is(await settled(pending), 'ERR_DESTINATION_TOO_SMALL');
  t.is(codeOf(() => d.copyToHost(old)), 'ERR_DESTINATION_TOO_SMALL');
  const again = registerHost(moved, { queue });
  d.copyToHost(moved);
  t.is(new Uint8Array(moved)[1023], 5);
  again.unregister();
  registration.unregister();
  d.free();
});

eachDevice(test, 'a registered zero-copy buffer of USM memory that is freed: the reused block registers again', (t, device) => {
  const queue = queueFor(device);
  for (const { kind, Class } of HOST_KINDS) {
    const m = new Class(4096, { queue });
    let registration;
    try {
      registration = registerHost(m.buffer, { queue });
    } catch (error) {
      // A runtime may refuse to register memory it allocated itself: a coded error.
      t.is(typeof error.code, 'string', kind);
      m.free();
      continue;
    }
    m.free();
    const n = new Class(4096, { queue });
    const again = registerHost(n.buffer, { queue });
    again.unregister();
    registration.unregister();
    n.free();
  }
  t.pass();
});

eachDevice(test, 'unregister() during async copies of a registered SharedArrayBuffer', async (t, device) => {
  const queue = queueFor(device);
  const sab = new SharedArrayBuffer(MiB);
  new Uint8Array(sab).set(pattern(MiB, 3));
  const d = new addon.MemoryUSMDevice(MiB, { queue });
  const registration = registerHost(sab, { queue });
  const copies = [];
  for (let i = 0; i < 8; i++) {
    copies.push(d.copyFromHostAsync(new Uint8Array(sab)));
    if (i === 3) registration.unregister();
  }
  await Promise.all(copies);
  t.true(same(d.toBytes(), pattern(MiB, 3)));
  registerHost(sab, { queue }).unregister();
  d.free();
});

// --- The pool's address book ------------------------------------------------------------

eachDevice(test.serial, 'stale pointers of cached, reused and trimmed blocks never make a view, at any offset', (t, device) => {
  const queue = queueFor(device);
  const iface = (data, fields = {}) => ({ __sycl_usm_array_interface__: { data: [data, false], shape: [1], typestr: '|u1', version: 1, syclobj: queue, ...fields } });
  for (const { kind, Class } of KINDS) {
    for (const n of [100, 5000, MiB + 4096]) {
      const m = new Class(n, { queue });
      const p = m.pointer;
      m.free();
      for (const offset of [0, 1, n - 1]) {
        for (const exporterOf of [
          () => iface(p + BigInt(offset)),
          () => iface(p, { offset }),
          () => iface(p + BigInt(offset), { shape: [2], strides: [-1], offset: 1 }),
          () => ({ __sycl_usm_array_interface__: { ...iface(p + BigInt(offset)).__sycl_usm_array_interface__, syclobj: queue.syclContext } }),
        ]) {
          t.is(codeOf(() => asUsmMemory(exporterOf())), 'ERR_SUAI_OUT_OF_BOUNDS', `${kind} ${n} cached +${offset}`);
        }
      }
      // The block serves a smaller request: the bytes past it are no one's.
      const smaller = new Class(n - 50, { queue });
      if (smaller.pointer === p) {
        t.is(codeOf(() => asUsmMemory(iface(p + BigInt(n - 10)))), 'ERR_SUAI_OUT_OF_BOUNDS', `${kind} ${n} slack`);
        t.is(codeOf(() => asUsmMemory(iface(p, { shape: [n] }))), 'ERR_SUAI_OUT_OF_BOUNDS', `${kind} ${n} over the slack`);
        const live = asUsmMemory(iface(p + BigInt(n - 51)));
        smaller.free();
        t.true(poolStats()[kind].inUseBytes > 0, `${kind}: the view holds the block`);
        live.free();
      } else {
        smaller.free();
      }
      poolTrim();
      for (const offset of [0, 1, n - 1]) {
        // Back with the runtime, and nothing live allocated since: not memory of ours.
        const code = codeOf(() => asUsmMemory(iface(p + BigInt(offset))));
        t.true(['ERR_SUAI_OUT_OF_BOUNDS', 'ERR_SUAI_FOREIGN_POINTER'].includes(code), `${kind} ${n} trimmed +${offset}: ${code}`);
      }
    }
  }
});

// --- IPC where the runtime has none -----------------------------------------------------

eachDevice(test, 'every IPC path on a device without IPC is a coded error', (t, device) => {
  if (IPCMemoryHandle.isAvailable(device)) {
    t.pass('this device has IPC: ipc.spec.mjs covers it');
    return;
  }
  const queue = queueFor(device);
  const d = new addon.MemoryUSMDevice(64, { queue });
  t.is(codeOf(() => new IPCMemoryHandle(d)), 'ERR_IPC_UNAVAILABLE');
  t.is(codeOf(() => new IPCMemoryHandle(asUsmMemory(d))), 'ERR_IPC_UNAVAILABLE');
  t.is(codeOf(() => new IPCMemoryHandle(new addon.MemoryUSMHost(8, { queue }))), 'ERR_IPC_NOT_EXPORTABLE');
  t.is(codeOf(() => new IPCMemoryHandle(d.__sycl_usm_array_interface__)), 'ERR_NOT_USM');
  const gone = new Uint8Array(new ArrayBuffer(64));
  detach(gone.buffer);
  const handles = [new Uint8Array(64), new Uint8Array(0), Buffer.alloc(64), new Uint8Array(new SharedArrayBuffer(64)), gone, new Uint16Array(32), new ArrayBuffer(64), 'x', null];
  const options = [{ nbytes: 64 }, { nbytes: 64, device }, { nbytes: 64, queue: new SyclQueue(device) }, { nbytes: 0 }, { nbytes: -1 }, { nbytes: 2 ** 60 }, {}, undefined, { nbytes: 64, device, queue }, { nbytes: 64, device: {} }, { nbytes: 64n }];
  const allowed = ['ERR_IPC_UNAVAILABLE', 'ERR_INVALID_ARG_TYPE', 'ERR_INVALID_SIZE'];
  for (const bytes of handles) {
    for (const option of options) {
      const code = codeOf(() => IPCMemoryHandle.open(bytes, option));
      t.true(allowed.includes(code), `${Object.prototype.toString.call(bytes)} ${String(Object.keys(option ?? {}))}: ${code}`);
    }
  }
  d.free();
});
