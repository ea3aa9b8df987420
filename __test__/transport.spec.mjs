// The UCX transport (lib/transport.js) on the real UCX: in one process over loopback,
// between two Node processes over TCP and over shared memory, across two network
// namespaces joined by a veth pair (as root), faults (a peer killed mid-transfer,
// truncation, refused and bad addresses, closed endpoints, remote keys, the wrong
// thread). Without UCX every test skips, saying what to install; the classes still exist
// and throw ERR_UCX_UNAVAILABLE (tested by hand with DPCTL_MEMORY_UCX_ROOT=/nonexistent
// and no system UCX: see `the transport without UCX`).
import test from 'ava';
import { fork, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { pattern, mismatch } from './fixtures/ucx-peer.mjs';

const require = createRequire(import.meta.url);
const { ucx, UcxEndpoint, UcxListener, MemoryUSMHost, MemoryUSMShared, MemoryUSMDevice, getDevices } = require('../index.js');
const PEER = fileURLToPath(new URL('./fixtures/ucx-peer.mjs', import.meta.url));
// The one-sided tests map memory: one-sided access is opt-in, read when this thread's
// worker is made (at first use, below) and by the peers, which inherit the environment.
process.env.DPCTL_MEMORY_UCX_RMA = '1';
const { available, message: WHY } = ucx.available();
// Serial: tags are matched across the process's worker, and the tests count what is in flight.
const ucxTest = available ? test.serial : test.skip;
if (!available) console.log(`# transport tests skipped: ${WHY}`);
const SIZES = [1, 7, 4096, 65537, 2 ** 20, 8 * 2 ** 20];

/** A peer process; `next()` resolves with its next message, `exit` when it ends. */
function peer(args, { env = {}, netns } = {}) {
  const options = { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] };
  const child = netns
    ? fork(PEER, args, { ...options, execPath: 'ip', execArgv: ['netns', 'exec', netns, process.execPath] })
    : fork(PEER, args, options);
  const inbox = [];
  const waiting = [];
  child.on('message', (m) => (waiting.length ? waiting.shift()(m) : inbox.push(m)));
  const exit = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  exit.then(() => {
    while (waiting.length) waiting.shift()({ error: 'the peer exited' });
  });
  return { child, exit, next: () => (inbox.length ? Promise.resolve(inbox.shift()) : new Promise((r) => waiting.push(r))) };
}

/** A server and a client process over `host` with `env`; resolves with both reports. */
async function pair(t, host, env, sizes, netns = {}) {
  const server = peer(['server', host], { env, netns: netns.server });
  const { port, error } = await server.next();
  t.falsy(error, error);
  const client = peer(['client', netns.connectTo ?? host, String(port), ...sizes.map(String)], { env, netns: netns.client });
  const clientReport = await client.next();
  const serverReport = await server.next();
  const [clientExit, serverExit] = await Promise.all([client.exit, server.exit]);
  t.falsy(clientReport.error, clientReport.error);
  t.falsy(serverReport.error, serverReport.error);
  t.deepEqual(clientReport.checked, sizes);
  t.is(clientReport.info.inFlight, 0, 'nothing left in flight');
  t.is(clientReport.info.endpoints, 0);
  t.deepEqual([clientExit.code, serverExit.code], [0, 0]);
}

test('the transport classes exist with or without UCX', (t) => {
  t.is(typeof UcxEndpoint, 'function');
  t.is(typeof UcxListener, 'function');
  t.is(typeof ucx.listen, 'function');
  t.is(typeof available, 'boolean');
  t.true(WHY.length > 0);
  t.throws(() => new UcxEndpoint(), { instanceOf: TypeError, code: 'ERR_CONSTRUCT_CALL_REQUIRED' });
});

// A process that finds no UCX: no system one (else the test skips), a root that does not exist, an empty cache.
const SYSTEM_UCX = spawnSync('ldconfig', ['-p'], { encoding: 'utf8' }).stdout?.includes('libucp.so.0');
(SYSTEM_UCX ? test.skip : test)(`the transport without UCX throws ERR_UCX_UNAVAILABLE saying what to install${SYSTEM_UCX ? ' [a system UCX is installed: a process would find it: skipped]' : ''}`, (t) => {
  const script = `const { ucx } = require(${JSON.stringify(require.resolve('../index.js'))});
    try { ucx.listen({ port: 0 }); console.log('no error'); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;
  const out = spawnSync(process.execPath, ['-e', script], {
    encoding: 'utf8', env: { ...process.env, DPCTL_MEMORY_UCX_ROOT: '/nonexistent', DPCTL_MEMORY_CACHE: '/nonexistent-cache' },
  });
  const result = JSON.parse(out.stdout.trim());
  t.is(result.code, 'ERR_UCX_UNAVAILABLE');
  t.regex(result.message, /install-runtime --with ucx/);
  t.regex(result.message, /DPCTL_MEMORY_UCX_ROOT/);
});

ucxTest('in one process over loopback: tagged messages of host, shared and device memory and TypedArrays', async (t) => {
  const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
  t.true(listener.port > 0);
  const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: listener.port }), listener.accept()]);
  listener.close();
  for (const size of SIZES) {
    const src = pattern(size, size & 0xff);
    const dst = new Uint8Array(size);
    const got = server.recv(dst, { tag: 7n });
    await client.send(src, { tag: 7n });
    t.deepEqual(await got, { nbytes: size, tag: 7n });
    t.is(mismatch(dst, size & 0xff), -1, `${size} bytes arrive intact`);
  }
  // Memory objects both ways: host, shared, device. Device memory of a CUDA default device
  // needs a UCX with CUDA transports; without them it is refused.
  t.true(getDevices().length > 0, 'a SYCL device is present');
  const probe = new MemoryUSMDevice(64);
  const refused = probe.syclDevice.backend === 'cuda' && !ucx.info().cudaMemory;
  if (refused) {
    // A UCX without CUDA transports would read device memory as host memory: refused.
    await t.throwsAsync(server.send(probe, { tag: 11n }), { code: 'ERR_UCX', message: /no CUDA transports/ });
    t.is(ucx.info().inFlight, 0, 'the refused send left nothing in flight');
  }
  probe.free();
  const kinds = refused ? [MemoryUSMHost, MemoryUSMShared] : [MemoryUSMHost, MemoryUSMShared, MemoryUSMDevice];
  for (const Kind of kinds) {
    const src = new Kind(65536);
    src.copyFromHost(pattern(65536, 3));
    const dst = new Kind(65536);
    const got = client.recv(dst, { tag: 11n });
    await server.send(src, { tag: 11n });
    t.is((await got).nbytes, 65536);
    t.is(mismatch(dst.copyToHost(), 3), -1, `${Kind.name} to ${Kind.name}`);
    src.free();
    dst.free();
  }
  // A SharedArrayBuffer view, and tag masks: the receive takes any tag with the high bits 0xab.
  const shared = new Uint8Array(new SharedArrayBuffer(100));
  const masked = client.recv(shared, { tag: 0xab00n, tagMask: 0xff00n });
  await server.send(pattern(100, 5), { tag: 0xab42n });
  t.deepEqual(await masked, { nbytes: 100, tag: 0xab42n });
  t.is(mismatch(shared, 5), -1);
  await client.close();
  await server.close();
  t.is(ucx.info().inFlight, 0);
});

ucxTest("closing an endpoint (forced, or graceful then forced) rejects what is pending on it with ERR_UCX_ENDPOINT_CLOSED, and its peer's with ERR_UCX_PEER_FAILED", async (t) => {
  // In a thread of its own: the sends below leave unexpected messages in its UCX worker's
  // queue (tags are matched per worker), which end with the thread.
  const script = `const { ucx } = require(${JSON.stringify(require.resolve('../index.js'))});
    const { parentPort } = require('node:worker_threads');
    const codeOf = (p) => p.then(() => 'resolved', (e) => e.code);
    (async () => {
      const outcomes = [];
      for (const force of [false, true]) {
        const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
        const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: listener.port }), listener.accept()]);
        listener.close();
        // Nothing ever matches these: a receive, and sends far above any eager size (a
        // rendezvous waits for the peer's receive).
        const recv = codeOf(server.recv(new Uint8Array(4096), { tag: 0x51n }));
        const send = codeOf(server.send(new Uint8Array(64 * 2 ** 20), { tag: 0x52n }));
        const peerSend = codeOf(client.send(new Uint8Array(64 * 2 ** 20), { tag: 0x53n }));
        if (force) await server.close({ force });
        else {
          // A graceful close waits for its send, which nothing receives: a forced close
          // meanwhile ends the wait (and the send).
          const closing = server.close();
          await server.close({ force: true });
          await closing;
        }
        outcomes.push({ force, recv: await recv, send: await send, peerSend: await peerSend });
        await client.close();
      }
      parentPort.postMessage({ outcomes, inFlight: ucx.info().inFlight });
    })().catch((e) => parentPort.postMessage({ error: e.code + ' ' + e.message }));`;
  const w = new Worker(script, { eval: true });
  const [report] = await Promise.all([new Promise((resolve) => w.once('message', resolve)), new Promise((resolve) => w.once('exit', resolve))]);
  t.falsy(report.error, report.error);
  for (const force of [false, true]) {
    t.deepEqual(report.outcomes.find((o) => o.force === force), {
      force,
      recv: 'ERR_UCX_ENDPOINT_CLOSED',
      send: 'ERR_UCX_ENDPOINT_CLOSED',
      peerSend: 'ERR_UCX_PEER_FAILED',
    });
  }
  t.is(report.inFlight, 0);
});

ucxTest("close() of an endpoint whose peer closed first settles once it is gone: nothing in flight, no record left", async (t) => {
  // The peer's close fails this side's endpoint, which starts closing it; close() then
  // waits for that close rather than settling while UCX still runs it.
  const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => listener.close());
  for (let i = 0; i < 20; i++) {
    const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: listener.port }), listener.accept()]);
    const pending = server.recv(new Uint8Array(8), { tag: 0x61n }).then(() => 'resolved', (e) => e.code);
    await client.close();
    t.is(await pending, 'ERR_UCX_PEER_FAILED');
    await server.close();
    const { inFlight, endpoints } = ucx.info();
    t.deepEqual({ inFlight, endpoints }, { inFlight: 0, endpoints: 0 }, `cycle ${i}`);
  }
});

ucxTest('memory in flight: free() during a receive defers the release until it completes', async (t) => {
  const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
  const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: listener.port }), listener.accept()]);
  listener.close();
  const dst = new MemoryUSMHost(2 ** 20);
  const view = new Uint8Array(dst.buffer);
  const got = server.recv(dst, { tag: 1n });
  dst.free();
  t.is(view.length, 0, 'the object let go of its buffer');
  await client.send(pattern(2 ** 20, 9), { tag: 1n });
  t.is((await got).nbytes, 2 ** 20, 'the receive completed into memory the free did not release');
  // A plain ArrayBuffer transferred away during a receive: the bytes go to the op's own buffer.
  const plain = new Uint8Array(4096);
  const late = server.recv(plain, { tag: 2n });
  await client.send(pattern(4096, 2), { tag: 2n });
  await late;
  t.is(mismatch(plain, 2), -1);
  await client.close();
  await server.close();
});

ucxTest('two processes over loopback TCP', async (t) => {
  await pair(t, '127.0.0.1', { UCX_TLS: 'tcp,self' }, SIZES);
});

ucxTest('two processes with UCX_TLS=shm,self,tcp (with error handling: over TCP)', async (t) => {
  // tcp is there for the connection manager (the sockaddr handshake). With peer failure
  // handling (the default) UCX leaves its shared-memory transports out (they cannot report
  // a peer's failure): the data goes over TCP.
  await pair(t, '127.0.0.1', { UCX_TLS: 'shm,self,tcp' }, SIZES);
});

ucxTest('a receive of a message that had come settles at once, with its bytes and tag', async (t) => {
  // Whether UCX completes such a receive inside the call or later, the result is the same.
  const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
  const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: listener.port }), listener.accept()]);
  listener.close();
  for (let i = 0; i < 3; i++) await client.send(pattern(64, i), { tag: 40n + BigInt(i) });
  await client.flush();
  const plain = new Uint8Array(64);
  const shared = new Uint8Array(new SharedArrayBuffer(64));
  const host = new MemoryUSMHost(64);
  t.deepEqual(await server.recv(plain, { tag: 40n }), { nbytes: 64, tag: 40n });
  t.deepEqual(await server.recv(shared, { tag: 41n }), { nbytes: 64, tag: 41n });
  t.deepEqual(await server.recv(host, { tag: 0n, tagMask: 0n }), { nbytes: 64, tag: 42n }, 'a mask reports the sender\'s tag');
  t.is(mismatch(plain, 0), -1, 'into a plain ArrayBuffer');
  t.is(mismatch(shared, 1), -1);
  t.is(mismatch(host.copyToHost(), 2), -1);
  t.is(ucx.info().inFlight, 0);
  host.free();
  await client.close();
  await server.close();
});

/** Two network namespaces joined by a veth pair, with addresses of their own; removed by `cleanup`. */
function namespaces() {
  const suffix = `${process.pid % 10000}`;
  const names = { a: `dpmA${suffix}`, b: `dpmB${suffix}`, va: `dpmva${suffix}`, vb: `dpmvb${suffix}` };
  const run = (...args) => spawnSync('ip', args, { encoding: 'utf8', timeout: 10000 });
  const cleanup = () => {
    run('netns', 'del', names.a);
    run('netns', 'del', names.b);
  };
  const steps = [
    ['netns', 'add', names.a], ['netns', 'add', names.b],
    ['link', 'add', names.va, 'type', 'veth', 'peer', 'name', names.vb],
    ['link', 'set', names.va, 'netns', names.a], ['link', 'set', names.vb, 'netns', names.b],
    ['-n', names.a, 'addr', 'add', '10.231.0.1/30', 'dev', names.va], ['-n', names.b, 'addr', 'add', '10.231.0.2/30', 'dev', names.vb],
    ['-n', names.a, 'link', 'set', names.va, 'up'], ['-n', names.b, 'link', 'set', names.vb, 'up'],
    ['-n', names.a, 'link', 'set', 'lo', 'up'], ['-n', names.b, 'link', 'set', 'lo', 'up'],
  ];
  for (const step of steps) {
    const r = run(...step);
    if (r.status !== 0) {
      cleanup();
      return { error: `ip ${step.join(' ')}: ${(r.stderr || r.error?.message || '').trim()}` };
    }
  }
  return { names, cleanup };
}

const isRoot = process.getuid?.() === 0;
const netnsTest = available && isRoot ? test.serial : test.skip;
if (available && !isRoot) console.log('# the two-namespace test is skipped: it needs root (ip netns add)');

netnsTest('two processes in two network namespaces over a veth pair (TCP)', async (t) => {
  const ns = namespaces();
  if (ns.error) {
    t.log(`network namespaces could not be made here (${ns.error}): the loopback tests above cover the transport`);
    t.pass();
    return;
  }
  try {
    await pair(t, '10.231.0.1', { UCX_TLS: 'tcp,self' }, [1, 4096, 2 ** 20], { server: ns.names.a, client: ns.names.b, connectTo: '10.231.0.1' });
  } finally {
    ns.cleanup();
  }
});

ucxTest('one-sided: a peer process maps memory, this one puts into it and gets from it through its remote key', async (t) => {
  const server = peer(['rma', '127.0.0.1']);
  const { port } = await server.next();
  const endpoint = await ucx.connect({ host: '127.0.0.1', port });
  const keyBytes = new Uint8Array(4096);
  const { nbytes } = await endpoint.recv(keyBytes, { tag: 1n });
  const key = endpoint.unpackRemoteKey(keyBytes.subarray(0, nbytes));
  t.is(key.nbytes, 2 ** 20);
  const head = new Uint8Array(64);
  await endpoint.get(head, key, { offset: 0 });
  t.is(mismatch(head, 0), -1, 'get reads the peer memory');
  await endpoint.put(new Uint8Array(16).fill(0xee), key, { offset: 8 });
  await t.throwsAsync(endpoint.put(new Uint8Array(16), key, { offset: 2 ** 20 - 8 }), { code: 'ERR_UCX_RKEY_INVALID' });
  await endpoint.flush();
  await endpoint.send(new Uint8Array(8), { tag: 9n });
  const report = await server.next();
  const expected = Array.from(pattern(64, 0));
  expected.fill(0xee, 8, 24);
  t.deepEqual(report.head, expected, 'the put landed in the peer memory');
  key.destroy();
  await t.throwsAsync(endpoint.get(head, key), { code: 'ERR_UCX_RKEY_INVALID' });
  t.throws(() => endpoint.unpackRemoteKey(new Uint8Array(40)), { code: 'ERR_UCX_RKEY_INVALID' });
  await endpoint.close();
  await server.exit;
});

ucxTest('a peer killed mid-transfer rejects every pending operation with ERR_UCX_PEER_FAILED', async (t) => {
  const server = peer(['hold', '127.0.0.1']);
  const { port } = await server.next();
  const endpoint = await ucx.connect({ host: '127.0.0.1', port });
  await server.next();
  const receives = [1n, 2n, 3n].map((tag) => endpoint.recv(new Uint8Array(1024), { tag }));
  const big = endpoint.send(new Uint8Array(64 * 2 ** 20), { tag: 4n });
  server.child.kill('SIGKILL');
  await server.exit;
  for (const pending of [...receives, big]) {
    const error = await t.throwsAsync(pending);
    t.is(error.code, 'ERR_UCX_PEER_FAILED', error.message);
  }
  await t.throwsAsync(endpoint.send(new Uint8Array(1), { tag: 1n }), { code: 'ERR_UCX_PEER_FAILED' });
  await endpoint.close();
  t.is(ucx.info().inFlight, 0);
});

ucxTest('faults and bad input are coded errors', async (t) => {
  // A port nothing listens on.
  const probe = ucx.listen({ host: '127.0.0.1', port: 0 });
  const closedPort = probe.port;
  probe.close();
  await t.throwsAsync(ucx.connect({ host: '127.0.0.1', port: closedPort }), { code: 'ERR_UCX_CONNECTION_REFUSED' });
  await t.throwsAsync(ucx.connect({ host: 'not an address', port: 1 }), { code: 'ERR_UCX_BAD_ADDRESS' });
  t.throws(() => ucx.listen({ host: '192.0.2.1', port: 0 }), { code: 'ERR_UCX_BAD_ADDRESS' }, 'an address of no interface here');
  await t.throwsAsync(ucx.connect({ host: '127.0.0.1', port: 70000 }), { code: 'ERR_INVALID_ARG_VALUE' });
  await t.throwsAsync(ucx.connect({ host: '127.0.0.1' }), { code: 'ERR_INVALID_ARG_TYPE' });
  const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
  t.throws(() => ucx.listen({ host: '127.0.0.1', port: listener.port }), { code: 'ERR_UCX_BAD_ADDRESS' }, 'a port in use');
  const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: listener.port }), listener.accept()]);
  listener.close();
  await t.throwsAsync(listener.accept(), { code: 'ERR_UCX_ENDPOINT_CLOSED' });
  // Truncation: the receive rejects; the sender's send completes.
  const small = server.recv(new Uint8Array(10), { tag: 3n });
  await client.send(new Uint8Array(100), { tag: 3n });
  const truncated = await t.throwsAsync(small, { code: 'ERR_UCX_TRUNCATED' });
  t.true(truncated instanceof RangeError);
  await t.throwsAsync(client.send(42, { tag: 1n }), { code: 'ERR_INVALID_ARG_TYPE' });
  await t.throwsAsync(client.send(new Uint8Array(1), { tag: -1n }), { code: 'ERR_INVALID_ARG_VALUE' });
  await t.throwsAsync(client.send(new Uint8Array(1), { tag: 2n ** 64n }), { code: 'ERR_INVALID_ARG_VALUE' });
  await t.throwsAsync(client.send(new Uint8Array(1), { tga: 1n }), { code: 'ERR_INVALID_ARG_TYPE' });
  // A receive pending at close rejects; later operations are refused.
  const pending = server.recv(new Uint8Array(8), { tag: 99n });
  await server.close();
  await t.throwsAsync(pending, { code: 'ERR_UCX_ENDPOINT_CLOSED' });
  await t.throwsAsync(server.send(new Uint8Array(1), { tag: 1n }), { code: 'ERR_UCX_ENDPOINT_CLOSED' });
  await client.close();
  await client.close();
  t.is(ucx.info().inFlight, 0);
});

ucxTest("UCX's memory hooks stay off unless the environment turns them on", (t) => {
  // UCX's UCM patches malloc/mmap under the process's other threads and corrupted Node's
  // heap now and then; the addon sets UCX_MEM_EVENTS=n before UCX loads and takes it out
  // of the environment once UCX has read it. UCM's debug log says when it installs a
  // hook, so the control (the user's UCX_MEM_EVENTS=y) shows that the check would see one.
  const script = `const { ucx } = require(${JSON.stringify(require.resolve('../index.js'))});
    ucx.listen({ host: '127.0.0.1', port: 0 }).close();
    console.log(JSON.stringify({ events: process.env.UCX_MEM_EVENTS ?? null }));`;
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('UCX_MEM_')));
  const run = (extra) => {
    const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...clean, UCX_MEM_LOG_LEVEL: 'debug', ...extra } });
    t.is(out.status, 0, out.stderr);
    const lines = out.stdout.trim().split('\n');
    return { events: JSON.parse(lines.at(-1)).events, hooks: `${out.stdout}${out.stderr}`.match(/installing \w+ hook/g) ?? [] };
  };
  const byDefault = run({});
  t.is(byDefault.events, null, 'set only while UCX loaded: children choose for themselves');
  t.deepEqual(byDefault.hooks, []);
  const chosen = run({ UCX_MEM_EVENTS: 'y' });
  t.is(chosen.events, 'y', "the user's choice is kept");
  t.true(chosen.hooks.length > 0, 'the control: UCM logs the hooks it installs');
});

ucxTest('no leak: 1,000 transfers in flight, then 200 connect/close cycles, leave the fds and the worker as they were', async (t) => {
  // The full-size version (10^4 cycles, RSS too) is scripts/ucx-soak.js.
  const fds = () => readdirSync('/proc/self/fd').length;
  const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
  const cycle = async () => {
    const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: listener.port }), listener.accept()]);
    return { client, server };
  };
  const warm = await cycle();
  await warm.client.close();
  await warm.server.close();
  const base = { fds: fds(), info: ucx.info() };
  const { client, server } = await cycle();
  const receives = [];
  const sends = [];
  for (let i = 0; i < 1000; i++) receives.push(server.recv(new Uint8Array(4096), { tag: BigInt(1000 + i) }));
  t.is(ucx.info().inFlight, 1000, 'the receives are in flight at once');
  for (let i = 0; i < 1000; i++) sends.push(client.send(pattern(4096, i & 0xff), { tag: BigInt(1000 + i) }));
  await Promise.all(sends);
  const got = await Promise.all(receives);
  t.true(got.every((r, i) => r.nbytes === 4096 && r.tag === BigInt(1000 + i)));
  await client.close();
  await server.close();
  for (let i = 0; i < 200; i++) {
    const pair = await cycle();
    await pair.client.close();
    await pair.server.close();
  }
  listener.close();
  const end = ucx.info();
  t.is(end.inFlight, 0);
  t.is(end.ucxRequests, 0);
  t.is(end.endpoints, base.info.endpoints);
  t.is(end.listeners, base.info.listeners - 1, 'this test\'s listener is closed');
  // UCX closes a connection's sockets as its worker progresses the disconnect, which can
  // come a few turns of the loop after close() settled: give it those turns.
  for (let turn = 0; turn < 500 && fds() > base.fds; turn++) await new Promise((resolve) => setTimeout(resolve, 20));
  t.true(fds() <= base.fds, `fds ${base.fds} -> ${fds()}`);
});

ucxTest('a worker of another thread is ERR_UCX_WRONG_THREAD', async (t) => {
  const token = ucx._workerToken();
  const code = await new Promise((resolve, reject) => {
    const w = new Worker(`const { native } = require(${JSON.stringify(require.resolve('../lib/native.js'))});
      const { parentPort, workerData } = require('node:worker_threads');
      try { native.ucxInfo(workerData); parentPort.postMessage('no error'); } catch (e) { parentPort.postMessage(e.code); }`,
    { eval: true, workerData: token });
    w.once('message', resolve);
    w.once('error', reject);
  });
  t.is(code, 'ERR_UCX_WRONG_THREAD');
});

ucxTest('a worker thread has a worker of its own, and ends it with the thread', async (t) => {
  const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
  const accepted = listener.accept();
  const w = new Worker(`const { ucx } = require(${JSON.stringify(require.resolve('../index.js'))});
    const { parentPort, workerData } = require('node:worker_threads');
    (async () => {
      const ep = await ucx.connect({ host: '127.0.0.1', port: workerData });
      parentPort.postMessage('connected');
      // Sends once the main thread's receive is posted: tags are matched per worker, and a
      // message that came first would wait in the main worker's queue for any later test.
      await new Promise((resolve) => parentPort.once('message', resolve));
      await ep.send(new Uint8Array([1, 2, 3]), { tag: 0x5000n });
      await ep.flush();
      parentPort.postMessage('sent');
    })().catch((e) => parentPort.postMessage(e.code + ' ' + e.message));`,
  { eval: true, workerData: listener.port });
  // Listened for at once: the thread may end before the last await below returns.
  const exited = new Promise((resolve) => w.once('exit', resolve));
  const messages = [];
  const waiters = [];
  w.on('message', (m) => (waiters.length ? waiters.shift()(m) : messages.push(m)));
  const next = () => (messages.length ? Promise.resolve(messages.shift()) : new Promise((r) => waiters.push(r)));
  t.is(await next(), 'connected');
  const server = await accepted;
  listener.close();
  const dst = new Uint8Array(3);
  const got = server.recv(dst, { tag: 0x5000n });
  w.postMessage('go');
  t.is(await next(), 'sent');
  t.deepEqual(await got, { nbytes: 3, tag: 0x5000n });
  t.deepEqual(Array.from(dst), [1, 2, 3]);
  await exited;
  await server.close();
});

// GPU (scripts/gpu-suite.sh on the H200): CUDA device memory from one process to another,
// no host staging (UCX's cuda_ipc/cuda_copy). Needs a UCX with CUDA transports: the wheel's
// (DPCTL_MEMORY_UCX_ROOT=<cache>/ucx-1.22.0/libucx); a system UCX without them skips visibly.
const HAS_CUDA = getDevices().some((d) => d.backend === 'cuda');
// Whether this UCX moves CUDA memory (asked only where a CUDA device is present).
const CUDA_UCX = available && HAS_CUDA && ucx.info().cudaMemory;
const NO_CUDA_UCX = available && HAS_CUDA && !CUDA_UCX
  ? ` [${ucx.info().library} has no CUDA transports; set DPCTL_MEMORY_UCX_ROOT to the libucx-cu12 wheel's prefix: skipped]` : '';
const gpuTest = CUDA_UCX ? test.serial : test.skip;
if (available && !HAS_CUDA) console.log('# the CUDA device-memory transport test is skipped: no CUDA device here (the GPU suite runs it)');

gpuTest(`CUDA device memory from one process to another (256 MiB, checked byte for byte)${NO_CUDA_UCX}`, async (t) => {
  const size = 256 * 2 ** 20;
  for (const tls of [undefined, 'cuda_copy,cuda_ipc,tcp,self']) {
    const env = tls ? { UCX_TLS: tls } : {};
    const server = peer(['devserver', '127.0.0.1', String(size)], { env });
    const { port } = await server.next();
    const client = peer(['devclient', '127.0.0.1', String(port), String(size)], { env });
    const sent = await client.next();
    const got = await server.next();
    t.falsy(sent.error, sent.error);
    t.deepEqual(got, { nbytes: size, mismatch: -1 }, `UCX_TLS=${tls ?? '(default)'}`);
    await Promise.all([client.exit, server.exit]);
  }
});

// ---------------------------------------------------------------------------------------
// Interop with Python's ucxx (PyPI ucxx-cu12), both directions
// ---------------------------------------------------------------------------------------

const UCXX_VERSION = '0.52.0';
const UCXX_PEER = fileURLToPath(new URL('./fixtures/ucxx-peer.py', import.meta.url));
const UCXX_SIZES = [1, 8, 4096, 65537, 2 ** 20, 16 * 2 ** 20];

/** A venv with ucxx in the per-user cache, made on first use; `{ python }` or `{ skip: why }`. */
function ucxxVenv() {
  const { ucxDir } = require('../scripts/install-ucx.js');
  const dir = `${dirname(ucxDir())}/ucxx-venv-${UCXX_VERSION}`;
  const python = `${dir}/bin/python`;
  // The same UCX on both sides: ucxx 0.52 pins libucx 1.21, whose wire-up does not meet
  // 1.22's, so the venv gets runtime.json's UCX (libucxx runs on a newer UCX).
  const { UCX_VERSION } = require('../scripts/install-ucx.js');
  const ours = /UCX (\d+\.\d+\.\d+)/.exec(ucx.available().message)?.[1];
  if (ours !== UCX_VERSION) return { skip: `this process runs UCX ${ours}, the ucxx venv UCX ${UCX_VERSION}: UCX's wire-up between versions is not guaranteed` };
  const check = `import importlib.metadata as m, ucxx._lib.libucxx; assert m.version('libucx-cu12') == '${UCX_VERSION}'`;
  const works = () => spawnSync(python, ['-c', check], { encoding: 'utf8', timeout: 60000 }).status === 0;
  // A machine without a registry (the GPU machine) names a Python that has ucxx instead.
  const given = process.env.DPCTL_MEMORY_UCXX_PYTHON;
  if (given) {
    const probe = spawnSync(given, ['-c', check], { encoding: 'utf8', timeout: 60000 });
    return probe.status === 0 ? { python: given } : { skip: `DPCTL_MEMORY_UCXX_PYTHON=${given} has no ucxx on UCX ${UCX_VERSION}: ${(probe.stderr || '').trim().slice(-300)}` };
  }
  if (existsSync(python) && works()) return { python };
  console.log(`# installing ucxx-cu12==${UCXX_VERSION} for the interop tests into ${dir} (about 355 MB, once)`);
  const venv = spawnSync('python3', ['-m', 'venv', dir], { encoding: 'utf8' });
  if (venv.status !== 0) return { skip: `python3 -m venv failed: ${(venv.stderr || '').trim().slice(-300)}` };
  const pip = spawnSync(`${dir}/bin/pip`, ['install', '-q', '--disable-pip-version-check', `ucxx-cu12==${UCXX_VERSION}`], { encoding: 'utf8', timeout: 540000 });
  const same = pip.status === 0 && spawnSync(`${dir}/bin/pip`, ['install', '-q', '--disable-pip-version-check', '--no-deps', `libucx-cu12==${UCX_VERSION}`], { encoding: 'utf8', timeout: 300000 });
  if (!same || same.status !== 0 || !works()) return { skip: `pip could not install ucxx-cu12==${UCXX_VERSION} with libucx-cu12==${UCX_VERSION}: ${(pip.stderr || same?.stderr || pip.error?.message || '').trim().slice(-300)}` };
  return { python };
}

/** A ucxx peer process (`env` added to ours); `next()` resolves with its next JSON line. */
function ucxxPeer(python, args, env = {}) {
  const child = spawn(python, [UCXX_PEER, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  const lines = [];
  const waiting = [];
  let partial = '';
  child.stdout.on('data', (chunk) => {
    partial += chunk;
    let at;
    while ((at = partial.indexOf('\n')) >= 0) {
      const text = partial.slice(0, at).trim();
      partial = partial.slice(at + 1);
      // Only the peer's own JSON lines: UCX or ucxx may print to stdout too.
      if (!text.startsWith('{"')) continue;
      let line;
      try {
        line = JSON.parse(text);
      } catch {
        continue;
      }
      if (waiting.length) waiting.shift()(line);
      else lines.push(line);
    }
  });
  const exit = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  exit.then(() => waiting.splice(0).forEach((w) => w({ error: 'the ucxx peer exited' })));
  return { child, exit, next: () => (lines.length ? Promise.resolve(lines.shift()) : new Promise((r) => waiting.push(r))) };
}

/**
 * Node's side of the exchange: send each size, check what comes back; in and out of
 * `MemoryUSMDevice` with `device`, else TypedArrays.
 */
async function exchange(t, endpoint, { device = false } = {}) {
  for (let i = 0; i < UCXX_SIZES.length; i++) {
    const size = UCXX_SIZES[i];
    const tag = 2 * i + 2;
    const back = device ? new MemoryUSMDevice(size) : new Uint8Array(size);
    const out = device ? new MemoryUSMDevice(size) : pattern(size, tag);
    if (device) out.copyFromHost(pattern(size, tag));
    const reply = endpoint.recv(back, { tag: BigInt(tag + 1) });
    reply.catch(() => {}); // awaited below, unless the send fails first
    await endpoint.send(out, { tag: BigInt(tag) });
    t.deepEqual(await reply, { nbytes: size, tag: BigInt(tag + 1) });
    t.is(mismatch(device ? back.copyToHost() : back, tag + 1), -1, `Python -> Node, ${size} bytes`);
    if (device) {
      back.free();
      out.free();
    }
  }
}

// Whether the interop can run is decided here, at declaration (the venv made once), so that
// a test that cannot run is counted as skipped, with the reason in its title.
const venv = available ? ucxxVenv() : { skip: 'no UCX' };
const ucxxPython = () => venv.python;
/** test.serial where ucxx runs here, else a skip naming why. */
const ucxxDeclare = (runs) => (title, fn) => (!runs ? test.skip(title, fn) : venv.skip ? test.skip(`${title} [${venv.skip.replace(/[:\s]+$/, '')}: skipped]`, fn) : test.serial(title, fn));
const ucxxTest = ucxxDeclare(available);

ucxxTest('interop: Node connects to a Python ucxx listener; bytes both ways, 1 B .. 16 MiB', async (t) => {
  t.timeout(600000);
  const interpreter = ucxxPython();
  const python = ucxxPeer(interpreter, ['server', ...UCXX_SIZES.map(String)]);
  const { port, error } = await python.next();
  t.falsy(error, error);
  const endpoint = await ucx.connect({ host: '127.0.0.1', port });
  await exchange(t, endpoint);
  const report = await python.next();
  t.deepEqual(report, { checked: UCXX_SIZES }, 'Node -> Python: ucxx checked every size');
  await python.exit;
  await endpoint.close();
});

ucxxTest('interop: a Python ucxx client connects to a Node listener; bytes both ways', async (t) => {
  t.timeout(600000);
  const interpreter = ucxxPython();
  const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
  const python = ucxxPeer(interpreter, ['client', String(listener.port), ...UCXX_SIZES.map(String)]);
  const endpoint = await listener.accept();
  listener.close();
  await exchange(t, endpoint);
  const report = await python.next();
  t.deepEqual(report, { checked: UCXX_SIZES });
  await python.exit;
  await endpoint.close();
});

// GPU (the H200, with the wheel's UCX and DPCTL_MEMORY_UCXX_PYTHON naming a Python with ucxx
// and CuPy): CUDA device memory both ways, MemoryUSMDevice here, CuPy arrays there.
const ucxxGpuTest = ucxxDeclare(CUDA_UCX);
if (available && !HAS_CUDA) console.log('# the ucxx interop over CUDA device memory is skipped: no CUDA device here (the GPU suite runs it)');
ucxxGpuTest(`interop over CUDA device memory: MemoryUSMDevice here, CuPy arrays in a Python ucxx client, both ways${NO_CUDA_UCX}`, async (t) => {
  t.timeout(600000);
  const interpreter = ucxxPython();
  const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
  const python = ucxxPeer(interpreter, ['client', String(listener.port), ...UCXX_SIZES.map(String)], { UCXX_PEER_CUPY: '1' });
  const endpoint = await listener.accept();
  listener.close();
  await exchange(t, endpoint, { device: true });
  t.deepEqual(await python.next(), { checked: UCXX_SIZES }, 'Node -> Python: CuPy checked every size on the GPU');
  await python.exit;
  await endpoint.close();
});
