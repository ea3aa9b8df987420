#!/usr/bin/env node
// The UCX transport against ucx_perftest (the same UCX, the same transport, the same run):
//   - tag bandwidth, host memory, one process to another: 256 MiB messages over loopback TCP
//     (UCX_TLS=tcp,self) and over shared memory (UCX_TLS=shm,self,tcp); target >= 0.9x perftest;
//   - 8-byte tag ping-pong latency (half a round trip); target: within 5 us of perftest's;
//   - BENCH_UCX_DEVICE=1 (the H200): the same bandwidth row with device memory on both sides
//     (MemoryUSMDevice against `ucx_perftest -m cuda`), target >= 0.9x; needs a UCX with CUDA
//     transports (the wheel's: DPCTL_MEMORY_UCX_ROOT=<cache>/ucx-1.22.0/libucx). Its rows
//     time 256 messages after 8 warm-up ones (host rows: 16 after 1), perftest the same
//     (-n, -w), so that the steady state is measured on both sides.
// Our endpoints have UCX's peer failure handling, which UCX's shared-memory transports lack:
// UCX leaves them out, and two processes of one host talk over TCP even when UCX_TLS names
// shm. The same transport is therefore `ucx_perftest -e` (endpoints with error handling):
// each row is against it; a second row, marked "perftest without -e", is against plain
// perftest (shared memory in the shm row), which no endpoint with error handling reaches.
// ratio = ours / perftest for bandwidth, perftest / ours for latency (> 1: ours is faster).
// Env: BENCH_QUICK=1 (fewer iterations), BENCH_UCX_TLS=tcp,shm (rows), BENCH_OUT (JSON).
// DPCTL_MEMORY_UCX_SPIN_US as for the library (the header says what was in force).
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { fork, spawn } = require('node:child_process');

const root = path.resolve(__dirname, '..');
const { ucx, MemoryUSMHost, MemoryUSMDevice, getDevices } = require(root);
const { cachedPrefix } = require('../scripts/install-ucx.js');

const QUICK = process.env.BENCH_QUICK === '1';
const BW_SIZE = 256 * 2 ** 20;
const BW_ITERS = QUICK ? 4 : 16;
// Device memory moves at TB/s: 16 messages of 256 MiB take ~2 ms there, and fixed costs
// (the ack's round trip, the first rendezvous, mapping the peer's memory) would weigh in
// the figure. Its rows time many more, after warm-up messages outside the timing, and
// perftest gets the same counts (-n, -w).
const DEVICE_BW_ITERS = QUICK ? 8 : 256;
/** [timed, warm-up] messages of a bandwidth row. */
const bwCounts = (kind) => (kind === 'device' ? [DEVICE_BW_ITERS, QUICK ? 2 : 8] : [BW_ITERS, 1]);
// Receives the sink keeps posted ahead of the messages (perftest's receiver keeps the
// whole window posted): enough that a send never waits for its receive.
const RECV_AHEAD = 16;
const LAT_ITERS = QUICK ? 2000 : 20000;
const TLS = (process.env.BENCH_UCX_TLS || 'tcp,shm').split(',');
// tcp in the shm row is for the connection manager (our sockaddr handshake; perftest's own
// handshake is out of band): the data goes over shared memory, UCX's fastest lane here.
const TLS_ENV = { tcp: 'tcp,self', shm: 'shm,self,tcp' };
/** UCX_TLS of a row: device memory needs UCX's CUDA transports beside the row's own. */
const tlsEnv = (tls, kind) => (kind === 'device' ? `${TLS_ENV[tls]},cuda_copy,cuda_ipc` : TLS_ENV[tls]);
const DEVICE = process.env.BENCH_UCX_DEVICE === '1';


/** ucx_perftest of the UCX in use: DPCTL_MEMORY_UCX_ROOT's, else the cached wheel's. */
function perftest() {
  const prefix = process.env.DPCTL_MEMORY_UCX_ROOT || cachedPrefix();
  if (!prefix) return null;
  const bin = path.join(prefix, 'bin', 'ucx_perftest');
  if (!fs.existsSync(bin)) return null;
  return { bin, env: { LD_LIBRARY_PATH: [path.join(prefix, 'lib'), process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') } };
}

let nextPort = 20000 + (process.pid % 20000);

/** Runs a perftest server and client; returns the client's Final figures. */
function runPerftest(tool, tls, args, kind = 'host') {
  const port = String(nextPort++);
  const env = { ...process.env, ...tool.env, UCX_TLS: tlsEnv(tls, kind) };
  return new Promise((resolve, reject) => {
    const server = spawn(tool.bin, ['-p', port], { env, stdio: 'ignore' });
    setTimeout(() => {
      let out = '';
      const client = spawn(tool.bin, ['127.0.0.1', '-p', port, ...args], { env, stdio: ['ignore', 'pipe', 'inherit'] });
      client.stdout.on('data', (d) => (out += d));
      client.on('close', () => {
        server.kill();
        const final = /Final:\s+(.*)/.exec(out);
        if (!final) return reject(new Error(`ucx_perftest ${args.join(' ')} printed no Final line:\n${out}`));
        const [iters, typicalLat, avgLat, , avgBw, overallBw] = final[1].trim().split(/\s+/).map(Number);
        resolve({ iters, latencyUs: avgLat, typicalUs: typicalLat, bandwidthGBs: (overallBw * 2 ** 20) / 1e9, avgBw });
      });
    }, 500);
  });
}

/** Our side: a peer process (bench/ucx-peer.js) and this one. */
function ourPeer(role, tls, extra = [], kind = 'host') {
  const child = fork(path.join(__dirname, 'ucx-peer.js'), [role, ...extra], {
    env: { ...process.env, UCX_TLS: tlsEnv(tls, kind) }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = () => new Promise((resolve) => child.once('message', resolve));
  return { child, next };
}

function memoryOf(kind, size) {
  return kind === 'device' ? new MemoryUSMDevice(size) : new MemoryUSMHost(size);
}

/** Bandwidth: the row's timed sends of 256 MiB into the peer's receives, timed to its ack. */
async function ourBandwidth(tls, kind) {
  const [iters, warmup] = bwCounts(kind);
  const peer = ourPeer('sink', tls, [String(BW_SIZE), String(warmup), String(iters), kind, String(RECV_AHEAD)], kind);
  const { port } = await peer.next();
  const endpoint = await ucx.connect({ host: '127.0.0.1', port });
  const src = memoryOf(kind, BW_SIZE);
  src.memset(1);
  const ack = new Uint8Array(8);
  const batch = async (count) => {
    const sends = [];
    for (let i = 0; i < count; i++) sends.push(endpoint.send(src, { tag: 1n }));
    await Promise.all(sends);
  };
  // Warm-up messages (registration caches, the connection's lanes, the peer's memory
  // mapped), acknowledged, then the timed ones.
  let acked = endpoint.recv(ack, { tag: 2n });
  await batch(warmup);
  await acked;
  acked = endpoint.recv(ack, { tag: 2n });
  const start = process.hrtime.bigint();
  await batch(iters);
  await acked;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  await endpoint.close();
  src.free();
  peer.child.kill();
  return { bandwidthGBs: (BW_SIZE * iters) / seconds / 1e9, iters };
}

/** Latency: 8-byte ping-pong, half the round trip. */
async function ourLatency(tls) {
  const peer = ourPeer('pong', tls, [String(LAT_ITERS + 100)]);
  const { port } = await peer.next();
  const endpoint = await ucx.connect({ host: '127.0.0.1', port });
  const ping = new Uint8Array(new SharedArrayBuffer(8));
  const pong = new Uint8Array(new SharedArrayBuffer(8));
  const round = async () => {
    const back = endpoint.recv(pong, { tag: 4n });
    await endpoint.send(ping, { tag: 3n });
    await back;
  };
  for (let i = 0; i < 100; i++) await round();
  // Each round timed too: the median beside the mean (a loaded machine's preemptions
  // land in the mean; perftest prints its "typical" beside its average).
  const halves = new Float64Array(LAT_ITERS);
  const start = process.hrtime.bigint();
  for (let i = 0; i < LAT_ITERS; i++) {
    const at = process.hrtime.bigint();
    await round();
    halves[i] = Number(process.hrtime.bigint() - at) / 2e3;
  }
  const us = Number(process.hrtime.bigint() - start) / 1e3 / LAT_ITERS / 2;
  halves.sort();
  await endpoint.close();
  peer.child.kill();
  return { latencyUs: us, medianUs: halves[LAT_ITERS >> 1] };
}

async function main() {
  const tool = perftest();
  if (!ucx.available().available) {
    console.log(`bench/ucx: ${ucx.available().message}`);
    process.exit(1);
  }
  if (!tool) console.log('bench/ucx: no ucx_perftest (DPCTL_MEMORY_UCX_ROOT/bin or the cached wheel): ours only');
  const spin = process.env.DPCTL_MEMORY_UCX_SPIN_US;
  const spinText = spin === undefined || spin === '' ? 'default (200 us)' : `${spin} us`;
  console.log(`bench/ucx: ${ucx.available().message}; devices: ${getDevices().map((d) => d.filterString).join(', ')}; spin window ${spinText}`);
  const rows = [];
  const row = (name, ours, peer, unit, ratio, target, met, gap) => {
    rows.push({ name, ours, peer, unit, ratio, target, met, ...(gap === undefined ? {} : { gap }) });
    const f = (v) => (v === null ? '-' : v.toFixed(unit === 'us' ? 2 : 3));
    const verdict = met === null ? '-' : gap === undefined || gap === null ? String(met) : `${met} (${gap >= 0 ? '+' : ''}${gap.toFixed(2)} us)`;
    console.log(`| ${name} | ${f(ours)} ${unit} | ${f(peer)} ${unit} | ${ratio === null ? '-' : ratio.toFixed(2)} | ${target} | ${verdict} |`);
  };
  console.log('| case | ours | ucx_perftest | ratio | target | met |');
  console.log('|---|---|---|---|---|---|');
  const kinds = DEVICE ? ['device'] : ['host'];
  for (const tls of TLS) {
    for (const kind of kinds) {
      const ours = await ourBandwidth(tls, kind);
      const [iters, warmup] = bwCounts(kind);
      const args = ['-t', 'tag_bw', '-s', String(BW_SIZE), '-n', String(iters), '-w', String(warmup), ...(kind === 'device' ? ['-m', 'cuda'] : [])];
      for (const [suffix, flags] of [['', ['-e']], [' (perftest without -e)', []]]) {
        const peer = tool ? await runPerftest(tool, tls, [...args, ...flags], kind) : null;
        const ratio = peer ? ours.bandwidthGBs / peer.bandwidthGBs : null;
        row(`tag bw ${kind} 256 MiB ${tls}${suffix}`, ours.bandwidthGBs, peer?.bandwidthGBs ?? null, 'GB/s', ratio, '>= 0.9x', ratio === null ? null : ratio >= 0.9);
      }
    }
    const ours = await ourLatency(tls);
    for (const [suffix, flags] of [['', ['-e']], [' (perftest without -e)', []]]) {
      const peer = tool ? await runPerftest(tool, tls, ['-t', 'tag_lat', '-s', '8', '-n', String(LAT_ITERS), ...flags]) : null;
      const gap = peer ? ours.latencyUs - peer.latencyUs : null;
      row(`tag lat 8 B ${tls}${suffix}`, ours.latencyUs, peer?.latencyUs ?? null, 'us', peer ? peer.latencyUs / ours.latencyUs : null, 'within 5 us', gap === null ? null : gap <= 5, gap);
      const typicalGap = peer ? ours.medianUs - peer.typicalUs : null;
      row(`tag lat 8 B ${tls}${suffix}, median / typical`, ours.medianUs, peer?.typicalUs ?? null, 'us', peer ? peer.typicalUs / ours.medianUs : null, 'within 5 us', typicalGap === null ? null : typicalGap <= 5, typicalGap);
    }
  }
  if (process.env.BENCH_OUT) fs.writeFileSync(process.env.BENCH_OUT, JSON.stringify({ quick: QUICK, rows }, null, 2));
  process.exit(0);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
