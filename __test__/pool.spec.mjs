// The caching allocator pool: reuse (hits), statistics, trim(), caps and eviction, what
// bypasses it, DPCTL_MEMORY_POOL=0, and above all that freed memory never reaches a new
// owner while a view of it is still reachable from JS.
//
// Every test is serial: they read the process-wide pool statistics before and after.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { KINDS, DEVICES, HAS_DEVICE, label, queueFor, exporter, rawExporter, asUsmMemory, freeAll } from './helpers/addon.mjs';

const require = createRequire(import.meta.url);
const addon = require('../index.js');
const { poolStats, poolTrim } = addon;
const MemoryUSMHost = addon.MemoryUSMHost;
const MemoryUSMDevice = addon.MemoryUSMDevice;

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const INDEX_JS = fileURLToPath(new URL('../index.js', import.meta.url));
const POOL_ON = !['0', 'false', 'off', 'no'].includes((process.env.DPCTL_MEMORY_POOL ?? '').trim().toLowerCase());
const HOST_KINDS = KINDS.filter((k) => k.hostAccessible);
const FIELDS = ['hits', 'misses', 'cachedBlocks', 'cachedBytes', 'inUseBytes', 'evictions'];

/** Serial tests, once per device; visibly skipped without a device, or with the pool off. */
function eachDevice(title, fn, { needsPool = true } = {}) {
  if (!HAS_DEVICE) {
    test.skip(`${title} [no SYCL/CUDA device present: skipped]`, () => {});
    return;
  }
  if (needsPool && !POOL_ON) {
    test.skip(`${title} [DPCTL_MEMORY_POOL turns the pool off in this process: skipped]`, () => {});
    return;
  }
  for (const device of DEVICES) test.serial(`${title} [${label(device)}]`, (t) => fn(t, device));
}

const delta = (after, before, kind) => Object.fromEntries(FIELDS.map((f) => [f, after[kind][f] - before[kind][f]]));

test.serial('poolStats() reports enabled and six numbers per kind; poolTrim() a number', (t) => {
  const stats = poolStats();
  t.is(stats.enabled, POOL_ON);
  t.deepEqual(Object.keys(stats).sort(), ['byDevice', 'device', 'enabled', 'host', 'scratch', 'shared']);
  t.true(Array.isArray(stats.byDevice));
  t.deepEqual(Object.keys(stats.scratch).sort(), ['blocks', 'bytes']);
  for (const kind of ['device', 'host', 'shared']) {
    t.deepEqual(Object.keys(stats[kind]).sort(), [...FIELDS].sort(), kind);
    for (const field of FIELDS) {
      t.is(typeof stats[kind][field], 'number', `${kind}.${field}`);
      t.true(Number.isSafeInteger(stats[kind][field]) && stats[kind][field] >= 0, `${kind}.${field}`);
    }
  }
  t.is(typeof poolTrim(), 'number');
  t.is(poolTrim(), 0, 'nothing is left to release right after a trim');
  const after = poolStats();
  for (const kind of ['device', 'host', 'shared']) {
    t.is(after[kind].cachedBlocks, 0);
    t.is(after[kind].cachedBytes, 0);
  }
});

eachDevice('a freed block is reused by the next allocation of its size class (hits), for every kind', (t, device) => {
  const queue = queueFor(device);
  poolTrim();
  for (const { kind, Class } of KINDS) {
    const before = poolStats();
    const first = new Class(MiB, { queue });
    const pointer = first.pointer;
    first.free();
    const freed = poolStats();
    t.is(freed[kind].cachedBlocks, before[kind].cachedBlocks + 1, `${kind}: the block is cached`);
    t.is(freed[kind].cachedBytes, before[kind].cachedBytes + MiB, kind);
    const again = [];
    for (let i = 0; i < 5; i++) {
      const m = new Class(MiB, { queue });
      t.is(m.pointer, pointer, `${kind}: round ${i} reuses the block`);
      again.push(m.pointer);
      m.free();
    }
    const after = delta(poolStats(), before, kind);
    t.is(after.hits, 5, kind);
    t.is(after.misses, 1, kind);
    t.is(after.inUseBytes, 0, kind);
    // A smaller request of the same class reuses it too, and still reports its own size.
    const smaller = new Class(MiB - 1000, { queue });
    t.is(smaller.pointer, pointer, `${kind}: same class`);
    t.is(smaller.nbytes, MiB - 1000, `${kind}: nbytes is the requested size`);
    t.deepEqual(smaller.__sycl_usm_array_interface__.shape, [MiB - 1000]);
    if (Class !== MemoryUSMDevice) t.is(smaller.buffer.byteLength, MiB - 1000, `${kind}: buffer length`);
    t.is(delta(poolStats(), before, kind).inUseBytes, MiB, `${kind}: in use counts the block`);
    smaller.free();
  }
  const cached = poolStats();
  const expected = cached.device.cachedBytes + cached.host.cachedBytes + cached.shared.cachedBytes;
  t.true(expected >= 3 * MiB);
  t.is(poolTrim(), expected, 'trim releases every cached byte');
  const trimmed = poolStats();
  for (const { kind } of KINDS) {
    t.is(trimmed[kind].cachedBlocks, 0, kind);
    t.is(trimmed[kind].cachedBytes, 0, kind);
  }
  const fresh = new MemoryUSMHost(MiB, { queue });
  t.is(poolStats().host.misses, trimmed.host.misses + 1, 'after a trim the next allocation is a miss');
  fresh.free();
});

eachDevice('interfaces are bounded by the requested size, not the larger block', (t, device) => {
  for (const { kind, Class } of KINDS) {
    const m = new Class(5000, { queue: queueFor(device) });
    t.is(m.nbytes, 5000);
    const err = t.throws(() => new Class(exporter(m, { shape: [5120] })), undefined, kind);
    t.is(err.code, 'ERR_SUAI_OUT_OF_BOUNDS', kind);
    const view = new Class(exporter(m, { shape: [5000] }));
    t.is(view.nbytes, 5000);
    freeAll(view, m);
  }
});

eachDevice('a raw pointer kept from freed memory cannot make a view of the cached block', (t, device) => {
  for (const { kind, Class } of KINDS) {
    const m = new Class(5000, { queue: queueFor(device) });
    const iface = m.__sycl_usm_array_interface__;
    const stale = { __sycl_usm_array_interface__: iface };
    m.free();
    t.true(poolStats()[kind].cachedBlocks > 0, `${kind}: the block is cached`);
    // The runtime still owns the block, so only the pool can tell that no allocation
    // does: no view may cover any byte of it.
    const err = t.throws(() => new Class(stale), undefined, kind);
    t.true(['ERR_SUAI_OUT_OF_BOUNDS', 'ERR_SUAI_FOREIGN_POINTER'].includes(err.code), `${kind}: ${err.code}`);
    const small = t.throws(() => asUsmMemory(rawExporter({ ...iface, shape: [1] })), undefined, kind);
    t.true(['ERR_SUAI_OUT_OF_BOUNDS', 'ERR_SUAI_FOREIGN_POINTER'].includes(small.code), `${kind}: ${small.code}`);
  }
});

eachDevice('the slack between the requested size and the end of the block is no part of the allocation', (t, device) => {
  for (const { kind, Class } of KINDS) {
    const m = new Class(5000, { queue: queueFor(device) });
    for (const fields of [{ data: [m.pointer + 5000n, false], shape: [8] }, { data: [m.pointer + 5100n, false], shape: [1] }, { shape: [8], offset: 4996 }]) {
      const err = t.throws(() => new Class(exporter(m, fields)), undefined, `${kind} ${JSON.stringify(fields, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`);
      t.is(err.code, 'ERR_SUAI_OUT_OF_BOUNDS', kind);
    }
    const last = new Class(exporter(m, { data: [m.pointer + 4992n, false], shape: [8] }));
    t.is(last.nbytes, 8, `${kind}: the last bytes of the request are fine`);
    freeAll(last, m);
  }
});

for (const { kind, Class } of HOST_KINDS) {
  eachDevice(`${kind}: free() detaches the old views before the block can serve a new owner`, (t, device) => {
    const queue = queueFor(device);
    const n = MiB;
    const old = new Class(n, { queue });
    const pointer = old.pointer;
    const view = new Uint8Array(old.buffer);
    const dv = new DataView(old.buffer, 16);
    view.fill(0x11);
    const before = poolStats();
    old.free();
    t.is(view.length, 0, 'the old TypedArray is detached');
    t.is(view.byteLength, 0);
    t.throws(() => dv.getUint8(0), { instanceOf: TypeError }, 'the old DataView is detached');
    const next = new Class(n, { queue });
    const after = poolStats();
    t.is(after[kind].hits, before[kind].hits + 1, 'the new allocation comes from the pool');
    t.is(next.pointer, pointer, 'it reuses the block (allowed: nothing can see it through the old views)');
    const fresh = new Uint8Array(next.buffer);
    fresh.fill(0x22);
    t.is(view.length, 0, 'the old view stays detached');
    t.is(view[0], undefined, 'and cannot read the new owner\'s data');
    view[0] = 0x33; // a write to a detached array is dropped
    t.is(fresh[0], 0x22, 'nor write into it');
    next.free();
  });

  eachDevice(`${kind}: a view that outlives free() keeps the block out of the pool`, (t, device) => {
    const queue = queueFor(device);
    const n = MiB;
    poolTrim();
    const owner = new Class(n, { queue });
    const pointer = owner.pointer;
    const second = new Class(owner); // zero-copy: shares the allocation
    const view = new Uint8Array(second.buffer);
    view.fill(0x44);
    const before = poolStats();
    owner.free();
    const afterFree = poolStats();
    t.is(view.length, n, "the second object's buffer is not detached by the owner's free()");
    t.is(afterFree[kind].cachedBlocks, before[kind].cachedBlocks, 'so the block is not cached');
    t.is(afterFree[kind].inUseBytes, before[kind].inUseBytes, 'but still in use');
    const other = new Class(n, { queue });
    t.not(other.pointer, pointer, 'a new allocation cannot get the block');
    t.is(poolStats()[kind].hits, before[kind].hits, 'it was a miss');
    new Uint8Array(other.buffer).fill(0x55);
    t.true(view.every((b) => b === 0x44), 'the surviving view still sees only its own data');
    second.free();
    t.is(view.length, 0, 'freeing the last holder detaches the last view');
    const released = poolStats();
    t.is(released[kind].cachedBlocks, afterFree[kind].cachedBlocks + 1, 'and only now the block goes to the pool');
    other.free();
  });

  eachDevice(`${kind}: an interface view of our memory also keeps the block out of the pool`, (t, device) => {
    const queue = queueFor(device);
    const owner = new Class(64 * 1024, { queue });
    const pointer = owner.pointer;
    const iview = new Class(exporter(owner));
    const u8 = new Uint8Array(iview.buffer);
    const before = poolStats();
    owner.free();
    t.is(poolStats()[kind].cachedBlocks, before[kind].cachedBlocks);
    const other = new Class(64 * 1024, { queue });
    t.not(other.pointer, pointer);
    t.is(u8.length, 64 * 1024);
    freeAll(iview, other);
    t.is(u8.length, 0);
  });
}

eachDevice('blocks above 256 MiB are pooled too; alignments above 256 bypass the pool', (t, device) => {
  const queue = queueFor(device);
  poolTrim();
  const before = poolStats();
  const big = new MemoryUSMDevice(256 * MiB + 1, { queue });
  t.is(big.nbytes, 256 * MiB + 1);
  t.is(poolStats().device.inUseBytes, before.device.inUseBytes + 320 * MiB, 'a large block is its size class');
  const address = big.pointer;
  big.free();
  let after = poolStats();
  t.is(after.device.cachedBlocks, before.device.cachedBlocks + 1, 'a large block is cached (the device has room)');
  t.is(after.device.misses, before.device.misses + 1);
  t.is(after.device.inUseBytes, before.device.inUseBytes);
  const again = new MemoryUSMDevice(300 * MiB, { queue });
  t.is(again.pointer, address, 'and serves the next request of its class');
  again.free();
  poolTrim();

  const aligned = new MemoryUSMHost(3000, { queue, alignment: 4096 });
  t.is(aligned.pointer % 4096n, 0n);
  aligned.free();
  after = poolStats();
  t.is(after.host.cachedBlocks, before.host.cachedBlocks, 'a 4096-aligned block is freed, not cached');

  // Alignments up to 256 are pooled, and a cached block serves them only when aligned.
  for (const alignment of [0, 64, 128, 256]) {
    const m = new MemoryUSMHost(3000, { queue, alignment });
    if (alignment) t.is(m.pointer % BigInt(alignment), 0n, `alignment ${alignment}`);
    m.free();
  }
  t.true(poolStats().host.cachedBlocks > before.host.cachedBlocks, 'small alignments are cached');
  const m = new MemoryUSMHost(3000, { queue, alignment: 256 });
  t.is(m.pointer % 256n, 0n, 'a reused block honours the alignment');
  m.free();
});

eachDevice('the cache is capped: beyond the cap the oldest blocks are evicted', (t, device) => {
  const queue = queueFor(device);
  const cap = Math.min(4 * GiB, Math.floor(device.globalMemSize / 8));
  const block = 128 * MiB;
  if (cap < block) {
    t.pass(`device memory too small for this test (cap ${cap} bytes)`);
    return;
  }
  poolTrim();
  const count = Math.floor(cap / block) + 1;
  const before = poolStats();
  // Allocated but never touched: no physical memory on the CPU device.
  const blocks = Array.from({ length: count }, () => new MemoryUSMDevice(block, { queue }));
  const pointers = blocks.map((b) => b.pointer);
  freeAll(...blocks);
  const after = poolStats();
  t.is(after.device.evictions - before.device.evictions, 1, `${count} blocks of 128 MiB over a cap of ${cap}`);
  t.true(after.device.cachedBytes <= cap);
  t.is(after.device.cachedBlocks, count - 1);
  // The evicted one was the oldest: the newest is the next to be reused (LIFO).
  const reused = new MemoryUSMDevice(block, { queue });
  t.is(reused.pointer, pointers[count - 1]);
  reused.free();
  t.is(poolTrim(), (count - 1) * block);
});

function child(script, env) {
  const result = spawnSync(process.execPath, ['-e', script], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return result;
}

const CHILD_SCRIPT = `
  const a = require(${JSON.stringify(INDEX_JS)});
  const pointers = [];
  for (let i = 0; i < 4; i++) { const m = new a.MemoryUSMHost(${MiB}); pointers.push(String(m.pointer)); m.free(); }
  const stats = a.poolStats();
  console.log(JSON.stringify({ stats, trimmed: a.poolTrim(), pointers }));
`;

if (!HAS_DEVICE) {
  test.skip('DPCTL_MEMORY_POOL=0 turns the pool off [no SYCL/CUDA device present: skipped]', () => {});
} else {
  test.serial('DPCTL_MEMORY_POOL=0 turns the pool off (read at first use, in a child process)', (t) => {
    const off = child(CHILD_SCRIPT, { DPCTL_MEMORY_POOL: '0' });
    t.is(off.status, 0, off.stderr);
    const { stats, trimmed } = JSON.parse(off.stdout.trim().split('\n').pop());
    t.false(stats.enabled);
    for (const kind of ['device', 'host', 'shared']) {
      t.is(stats[kind].hits, 0, kind);
      t.is(stats[kind].cachedBlocks, 0, kind);
      t.is(stats[kind].cachedBytes, 0, kind);
      t.is(stats[kind].evictions, 0, kind);
    }
    t.is(stats.host.misses, 4, 'every allocation went to the runtime');
    t.is(stats.host.inUseBytes, 0);
    t.is(trimmed, 0);

    const on = child(CHILD_SCRIPT, { DPCTL_MEMORY_POOL: '1' });
    t.is(on.status, 0, on.stderr);
    const pooled = JSON.parse(on.stdout.trim().split('\n').pop());
    t.true(pooled.stats.enabled);
    t.is(pooled.stats.host.hits, 3);
    t.is(pooled.stats.host.misses, 1);
    t.is(new Set(pooled.pointers).size, 1, 'one block served all four');
    t.is(pooled.trimmed, MiB);
  });

  test.serial('the variable is read once: changing it later changes nothing', (t) => {
    const script = `
      const a = require(${JSON.stringify(INDEX_JS)});
      new a.MemoryUSMHost(4096).free();
      process.env.DPCTL_MEMORY_POOL = '0';
      new a.MemoryUSMHost(4096).free();
      console.log(JSON.stringify(a.poolStats()));
    `;
    const r = child(script, { DPCTL_MEMORY_POOL: '' });
    t.is(r.status, 0, r.stderr);
    const stats = JSON.parse(r.stdout.trim().split('\n').pop());
    t.true(stats.enabled);
    t.is(stats.host.hits, 1);
  });
}
