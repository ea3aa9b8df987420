// Issue 24.2: two installed copies of the package in one process (npm installs a second
// when two dependents need incompatible versions) each had their own pool and address
// book, so copy B called copy A's memory foreign: B's view of A's memory (an interface
// with a filter-string syclobj) was neither bounded by A's allocation nor held it, and
// B accepted views of blocks A had returned to its pool. The copies now answer each
// other from their own books. The second copy here is the built addon, its shim and lib/
// copied into another package folder: a second .node file, with its own statics.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HAS_DEVICE } from './helpers/addon.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const NODE_FILE = `${manifest.napi.binaryName}.linux-x64-gnu.node`;
const SHIM_FILE = 'dpctl_memory_shim.so';
// Every SYCL shim built here (2026's too, where its runtime is installed).
const SHIM_FILES = [SHIM_FILE, 'dpctl_memory_shim_sycl9.so'].filter((file) => existsSync(path.join(ROOT, file)));
const built = existsSync(path.join(ROOT, NODE_FILE)) && existsSync(path.join(ROOT, SHIM_FILE));
const run = HAS_DEVICE && built ? test : test.skip;
const note = HAS_DEVICE && built ? '' : ' [needs a device and the addon built in this clone: skipped]';

function secondCopy(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-copy-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const file of ['index.js', 'package.json', NODE_FILE, ...SHIM_FILES]) copyFileSync(path.join(ROOT, file), path.join(dir, file));
  cpSync(path.join(ROOT, 'lib'), path.join(dir, 'lib'), { recursive: true });
  return dir;
}

const SCENARIO = (a, b) => `
  const A = require(${JSON.stringify(path.join(a, 'index.js'))});
  const B = require(${JSON.stringify(path.join(b, 'index.js'))});
  const code = (f) => { try { const m = f(); m.free(); return 'ok'; } catch (e) { return e.code; } };
  const out = { distinct: A.MemoryUSMShared !== B.MemoryUSMShared && A.poolStats !== B.poolStats };
  const queues = new Map([[A, new A.SyclQueue()], [B, new B.SyclQueue()]]);
  const filter = queues.get(A).syclDevice.filterString;
  const iface = (pointer, nbytes) => ({ __sycl_usm_array_interface__: {
    data: [pointer, false], shape: [nbytes], strides: null, typestr: '|u1', version: 1, syclobj: filter } });
  for (const [name, X, Y] of [['B views A', A, B], ['A views B', B, A]]) {
    const r = (out[name] = {});
    const queue = queues.get(X);
    const owner = new X.MemoryUSMShared(4096, { queue });
    // Bounded: a view larger than the allocation is refused as the owning copy refuses it.
    r.tooLong = [code(() => new Y.MemoryUSMShared(iface(owner.pointer, 209920))), code(() => new X.MemoryUSMShared(iface(owner.pointer, 209920)))];
    r.pastEnd = code(() => new Y.MemoryUSMShared(iface(owner.pointer + 4000n, 200)));
    // Held: the view keeps the allocation when its owner frees it.
    const view = new Y.MemoryUSMShared(iface(owner.pointer, 4096));
    const address = owner.pointer;
    owner.memset(0x11);
    owner.free();
    const next = new X.MemoryUSMShared(4096, { queue });
    r.reusedUnderView = next.pointer === address;
    next.memset(0x22);
    view.memset(0x33);
    r.nextIntact = next.toBytes().every((byte) => byte === 0x22);
    r.viewBytes = view.toBytes().every((byte) => byte === 0x33);
    // The view's free gives the block back to its owner's pool: in use returns to before.
    const before = X.poolStats().shared.inUseBytes;
    view.free();
    r.returned = before - X.poolStats().shared.inUseBytes;
    // A block its owner returned to its pool: refused, as the owning copy refuses it.
    const cached = new X.MemoryUSMShared(4096, { queue });
    const cachedAt = cached.pointer;
    cached.free();
    r.cached = [code(() => new Y.MemoryUSMShared(iface(cachedAt, 16))), code(() => new X.MemoryUSMShared(iface(cachedAt, 16)))];
    r.asUsm = code(() => Y.asUsmMemory(iface(cachedAt, 16)));
    next.free();
  }
  process.stdout.write(JSON.stringify(out));
`;

run(`two copies of the package in one process agree about live and cached memory${note}`, (t) => {
  const copy = secondCopy(t);
  const child = spawnSync(process.execPath, ['-e', SCENARIO(ROOT, copy)], { encoding: 'utf8' });
  t.is(child.status, 0, child.stderr);
  const out = JSON.parse(child.stdout);
  t.true(out.distinct, 'two copies of the addon, each with its own classes and pool');
  for (const name of ['B views A', 'A views B']) {
    const r = out[name];
    t.deepEqual(r.tooLong, ['ERR_SUAI_OUT_OF_BOUNDS', 'ERR_SUAI_OUT_OF_BOUNDS'], `${name}: a 209920-byte view of 4096 bytes`);
    t.is(r.pastEnd, 'ERR_SUAI_OUT_OF_BOUNDS', name);
    t.false(r.reusedUnderView, `${name}: the block under a live view was handed out again`);
    t.true(r.nextIntact, `${name}: writing through the view changed another allocation`);
    t.true(r.viewBytes, name);
    t.is(r.returned, 4096, `${name}: the view's free gave the allocation back to its owner`);
    t.deepEqual(r.cached, [r.cached[1], r.cached[1]], `${name}: a cached block is refused alike by both copies`);
    t.not(r.cached[0], 'ok', `${name}: a view of a block in the owner's pool`);
    t.not(r.asUsm, 'ok', name);
  }
});
