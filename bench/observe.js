#!/usr/bin/env node
'use strict';
// The cost of seeing memory (README "Seeing memory"), each against its peer in the same run:
//   - alloc+free with no history and no subscriber, against the same build with the
//     sink's hooks bypassed (DPCTL_MEMORY_STATS=0, in a child process; the two children
//     alternate round by round): target within 3 % (ratio >= 0.97);
//   - alloc+free with a TracingChannel subscriber on alloc and free from the start, against
//     none (child processes, alternating): target at most +0.3 us per allocation; beside
//     it Node's own floor, the
//     same subscriber's cost on two bare `TracingChannel.traceSync` calls around a no-op,
//     each with a context of its own (what tracing an allocation and a free cannot cost
//     less than); the same also in CPU time (process.cpuUsage), which another process's
//     load on a shared machine does not stretch;
//   - alloc+free with a history and stacks, against none, in one process: target at most
//     +5 us (also in CPU time); beside it
//     V8's floor, a history without stacks plus V8's capture of the same frames (the
//     default 10), their call sites read and each one's file and position asked (what a
//     recorder that tells call sites apart cannot cost less than); and with stackDepth 4;
//   - memorySnapshot() of 10^5 live blocks: target under 200 ms; again with the blocks
//     allocated under a history with stacks (a ring of 1000 events), the first snapshot
//     after them, which reads the stacks the sweeps left unread;
//   - the report of 10^6 recorded events (`dpctl-memory-report`, a child process): target
//     under 5 s; rendered by headless Chromium (`--dump-dom`, start-up included): under 3 s.
// Device: DPCTL_BENCH_DEVICE (default opencl:cpu). BENCH_QUICK=1 for a smoke run. Sections
// may be named to run only them (alloc, tracing, history, snapshot, report; all by default).
//   node bench/observe.js [section...]
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const diagnostics = require('node:diagnostics_channel');
const config = require('./config');
const { measure, median } = require('./lib');

const root = path.resolve(__dirname, '..');
const FILTER = process.env.DPCTL_BENCH_DEVICE ?? 'opencl:cpu';
const quick = process.env.BENCH_QUICK === '1';
const ROUNDS = quick ? 1 : 3;
const CASES = [
  ['host', 4096],
  ['device', 4096],
  ['host', 1 << 20],
];

/** In a child: alloc+free of each case, one measurement each. */
function child() {
  const m = require(root);
  const queue = new m.SyclQueue(FILTER);
  const classes = { host: m.MemoryUSMHost, device: m.MemoryUSMDevice, shared: m.MemoryUSMShared };
  const out = {};
  for (const [kind, n] of CASES) {
    const Class = classes[kind];
    out[`${kind}:${n}`] = measure(() => new Class(n, { queue }).free(), config.timing);
  }
  out.counted = m.memoryStats(queue.syclDevice).all.allocation.allocated > 0;
  process.stdout.write(`@@OBSERVE@@${JSON.stringify(out)}\n`);
}

const noop = () => {};
const handlers = { start: noop, end: noop, asyncStart: noop, asyncEnd: noop, error: noop };
const TRACED = ['dpctl-memory:alloc', 'dpctl-memory:free'];
const WARM_CALLS = quick ? 10_000 : 200_000;

/**
 * In a child: alloc+free host 4 KiB, and Node's floor (two bare `traceSync` calls around a
 * no-op, each with a context of its own, of the fields ours carry), with the subscriber on
 * from the start (as an APM agent subscribes) or never: a subscription made and dropped in
 * the middle of a run would measure V8 re-optimizing the code that tests for it instead.
 */
function tracingChild(subscribed) {
  const m = require(root);
  const queue = new m.SyclQueue(FILTER);
  const bare = diagnostics.tracingChannel('dpctl-memory-bench:floor');
  if (subscribed) {
    for (const name of TRACED) diagnostics.tracingChannel(name).subscribe(handlers);
    bare.subscribe(handlers);
  }
  const alloc = () => new m.MemoryUSMHost(4096, { queue }).free();
  const twoTraced = () => {
    bare.traceSync(noop, { kind: 'host', nbytes: 4096, device: FILTER, pointer: undefined });
    bare.traceSync(noop, { kind: 'host', nbytes: 4096, memory: null });
  };
  // Warm (a service subscribed at start-up has run its allocations a long while).
  for (let i = 0; i < WARM_CALLS; i++) {
    alloc();
    twoTraced();
  }
  const out = {
    alloc: measure(alloc, config.timing),
    floor: measure(twoTraced, config.timing),
    allocCpu: cpuTime(alloc),
    floorCpu: cpuTime(twoTraced),
  };
  process.stdout.write(`@@OBSERVE@@${JSON.stringify(out)}\n`);
}

/**
 * The CPU time (user and system, every thread of the process) per call of `fn`: batches
 * of calls, one figure per batch. On a shared machine another process's load stretches
 * wall-clock time but not this, so a difference of a fraction of a microsecond stands out
 * of the noise.
 */
function cpuTime(fn, calls = quick ? 20_000 : 200_000) {
  const samples = [];
  for (let batch = 0; batch < (quick ? 3 : 7); batch++) {
    const before = process.cpuUsage();
    for (let i = 0; i < calls; i++) fn();
    const spent = process.cpuUsage(before);
    samples.push(((spent.user + spent.system) * 1000) / calls);
  }
  return { samples };
}

function runChild(env, mode = '--child') {
  const r = spawnSync(process.execPath, [__filename, mode], { env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 64 << 20 });
  const line = (r.stdout || '').split('\n').find((l) => l.startsWith('@@OBSERVE@@'));
  if (!line) throw new Error(`the child failed: ${r.stderr}`);
  return JSON.parse(line.slice('@@OBSERVE@@'.length));
}

const us = (ns) => (ns / 1000).toFixed(3);
const rows = [];
function row(label, ours, peer, peerName, ratio, target, met) {
  rows.push({ label, ours, peer, peerName, ratio, target, met });
}

function allocRows() {
  const samples = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, env] of [['ours', {}], ['bypassed', { DPCTL_MEMORY_STATS: '0' }]]) {
      const r = runChild(env);
      if (name === 'bypassed' && r.counted) throw new Error('DPCTL_MEMORY_STATS=0 did not bypass the counters');
      for (const [id, v] of Object.entries(r)) {
        if (id === 'counted') continue;
        (samples[`${name}:${id}`] ??= []).push(...v.samples);
      }
    }
  }
  for (const [kind, n] of CASES) {
    const ours = median(samples[`ours:${kind}:${n}`]);
    const peer = median(samples[`bypassed:${kind}:${n}`]);
    const ratio = peer / ours;
    row(`alloc+free ${kind} ${n >= 1 << 20 ? `${n >> 20} MiB` : `${n >> 10} KiB`}, stats on, no history or subscriber`, `${us(ours)} us`, `${us(peer)} us`, 'hooks bypassed (DPCTL_MEMORY_STATS=0)', ratio.toFixed(3), '>= 0.97', ratio >= 0.97);
  }
}

function tracingRows() {
  const samples = { plain: { alloc: [], floor: [], allocCpu: [], floorCpu: [] }, traced: { alloc: [], floor: [], allocCpu: [], floorCpu: [] } };
  // More rounds than the counters' rows: these are differences of sub-microsecond figures,
  // and one process's figure differs from the next one's by about as much.
  for (let round = 0; round < 5 * ROUNDS; round++) {
    for (const [name, flag] of [['plain', '0'], ['traced', '1']]) {
      const r = runChild({ DPCTL_BENCH_SUBSCRIBED: flag }, '--tracing-child');
      for (const key of ['alloc', 'floor', 'allocCpu', 'floorCpu']) samples[name][key].push(...r[key].samples);
    }
  }
  const base = median(samples.plain.alloc);
  const withTracing = median(samples.traced.alloc);
  const ours = withTracing - base;
  const floor = median(samples.traced.floor) - median(samples.plain.floor);
  row('alloc+free host 4 KiB, TracingChannel subscriber on alloc and free', `${us(withTracing)} us`, `${us(base)} us`, 'no subscriber', (base / withTracing).toFixed(3), '+0.3 us', ours <= 300);
  row("  the subscriber's cost: ours over no subscriber, against Node's floor", `+${us(ours)} us`, `+${us(floor)} us`, '2x bare traceSync(no-op), same subscriber', (floor / ours).toFixed(3), '+0.3 us', ours <= 300);
  const oursCpu = median(samples.traced.allocCpu) - median(samples.plain.allocCpu);
  const floorCpu = median(samples.traced.floorCpu) - median(samples.plain.floorCpu);
  row('  the same in CPU time (process.cpuUsage: no other process counts)', `+${us(oursCpu)} us`, `+${us(floorCpu)} us`, '2x bare traceSync(no-op), same subscriber', (floorCpu / oursCpu).toFixed(3), '+0.3 us', oursCpu <= 300);
}

/** The shallower stack of the history rows (`recordMemoryHistory({ stackDepth })`). */
const SHALLOW = 4;

function historyRows(m, queue) {
  const alloc = () => new m.MemoryUSMHost(4096, { queue }).free();
  // V8's share of a stack: the same frames captured (the caller of `new` first), read as
  // call sites, and each frame's file and position asked.
  const asCallSites = (_error, sites) => sites;
  function bareStack() {
    const holder = {};
    const limit = Error.stackTraceLimit;
    const prepare = Error.prepareStackTrace;
    Error.stackTraceLimit = 10;
    Error.prepareStackTrace = asCallSites;
    Error.captureStackTrace(holder, bareStack);
    const sites = holder.stack;
    Error.prepareStackTrace = prepare;
    Error.stackTraceLimit = limit;
    for (const site of sites) {
      site.getFileName();
      site.getPosition();
    }
  }
  const allocWithBareStack = () => {
    bareStack();
    new m.MemoryUSMHost(4096, { queue }).free();
  };
  // V8's capture alone: the same frames taken and never read (V8 makes the call sites and
  // the text only when `stack` is read), what a recorder that reads stacks later pays now.
  function capturedStack() {
    const holder = {};
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 10;
    Error.captureStackTrace(holder, capturedStack);
    Error.stackTraceLimit = limit;
    return holder;
  }
  const allocWithCapture = () => {
    capturedStack();
    new m.MemoryUSMHost(4096, { queue }).free();
  };
  const plain = [];
  const recorded = [];
  const recordedBare = [];
  const recordedShallow = [];
  const recordedCapture = [];
  const cpu = { plain: [], recorded: [], capture: [] };
  const cpuCalls = quick ? 2_000 : 20_000;
  for (let round = 0; round < 2 * ROUNDS; round++) {
    plain.push(...measure(alloc, config.timing).samples);
    m.recordMemoryHistory({ maxEntries: 100_000, stacks: true });
    recorded.push(...measure(alloc, config.timing).samples);
    m.recordMemoryHistory({ maxEntries: 100_000, stacks: true, stackDepth: SHALLOW });
    recordedShallow.push(...measure(alloc, config.timing).samples);
    m.recordMemoryHistory({ maxEntries: 100_000, stacks: false });
    recordedBare.push(...measure(allocWithBareStack, config.timing).samples);
    recordedCapture.push(...measure(allocWithCapture, config.timing).samples);
    cpu.capture.push(...cpuTime(allocWithCapture, cpuCalls).samples);
    m.recordMemoryHistory({ maxEntries: 100_000, stacks: true });
    cpu.recorded.push(...cpuTime(alloc, cpuCalls).samples);
    m.recordMemoryHistory({ enabled: false });
    cpu.plain.push(...cpuTime(alloc, cpuCalls).samples);
  }
  const base = median(plain);
  const withHistory = median(recorded);
  const stackCost = withHistory - base;
  const v8Floor = median(recordedBare) - base;
  const shallow = median(recordedShallow);
  const captureFloor = median(recordedCapture) - base;
  row('alloc+free host 4 KiB, history with JS stacks (10 frames)', `${us(withHistory)} us`, `${us(base)} us`, 'no history', (base / withHistory).toFixed(3), '+5 us', stackCost <= 5000);
  row(`alloc+free host 4 KiB, history with JS stacks (stackDepth ${SHALLOW})`, `${us(shallow)} us`, `${us(base)} us`, 'no history', (base / shallow).toFixed(3), '+5 us', shallow - base <= 5000);
  row("  the history's cost (10 frames): ours over no history, against V8's floor", `+${us(stackCost)} us`, `+${us(v8Floor)} us`, "no stacks + V8's capture of the 10 frames", (v8Floor / stackCost).toFixed(3), '+5 us', stackCost <= 5000);
  row("  V8's capture alone (unread): no stacks + the 10 frames taken, never read", `+${us(captureFloor)} us`, '+5 us', 'target', (5000 / captureFloor).toFixed(3), '+5 us', captureFloor <= 5000);
  const cpuBase = median(cpu.plain);
  const cpuCost = median(cpu.recorded) - cpuBase;
  const cpuCapture = median(cpu.capture) - cpuBase;
  row('  the history\'s cost (10 frames) in CPU time, against the capture alone', `+${us(cpuCost)} us`, `+${us(cpuCapture)} us`, "no stacks + V8's capture, unread", (cpuCapture / cpuCost).toFixed(3), '+5 us', cpuCost <= 5000);
}

function snapshotRow(m, queue) {
  const n = quick ? 10_000 : 100_000;
  const held = [];
  for (let i = 0; i < n; i++) held.push(new m.MemoryUSMHost(64, { queue }));
  const times = [];
  let blocks = 0;
  for (let i = 0; i < (quick ? 2 : 5); i++) {
    const t0 = process.hrtime.bigint();
    blocks = m.memorySnapshot().liveBlocks.length;
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  for (const b of held) b.free();
  const ms = median(times);
  row(`memorySnapshot() of ${n} live blocks (${blocks} listed)`, `${ms.toFixed(1)} ms`, '200 ms', 'target', (200 / ms).toFixed(2), '< 200 ms', ms < 200);
  // The same blocks allocated under a history with stacks, each snapshot the first after
  // them (so it reads the stacks the sweeps left unread). The ring is kept small: a ring
  // of 10^5 events is as much JSON again as the blocks, stacks or not.
  const first = [];
  let stacks = 0;
  for (let round = 0; round < (quick ? 1 : 3); round++) {
    m.recordMemoryHistory({ maxEntries: 1000, stacks: true });
    for (let i = 0; i < n; i++) held[i] = new m.MemoryUSMHost(64, { queue });
    const t0 = process.hrtime.bigint();
    const snapshot = m.memorySnapshot();
    first.push(Number(process.hrtime.bigint() - t0) / 1e6);
    stacks = snapshot.liveBlocks.filter((b) => b.stack !== null).length;
    for (const b of held) b.free();
    m.recordMemoryHistory({ enabled: false });
  }
  const withStacks = median(first);
  row(`memorySnapshot() of ${n} live blocks allocated with stacks (${stacks} with one), their late reads included`, `${withStacks.toFixed(1)} ms`, '200 ms', 'target', (200 / withStacks).toFixed(2), '< 200 ms', withStacks < 200);
}

function reportRows(m, queue, dir) {
  const events = quick ? 100_000 : 1_000_000;
  m.recordMemoryHistory({ maxEntries: events, stacks: true });
  const sites = [(n) => new m.MemoryUSMHost(n, { queue }), (n) => new m.MemoryUSMDevice(n, { queue }), (n) => new m.MemoryUSMShared(n, { queue })];
  const held = [];
  // One event per step: an allocation from one of three sites, or a free; the live set
  // swings between a few hundred and a few thousand blocks.
  for (let i = 0; i < events; i++) {
    const grow = (i >> 14) % 2 === 0 ? i % 4 !== 3 : i % 4 === 3;
    if (held.length === 0 || (grow && held.length < 5000)) held.push(sites[i % 3](512 * (1 + (i % 9))));
    else held.splice((i * 7919) % held.length, 1)[0].free();
  }
  const snapshot = m.memorySnapshot();
  m.recordMemoryHistory({ enabled: false });
  for (const b of held) b.free();
  const input = path.join(dir, 'snapshot.json');
  fs.writeFileSync(input, JSON.stringify(snapshot));
  const page = path.join(dir, 'report.html');
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'report.js'), input, '-o', page], { encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`the report failed: ${r.stderr}`);
  row(`report of ${snapshot.events.length} events (${(fs.statSync(input).size / 2 ** 20).toFixed(0)} MiB of JSON)`, `${(ms / 1000).toFixed(2)} s`, '5 s', 'target', (5000 / ms).toFixed(2), '< 5 s', ms < 5000);
  const chromium = process.env.CHROME_BIN ?? 'chromium';
  if (spawnSync(chromium, ['--version']).status !== 0) {
    row('the report rendered by Chromium', 'missing', '3 s', `no ${chromium} on PATH`, '-', '< 3 s', false);
    return;
  }
  const flags = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', `--user-data-dir=${path.join(dir, 'profile')}`];
  const renders = [];
  for (let i = 0; i < (quick ? 1 : 3); i++) {
    const t1 = process.hrtime.bigint();
    const dom = spawnSync(chromium, [...flags, '--dump-dom', `file://${page}`], { encoding: 'utf8', maxBuffer: 256 << 20 });
    renders.push(Number(process.hrtime.bigint() - t1) / 1e6);
    if (dom.status !== 0 || !dom.stdout.includes('id="peak-summary"')) throw new Error(`chromium did not render the report: ${dom.stderr}`);
  }
  const render = median(renders);
  row('the report rendered by headless Chromium (--dump-dom, start-up included)', `${(render / 1000).toFixed(2)} s`, '3 s', 'target', (3000 / render).toFixed(2), '< 3 s', render < 3000);
}

const SECTIONS = ['alloc', 'tracing', 'history', 'snapshot', 'report'];
const named = process.argv.slice(2);
const runs = (section) => named.length === 0 || named.includes(section);

function main() {
  const unknown = named.filter((name) => !SECTIONS.includes(name));
  if (unknown.length > 0) throw new Error(`unknown section ${unknown.join(', ')}: the sections are ${SECTIONS.join(', ')}`);
  const m = require(root);
  const queue = new m.SyclQueue(FILTER);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dpctl-memory-bench-observe-'));
  try {
    console.log(`bench/observe: ${queue.syclDevice.filterString} (${queue.syclDevice.name}), ${ROUNDS} round(s)`);
    if (runs('alloc')) allocRows();
    if (runs('tracing')) tracingRows();
    if (runs('history')) historyRows(m, queue);
    if (runs('snapshot')) snapshotRow(m, queue);
    if (runs('report')) reportRows(m, queue, dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const widths = ['label', 'ours', 'peer', 'peerName', 'ratio', 'target'].map((k) => Math.max(k.length, ...rows.map((r) => String(r[k]).length)));
  const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i] ?? 0)).join(' | ');
  console.log(line(['case', 'ours', 'peer', 'peer name', 'ratio', 'target', 'met']));
  for (const r of rows) console.log(line([r.label, r.ours, r.peer, r.peerName, r.ratio, r.target, r.met ? 'yes' : 'NO']));
  if (process.env.BENCH_STRICT === '1' && rows.some((r) => !r.met)) process.exit(1);
}

if (process.argv[2] === '--child') child();
else if (process.argv[2] === '--tracing-child') tracingChild(process.env.DPCTL_BENCH_SUBSCRIBED === '1');
else main();
