// The UCX transport against hostile and unlucky peers (issue 39 #5 #6 #7 #8 #15): a peer
// that forges a remote key to an address of this process, a put after the owner unmapped
// and freed, back-to-back connections to an idle listener, a graceful close with sends in
// flight, and errors that say what happened. Peers are child processes
// (__test__/fixtures/ucx-hostile.mjs); verdicts are on bytes, codes and exit statuses,
// never on time (timeouts are hang guards only).
import test from 'ava';
import { fork, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const { ucx, UcxListener } = require('../index.js');
const HOSTILE = fileURLToPath(new URL('./fixtures/ucx-hostile.mjs', import.meta.url));
const INDEX = JSON.stringify(require.resolve('../index.js'));
const { available, message: WHY } = ucx.available();
const ucxTest = available ? test.serial : test.skip;
if (!available) console.log(`# transport hardening tests skipped: ${WHY}`);

/** A hostile-fixture process; `next()` resolves with its next message, `exit` when it ends. */
function peer(args, env = {}) {
  const merged = { ...process.env, ...env };
  // One-sided access only where a test asks for it.
  if (!('DPCTL_MEMORY_UCX_RMA' in env)) delete merged.DPCTL_MEMORY_UCX_RMA;
  const child = fork(HOSTILE, args, { env: merged, stdio: ['ignore', 'inherit', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const inbox = [];
  const waiting = [];
  child.on('message', (m) => (waiting.length ? waiting.shift()(m) : inbox.push(m)));
  const exit = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stderr })));
  exit.then(({ code, signal }) => {
    while (waiting.length) waiting.shift()({ error: `the peer exited (${signal ?? code}): ${stderr.slice(-2000)}` });
  });
  return { child, exit, next: () => (inbox.length ? Promise.resolve(inbox.shift()) : new Promise((r) => waiting.push(r))) };
}

/** Kills `peers` if the test runs past `ms` (a hang guard: the verdict never depends on it). */
function guard(t, peers, ms) {
  t.timeout(ms + 60000);
  const timer = setTimeout(() => peers.forEach((p) => p.child.kill('SIGKILL')), ms);
  t.teardown(() => {
    clearTimeout(timer);
    peers.forEach((p) => p.child.kill('SIGKILL'));
  });
}

const RMA = { DPCTL_MEMORY_UCX_RMA: '1' };

// Each check runs on the UCX the suite uses, and again on the oldest one it checks the trust
// settings on (runtime.json ucx.older, installed by setup.js for npm test), which names UCX's
// transport settings differently.
const { olderPrefix, OLDER_UCX_VERSION } = require('../scripts/install-ucx.js');
const olderRoot = olderPrefix();
const ucxes = [{ label: '', env: {} }];
if (olderRoot) ucxes.push({ label: `, UCX ${OLDER_UCX_VERSION}`, version: OLDER_UCX_VERSION, env: { DPCTL_MEMORY_UCX_ROOT: olderRoot } });
else console.log('# the older UCX (runtime.json ucx.older) is not installed: the #5 checks run on one UCX');

for (const { label, version, env: ucxEnv } of ucxes) {
  for (const tls of ['tcp,self', undefined]) {
    ucxTest(`#5 a peer that forges a key to this process's memory reaches nothing without the opt-in (UCX_TLS=${tls ?? 'default'}${label})`, async (t) => {
      const env = { ...ucxEnv, ...(tls ? { UCX_TLS: tls } : {}) };
      // The victim: RMA off (the default); it reports the address of memory it never mapped.
      const victim = peer(['victim', '127.0.0.1'], env);
      // The forger runs with RMA on, maps a buffer of its own and rewrites its key's base.
      const forger = () => peer(['forger', '127.0.0.1', String(ready.port), ready.address], { ...env, ...RMA });
      guard(t, [victim], 120000);
      const ready = await victim.next();
      t.falsy(ready.error, ready.error);
      t.false(ready.rma, 'one-sided access is off by default');
      if (version) t.true(ready.library.startsWith(`UCX ${version} `), `the victim runs UCX ${version}: ${ready.library}`);
      const attacker = forger();
      guard(t, [attacker], 120000);
      const tried = await attacker.next();
      t.falsy(tried.error, tried.error);
      t.is(tried.unpack, 'ok', 'the forged key unpacks on the attacker side (its own UCX cannot tell)');
      const verdict = await victim.next();
      t.deepEqual(verdict, { changed: 0 }, "the victim's memory is untouched by the forged puts");
      const [victimExit, attackerExit] = await Promise.all([victim.exit, attacker.exit]);
      t.is(victimExit.code, 0, `the victim survives: ${victimExit.stderr.slice(-1000)}`);
      t.is(attackerExit.code, 0);
      const read = await attacker.next();
      t.is(read.read, 0, 'the forged get read none of the victim\'s bytes');
      t.not(read.get, 'ok', 'the forged get does not complete');
    });
  }

  ucxTest(`#5 the control: with the opt-in on both sides, the same forged key writes the victim (the trust model the README states${label})`, async (t) => {
    const env = { ...ucxEnv, UCX_TLS: 'tcp,self', ...RMA };
    const victim = peer(['victim', '127.0.0.1'], env);
    guard(t, [victim], 120000);
    const ready = await victim.next();
    t.true(ready.rma);
    const attacker = peer(['forger', '127.0.0.1', String(ready.port), ready.address], env);
    guard(t, [attacker], 120000);
    t.is((await attacker.next()).put, 'ok');
    const verdict = await victim.next();
    t.true(verdict.changed > 0, 'over TCP, an RMA-enabled worker lets a peer write anywhere: why it is opt-in');
    await Promise.all([victim.exit, attacker.exit]);
  });
}

ucxTest('#5 mapMemory, unpackRemoteKey and put/get without the opt-in are ERR_UCX_RMA_DISABLED', (t) => {
  const script = `const { ucx, MemoryUSMHost } = require(${INDEX});
    const out = {};
    try { ucx.mapMemory(new MemoryUSMHost(64)); out.map = 'no error'; } catch (e) { out.map = e.code; out.message = e.message; }
    out.rma = ucx.info().rma;
    console.log(JSON.stringify(out));`;
  const env = { ...process.env };
  delete env.DPCTL_MEMORY_UCX_RMA;
  const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env, timeout: 120000 });
  t.is(run.status, 0, run.stderr);
  const out = JSON.parse(run.stdout.trim().split('\n').at(-1));
  t.is(out.map, 'ERR_UCX_RMA_DISABLED');
  t.regex(out.message, /DPCTL_MEMORY_UCX_RMA=1/);
  t.false(out.rma);
});

for (const pool of ['1', '0']) {
  ucxTest(`#6 a put through a key after its owner unmapped and freed the memory lands in no other allocation, and the owner lives (pool ${pool === '0' ? 'off' : 'on'})`, async (t) => {
    const env = { UCX_TLS: 'tcp,self', DPCTL_MEMORY_POOL: pool, ...RMA };
    const owner = peer(['owner', '127.0.0.1'], env);
    guard(t, [owner], 120000);
    const { port, error } = await owner.next();
    t.falsy(error, error);
    const late = peer(['late', '127.0.0.1', String(port)], env);
    guard(t, [late], 120000);
    const tried = await late.next();
    t.falsy(tried.error, tried.error);
    t.is(tried.first, 'ok', 'a put while mapped works');
    const verdict = await owner.next();
    t.deepEqual(verdict, { changed: 0 }, 'the allocations made after the unmap are untouched');
    const [ownerExit, lateExit] = await Promise.all([owner.exit, late.exit]);
    t.deepEqual([ownerExit.code, ownerExit.signal], [0, null], `the owner exits normally: ${ownerExit.stderr.slice(-1000)}`);
    t.is(lateExit.code, 0);
  });
}

ucxTest('#6 unmapped memory is let go once the endpoints open at the unmap have closed', async (t) => {
  const script = `process.env.DPCTL_MEMORY_UCX_RMA = '1';
    const { ucx, MemoryUSMHost } = require(${INDEX});
    (async () => {
      const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
      const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: listener.port }), listener.accept()]);
      listener.close();
      const map = ucx.mapMemory(new MemoryUSMHost(4096));
      map.unmap();
      const held = ucx.info().unmappedHeld;
      await client.close();
      await server.close();
      for (let i = 0; i < 100 && ucx.info().unmappedHeld > 0; i++) await new Promise((r) => setTimeout(r, 20));
      const alone = ucx.mapMemory(new MemoryUSMHost(4096));
      alone.unmap();
      console.log(JSON.stringify({ held, after: ucx.info().unmappedHeld }));
    })();`;
  const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, UCX_TLS: 'tcp,self' }, timeout: 120000 });
  t.is(run.status, 0, run.stderr);
  t.deepEqual(JSON.parse(run.stdout.trim().split('\n').at(-1)), { held: 1, after: 0 });
});

ucxTest('#7 an idle listener accepts every one of 300 back-to-back connect + send + close cycles from another process', async (t) => {
  const env = { UCX_TLS: 'tcp,self' };
  const listener = peer(['listener', '127.0.0.1'], env);
  guard(t, [listener], 400000);
  const { port } = await listener.next();
  const cycles = peer(['cycles', '127.0.0.1', String(port), '300'], env);
  guard(t, [cycles], 400000);
  const report = await cycles.next();
  t.deepEqual(report, { done: 300 }, report.error);
  t.is((await cycles.exit).code, 0);
  listener.child.kill();
});

ucxTest('#7 connect is bounded: a timeout option, ERR_UCX_CONNECT_TIMEOUT, and bad timeouts refused', async (t) => {
  // A TCP listener that never answers UCX's handshake: the connection never comes up.
  const net = await import('node:net');
  const silent = net.createServer(() => {});
  await new Promise((resolve) => silent.listen(0, '127.0.0.1', resolve));
  try {
    const error = await t.throwsAsync(ucx.connect({ host: '127.0.0.1', port: silent.address().port, timeout: 300 }));
    t.is(error.code, 'ERR_UCX_CONNECT_TIMEOUT', error.message);
    t.regex(error.message, /300 ms/);
    for (const bad of [0, -1, NaN, 'soon', 2 ** 31]) {
      const refused = await t.throwsAsync(ucx.connect({ host: '127.0.0.1', port: 1, timeout: bad }));
      t.is(refused.code, 'ERR_INVALID_ARG_VALUE', `timeout ${String(bad)}`);
    }
  } finally {
    silent.close();
  }
  for (let i = 0; i < 100 && ucx.info().inFlight > 0; i++) await new Promise((r) => setTimeout(r, 20));
  t.is(ucx.info().inFlight, 0, 'the timed-out connection was closed');
});

ucxTest('#8 a graceful close completes the sends before it: 64 KiB, 1 MiB and 8 MiB arrive and their sends resolve', async (t) => {
  for (const size of [65536, 2 ** 20, 8 * 2 ** 20]) {
    const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
    const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: listener.port }), listener.accept()]);
    listener.close();
    const dst = new Uint8Array(size);
    const got = server.recv(dst, { tag: 5n }).then((r) => r.nbytes, (e) => e.code);
    const sent = client.send(new Uint8Array(size).fill(7), { tag: 5n }).then(() => 'ok', (e) => e.code);
    await client.close();
    t.is(await sent, 'ok', `${size}: the send resolves`);
    t.is(await got, size, `${size}: the peer receives it`);
    t.true(dst.every((b) => b === 7), `${size}: intact`);
    await t.throwsAsync(client.send(new Uint8Array(1), { tag: 1n }), { code: 'ERR_UCX_ENDPOINT_CLOSED' });
    await server.close();
  }
  t.is(ucx.info().inFlight, 0);
});

ucxTest('#15 revoked Proxies and foreign objects get coded errors; UcxListener has no public injection hook', async (t) => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  t.throws(() => ucx.listen(proxy), { code: 'ERR_INVALID_ARG_TYPE', message: /revoked Proxy/ });
  await t.throwsAsync(ucx.connect(proxy), { code: 'ERR_INVALID_ARG_TYPE', message: /revoked Proxy/ });
  t.false('_accepted' in UcxListener.prototype, 'no public _accepted');
  const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
  const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: listener.port }), listener.accept()]);
  listener.close();
  await t.throwsAsync(client.put(new Uint8Array(1), proxy), { code: 'ERR_INVALID_ARG_TYPE' });
  await t.throwsAsync(client.send(new Uint8Array(1), proxy), { code: 'ERR_INVALID_ARG_TYPE', message: /revoked Proxy/ });
  await client.close();
  await server.close();
});

ucxTest('#15 a UCX configuration UCX refuses is ERR_UCX_CONFIG naming the variable, without UCX log lines on stderr', (t) => {
  const script = `const { ucx } = require(${INDEX});
    const out = { available: ucx.available().available };
    try { ucx.listen({ host: '127.0.0.1', port: 0 }); out.code = 'no error'; } catch (e) { out.code = e.code; out.message = e.message; }
    console.log(JSON.stringify(out));`;
  const env = { ...process.env, UCX_TLS: 'nonsense' };
  delete env.UCX_LOG_LEVEL;
  const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env, timeout: 120000 });
  t.is(run.status, 0, run.stderr);
  const out = JSON.parse(run.stdout.trim().split('\n').at(-1));
  t.true(out.available, 'UCX is there');
  t.is(out.code, 'ERR_UCX_CONFIG');
  t.regex(out.message, /UCX_TLS=nonsense/);
  // UCX logs to stdout unless UCX_LOG_FILE says otherwise: both streams are looked at.
  t.notRegex(`${run.stdout}${run.stderr}`, /UCX {2}(ERROR|WARN)/, 'no UCX log lines beside the coded error');
  // The user's own UCX_LOG_LEVEL is kept: UCX then logs as asked.
  const loud = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...env, UCX_LOG_LEVEL: 'warn' }, timeout: 120000 });
  t.regex(`${loud.stdout}${loud.stderr}`, /UCX {2}(ERROR|WARN)/, 'the control: UCX logs when the user asks');
});
