#!/usr/bin/env node
// dpctl-memory benchmark: our figures against peers measured in the same run.
//   CPU section (opencl:cpu): dpctl 0.21.1 on the same SYCL runtime (a Python subprocess in a
//     per-user venv, made on first use), and Node's Buffer.copy as the host-memory ceiling.
//   GPU section (cuda:gpu:0): raw cudaMemcpy / cudaMalloc* through CuPy and PyTorch, in the
//     machine's python3.
// Each round of ours runs in a Node child of its own (bench/round.js), as each peer round does
// in a fresh Python. Prints a table (ratio = peer time / our time: > 1 means ours is
// faster) and writes JSON to bench/results-<host>-<date>.json and, if set, to $BENCH_OUT.
// Env: BENCH_SECTIONS=cpu,gpu (default: every section whose device exists), BENCH_QUICK=1
// (fewer repeats), BENCH_PYTHON (python3 for the GPU peers), BENCH_STRICT=1 (exit 1 when a
// target is missed).
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const config = require('./config');
const cpu = require('./cpu');
const gpu = require('./gpu');
const { median, spread, RESULT_MARKER, childResult } = require('./lib');

const root = path.resolve(__dirname, '..');
const NOISY = 0.25;
const log = (msg) => console.log(msg);

function loadAddon() {
  try {
    return require(root);
  } catch (err) {
    console.error(`bench: the addon does not load (${err.message}); build it with npm run build`);
    process.exit(1);
  }
}

function hasDevice(addon, filter) {
  try {
    return addon.getDevices(filter).length > 0;
  } catch {
    return false;
  }
}

/** How the bench runs a child that measures (a peer, or a round of ours). */
const CHILD_OPTIONS = Object.freeze({ encoding: 'utf8', maxBuffer: 256 << 20, timeout: config.peerTimeoutS * 1000, killSignal: 'SIGKILL' });

/** Runs a Python peer script; returns its JSON, or { status: 'missing'|'error', error }. */
function runPeer(python, script, env) {
  const cfg = JSON.stringify(config);
  const r = spawnSync(python, [path.join(__dirname, 'peers', script), cfg], {
    ...CHILD_OPTIONS,
    env: { ...(env || process.env), PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1' },
  });
  return childResult(r, r.error ? python : script);
}

/**
 * One round of our side of `section` in a Node process of its own (bench/round.js), as each
 * peer round runs in a fresh Python process. A round that fails leaves its cases
 * unmeasured and fails a check.
 */
function runOursRound(section) {
  const r = spawnSync(process.execPath, [path.join(__dirname, 'round.js'), section], CHILD_OPTIONS);
  for (const line of (r.stdout || '').split('\n')) if (line && !line.startsWith(RESULT_MARKER)) log(line);
  if (r.stderr) process.stderr.write(r.stderr);
  const round = childResult(r, 'bench/round.js');
  if (round.status === 'missing' || round.status === 'error') {
    log(`bench: our ${section} round failed: ${round.error}`);
    return { ours: {}, node: {}, checks: [[`our ${section} round ran`, false]], peers: {} };
  }
  return round;
}

function deviceInfo(addon, filter) {
  try {
    const d = new addon.SyclDevice(filter);
    return { filter: d.filterString, name: d.name, vendor: d.vendor, driver: d.driverVersion, backend: d.backend };
  } catch (err) {
    return { filter, error: err.message };
  }
}

/** Adds a round's results (id -> measurement) into `into`, pooling the samples. */
function merge(into, results) {
  for (const [id, r] of Object.entries(results || {})) {
    const prev = into[id];
    if (r.error) {
      if (!prev) into[id] = { error: r.error };
    } else if (!prev || prev.error) {
      into[id] = { ...r, batch: [r.batch], rounds: [r.ns] };
    } else {
      const samples = prev.samples.concat(r.samples);
      into[id] = { ns: median(samples), min_ns: Math.min(prev.min_ns, r.min_ns), batch: prev.batch.concat(r.batch), samples, rounds: prev.rounds.concat(r.ns) };
    }
  }
  return into;
}

function recordPeer(results, section, name, peer) {
  const prev = results.peers[name];
  const status = prev && prev.status === 'ok' ? 'ok' : peer.status;
  results.peers[name] = { status, error: status === 'ok' ? undefined : peer.error, meta: peer.meta || prev?.meta };
  results.sources[name] ||= {};
  results.sources[name][section] = merge(results.sources[name][section] || {}, peer.results);
}

function recordOurs(results, section, ours) {
  results.sources.ours[section] = merge(results.sources.ours[section] || {}, ours.ours);
  results.sources.node[section] = merge(results.sources.node[section] || {}, ours.node);
  // A peer's figures measured from our side (the IPC cycle in alternating batches).
  for (const [name, figures] of Object.entries(ours.peers || {})) {
    results.sources[name] ||= {};
    results.sources[name][section] = merge(results.sources[name][section] || {}, figures);
  }
  for (const [name, ok] of ours.checks) results.checks.push({ section, name, ok });
}

function seconds(t0) {
  return `${((Date.now() - t0) / 1000).toFixed(1)} s`;
}

function cpuSection(addon, results) {
  const { runFloor } = require('./sycl-floor');
  const rounds = config.cpu.rounds;
  results.devices.cpu = deviceInfo(addon, config.cpu.filter);
  const { setupDpctl } = require('./dpctl-venv');
  const t = Date.now();
  const venv = setupDpctl(config.cpu.dpctl, log);
  if (venv.error) log(`bench: dpctl peer missing: ${venv.error}`);
  else log(`bench: dpctl peer ready (${seconds(t)})`);
  for (let round = 1; round <= rounds; round++) {
    let t0 = Date.now();
    recordOurs(results, 'cpu', runOursRound('cpu'));
    log(`bench: CPU ${config.cpu.filter} round ${round}/${rounds}: ours ${seconds(t0)}`);
    let peer;
    if (venv.error) {
      peer = { status: 'missing', error: venv.error };
    } else {
      t0 = Date.now();
      peer = runPeer(venv.python, 'dpctl_cpu.py', venv.env);
      log(`bench: CPU ${config.cpu.filter} round ${round}/${rounds}: dpctl ${seconds(t0)}${peer.status === 'ok' ? '' : ` (${peer.status}: ${peer.error})`}`);
    }
    recordPeer(results, 'cpu', 'dpctl', peer);
    t0 = Date.now();
    const floor = runFloor(config.timing, config.peerTimeoutS);
    log(`bench: CPU ${config.cpu.filter} round ${round}/${rounds}: SYCL floor in C++ ${seconds(t0)}${floor.status === 'ok' ? '' : ` (${floor.status}: ${floor.error})`}`);
    recordPeer(results, 'cpu', 'floor', floor);
  }
  results.rows.push(...cpu.rows(config.cpu, config.latencyBelow));
}

function gpuSection(addon, results) {
  const rounds = config.gpu.rounds;
  results.devices.gpu = deviceInfo(addon, config.gpu.filter);
  const python = process.env.BENCH_PYTHON || 'python3';
  for (let round = 1; round <= rounds; round++) {
    let t0 = Date.now();
    recordOurs(results, 'gpu', runOursRound('gpu'));
    log(`bench: GPU ${config.gpu.filter} round ${round}/${rounds}: ours ${seconds(t0)}`);
    t0 = Date.now();
    const out = runPeer(python, 'cuda_gpu.py');
    const notes = [];
    for (const name of ['cupy', 'torch']) {
      const p = out.status === 'ok' ? out.peers[name] : out;
      if (p.status !== 'ok') notes.push(`${name} ${p.status}: ${p.error}`);
      recordPeer(results, 'gpu', name, p);
    }
    log(`bench: GPU ${config.gpu.filter} round ${round}/${rounds}: CuPy + PyTorch (${python}) ${seconds(t0)}${notes.length ? ` (${notes.join('; ')})` : ''}`);
  }
  results.rows.push(...gpu.rows(config.gpu));
}

// ---- evaluation and printing ----

function lookup(results, section, source, id) {
  if (!id) return null;
  const r = results.sources[source]?.[section]?.[id];
  return r && !r.error ? r : r ? { error: r.error } : null;
}

function fmtValue(metric, bytes, r) {
  if (!r) return '-';
  if (r.error) return 'error';
  if (metric === 'bw') return `${(bytes / r.ns).toFixed(2)} GB/s`;
  const us = r.ns / 1000;
  return `${us < 10 ? us.toFixed(3) : us < 1000 ? us.toFixed(1) : us.toFixed(0)} us`;
}

function fmtTarget(t) {
  if (!t) return '';
  const parts = [];
  if (t.gbps) parts.push(`>=${t.gbps} GB/s`);
  if (t.ratio) parts.push(`>=${t.ratio}x`);
  return parts.join(' & ');
}

function evaluate(results) {
  return results.rows.map((row) => {
    const bytes = row.bytes || null;
    const ours = lookup(results, row.section, 'ours', row.ours);
    const peer = lookup(results, row.section, row.peer.source, row.peer.id);
    const okOurs = ours && !ours.error;
    const okPeer = peer && !peer.error;
    const ratio = okOurs && okPeer ? peer.ns / ours.ns : null;
    const ourRounds = okOurs ? roundSpread(ours.rounds) : null;
    const peerRounds = okPeer ? roundSpread(peer.rounds) : null;
    const ourSpread = okOurs ? spread(ours.samples) : null;
    const peerSpread = okPeer ? spread(peer.samples) : null;
    const noisy = Math.max(ourSpread || 0, peerSpread || 0) > NOISY;
    const gbps = okOurs && row.metric === 'bw' ? bytes / ours.ns : null;
    const t = row.peer.target;
    let met = null;
    if (t) {
      if (!okOurs) met = false;
      else if (t.ratio && ratio === null) met = t.gbps ? (gbps >= t.gbps ? null : false) : null;
      else met = (!t.ratio || ratio >= t.ratio) && (!t.gbps || gbps >= t.gbps);
    }
    return {
      section: row.section,
      case: row.label,
      metric: row.metric,
      bytes: row.metric === 'bw' ? bytes : null,
      ours: ours ? { ...ours, gbps, us: ours.ns / 1000 } : null,
      ours_text: row.ours ? fmtValue(row.metric, bytes, ours) : '',
      peer_name: row.peer.name,
      peer_source: row.peer.source,
      peer: peer ? { ...peer, gbps: row.metric === 'bw' && okPeer ? bytes / peer.ns : null, us: okPeer ? peer.ns / 1000 : null } : null,
      peer_text: fmtValue(row.metric, bytes, peer),
      ratio,
      spread: { ours: ourSpread, peer: peerSpread },
      rounds: { ours: ourRounds, peer: peerRounds },
      noisy,
      target: t || null,
      target_text: fmtTarget(t),
      met,
    };
  });
}

/**
 * `{ n, spread }` of a case's per-round medians: how many rounds, and the largest minus the
 * smallest over their median (how far one run's rounds disagree), or null with one round.
 */
function roundSpread(rounds) {
  if (!rounds || rounds.length < 2) return rounds ? { n: rounds.length, spread: null } : null;
  const m = median(rounds);
  return { n: rounds.length, spread: m > 0 ? (Math.max(...rounds) - Math.min(...rounds)) / m : 0 };
}

function fmtRounds(r) {
  if (!r) return '-';
  return r.spread === null ? `${r.n}` : `${r.n} ${(r.spread * 100).toFixed(0)}%`;
}

function printTable(evaluated, results) {
  const header = ['case', 'ours', 'peer', 'peer name', 'ratio', 'target', 'met', 'rounds ours|peer'];
  const lines = evaluated.map((e) => [
    e.case, e.ours_text, e.peer_text, e.peer_name,
    e.ratio === null ? '-' : `${e.noisy ? '~' : ''}${e.ratio >= 100 ? e.ratio.toFixed(0) : e.ratio.toFixed(2)}x`,
    e.target_text,
    e.target ? (e.met === null ? 'n/a' : e.met ? 'yes' : 'NO') : '',
    e.ours || e.peer ? `${fmtRounds(e.rounds.ours)} | ${fmtRounds(e.rounds.peer)}` : '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const right = new Set([1, 2, 4]);
  const fmt = (cells) => cells.map((c, i) => (right.has(i) ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join(' | ').trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('-+-');
  let section = null;
  console.log('');
  console.log('ratio = peer time / our time (for bandwidth: ours / peer); > 1 means ours is faster.');
  console.log(`~ = noisy: the batches of one side spread by more than ${NOISY * 100}% of its median (interquartile range).`);
  console.log('Each figure is the median of every timed batch of every round; "rounds" gives how many rounds and the spread of');
  console.log('their medians (largest minus smallest, over the median), ours | the peer\'s. A target is met when the median meets it.');
  const load = results.machine.load;
  console.log(`load average ${load.start.map((x) => x.toFixed(2)).join(' ')} at the start, ${load.end.map((x) => x.toFixed(2)).join(' ')} at the end, on ${results.machine.cpus} CPUs.`);
  if (results.transparent_hugepages) console.log(`transparent huge pages: ${results.transparent_hugepages}`);
  evaluated.forEach((e, i) => {
    if (e.section !== section) {
      section = e.section;
      const dev = results.devices[section];
      console.log('');
      console.log(`${section.toUpperCase()}: ${dev ? `${dev.filter} ${dev.name || ''}` : ''}`);
      console.log(fmt(header));
      console.log(rule);
    }
    console.log(fmt(lines[i]));
  });
  console.log('');
  for (const [name, p] of Object.entries(results.peers)) {
    const meta = p.meta ? Object.entries(p.meta).map(([k, v]) => `${k} ${v}`).join(', ') : '';
    console.log(`peer ${name}: ${p.status}${p.error ? ` (${p.error})` : ''}${meta ? ` [${meta}]` : ''}`);
  }
  const failedChecks = results.checks.filter((c) => !c.ok);
  if (failedChecks.length) console.log(`WARNING: data checks failed: ${failedChecks.map((c) => c.name).join(', ')}`);
  const targeted = evaluated.filter((e) => e.target);
  const missed = targeted.filter((e) => e.met === false);
  const unknown = targeted.filter((e) => e.met === null);
  console.log(`targets: ${targeted.length - missed.length - unknown.length} met, ${missed.length} missed, ${unknown.length} not measurable (peer missing)`);
  for (const e of missed) {
    const gap = [];
    if (e.target.ratio && e.ratio !== null && e.ratio < e.target.ratio) gap.push(`ratio ${e.ratio.toFixed(2)}x < ${e.target.ratio}x`);
    if (e.target.gbps && e.ours?.gbps !== null && e.ours?.gbps < e.target.gbps) gap.push(`${e.ours.gbps.toFixed(2)} GB/s < ${e.target.gbps} GB/s`);
    if (!e.ours || e.ours.error) gap.push(`ours failed: ${e.ours?.error || 'not measured'}`);
    console.log(`  missed: [${e.section}] ${e.case} vs ${e.peer_name}: ${gap.join(', ')}`);
  }
  return missed.length;
}

function readFirstLine(file) {
  try {
    return fs.readFileSync(file, 'utf8').split('\n')[0];
  } catch {
    return null;
  }
}

function gitInfo() {
  const r = spawnSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  if (r.status !== 0) return null;
  const s = spawnSync('git', ['-C', root, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' });
  return { commit: r.stdout.trim(), dirty: s.status === 0 && s.stdout.trim().length > 0 };
}

function main() {
  const addon = loadAddon();
  const wanted = process.env.BENCH_SECTIONS ? process.env.BENCH_SECTIONS.split(',').map((s) => s.trim()) : ['cpu', 'gpu'];
  const results = {
    tool: 'dpctl-memory bench',
    date: new Date().toISOString(),
    host: os.hostname(),
    machine: { cpus: os.cpus().length, cpu_model: os.cpus()[0]?.model, memory_gib: +(os.totalmem() / 2 ** 30).toFixed(1), platform: `${process.platform}-${process.arch}`, node: process.version, load: { start: os.loadavg() } },
    git: gitInfo(),
    // Page pinning (registerHost, cudaHostRegister) costs per page: huge pages change it.
    transparent_hugepages: readFirstLine('/sys/kernel/mm/transparent_hugepage/enabled'),
    config,
    devices: {},
    peers: {},
    sources: { ours: {}, node: {} },
    checks: [],
    rows: [],
  };
  const sections = [];
  if (wanted.includes('cpu')) {
    if (hasDevice(addon, config.cpu.filter)) sections.push(['cpu', cpuSection]);
    else log(`bench: no ${config.cpu.filter} device, CPU section skipped (${addon.getRuntimeDiagnostics().join('; ')})`);
  }
  if (wanted.includes('gpu')) {
    if (hasDevice(addon, config.gpu.filter)) sections.push(['gpu', gpuSection]);
    else log(`bench: no ${config.gpu.filter} device, GPU section skipped`);
  }
  if (!sections.length) {
    console.error('bench: no device to benchmark');
    process.exit(1);
  }
  for (const [, fn] of sections) fn(addon, results);

  results.machine.load.end = os.loadavg();
  const evaluated = evaluate(results);
  const missed = printTable(evaluated, results);
  const out = { ...results, table: evaluated };
  delete out.rows;
  const stamp = results.date.replace(/:/g, '-').replace(/\..*$/, '');
  const file = path.join(__dirname, `results-${results.host}-${stamp}.json`);
  const text = `${JSON.stringify(out, null, 1)}\n`;
  fs.writeFileSync(file, text);
  console.log(`results: ${path.relative(process.cwd(), file)}`);
  if (process.env.BENCH_OUT) {
    fs.mkdirSync(path.dirname(path.resolve(process.env.BENCH_OUT)), { recursive: true });
    fs.writeFileSync(process.env.BENCH_OUT, text);
    console.log(`results: ${process.env.BENCH_OUT}`);
  }
  if (process.env.BENCH_STRICT === '1' && missed > 0) process.exit(1);
}

if (require.main === module) main();

module.exports = { main, evaluate, printTable, merge };
