// Timing and formatting shared by the benchmark's sections. The Python peers use the same
// algorithm (bench/peers/common.py).
'use strict';

const KiB = 1024;
const MiB = 1024 * KiB;

function sizeLabel(n) {
  if (n % MiB === 0) return `${n / MiB}MiB`;
  if (n % KiB === 0) return `${n / KiB}KiB`;
  return `${n}B`;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function quantile(sorted, q) {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** Interquartile range over the median: how much the batches of a case disagree. */
function spread(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const m = quantile(s, 0.5);
  return m > 0 ? (quantile(s, 0.75) - quantile(s, 0.25)) / m : 0;
}

function batch(fn, n) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  return Number(process.hrtime.bigint() - t0);
}

/**
 * Median per-call time in ns of `repeats` timed batches of `fn`, after `warmupCalls` calls,
 * a calibration that sizes the batch to about `batchTargetMs`, and `warmupBatches` batches.
 */
function measure(fn, timing) {
  for (let i = 0; i < timing.warmupCalls; i++) fn();
  const target = timing.batchTargetMs * 1e6;
  let n = 1;
  for (;;) {
    const elapsed = Math.max(batch(fn, n), 1);
    if (elapsed >= target || n >= timing.maxBatch) break;
    n = Math.min(timing.maxBatch, Math.max(n + 1, Math.min(n * 100, Math.ceil((n * target / elapsed) * 1.1))));
  }
  for (let i = 0; i < timing.warmupBatches; i++) batch(fn, n);
  const samples = [];
  for (let i = 0; i < timing.repeats; i++) samples.push(batch(fn, n) / n);
  return { ns: median(samples), min_ns: Math.min(...samples), batch: n, samples };
}

/** Runs `fn`; on failure records the error under `id` instead of stopping the section. */
function runCase(results, id, fn, timing) {
  try {
    results[id] = measure(fn, timing);
  } catch (err) {
    results[id] = { error: `${err.code ? `${err.code}: ` : ''}${err.message}` };
  }
}

/** What every section measures with: a queue on its device, the classes, result maps. */
function sectionContext(addon, cfg, timing) {
  const { SyclQueue, MemoryUSMDevice, MemoryUSMHost, MemoryUSMShared } = addon;
  const q = new SyclQueue(cfg.filter);
  const ours = {};
  return {
    q,
    opts: { queue: q },
    classes: { device: MemoryUSMDevice, host: MemoryUSMHost, shared: MemoryUSMShared },
    MemoryUSMDevice,
    MemoryUSMHost,
    MemoryUSMShared,
    ours,
    node: {},
    checks: [],
    run: (id, fn) => runCase(ours, id, fn, timing),
  };
}

/** A plain JS class with a private field and a getter: the floor a getter is held to. */
class PlainGetter {
  #value = 4096;
  get value() {
    return this.#value;
  }
}

/**
 * Getter reads on a host memory object (`buffer` after its first read) and, as the
 * node peer, a plain JS class getter. Each result is consumed so no read is dead code.
 */
function runGetters(addon, opts, run, node, timing) {
  const m = new addon.MemoryUSMHost(4096, opts);
  let sink = 0;
  try {
    m.buffer; // eslint-disable-line no-unused-expressions
    run('getter.nbytes', () => { sink += m.nbytes; });
    run('getter.pointer', () => { sink += m.pointer === 0n ? 1 : 0; });
    run('getter.buffer', () => { sink += m.buffer === null ? 1 : 0; });
    const plain = new PlainGetter();
    runCase(node, 'getter.plain', () => { sink += plain.value; }, timing);
  } finally {
    m.free();
  }
  return sink;
}

/** The rows of `runGetters`: within 2x of a plain JS getter (ratio >= 0.5). */
function getterRows() {
  const plain = { source: 'node', id: 'getter.plain', name: 'plain JS class getter', target: { ratio: 0.5 } };
  return ['nbytes', 'pointer', 'buffer'].map((name) => ({ label: `getter: ${name}`, ours: `getter.${name}`, metric: 'time', peer: plain }));
}

/** What a child of the bench prints before its one line of JSON (peers/common.py, round.js). */
const RESULT_MARKER = '@@BENCH-JSON@@';

/**
 * The JSON that a child run by spawnSync (output as utf8) printed after RESULT_MARKER, or
 * `{ status: 'missing' | 'error', error }` naming the child as `what`.
 */
function childResult(r, what) {
  if (r.error) return { status: 'missing', error: `${what}: ${r.error.message}` };
  const line = (r.stdout || '').split('\n').find((l) => l.startsWith(RESULT_MARKER));
  if (!line) {
    const tail = `${r.stdout || ''}${r.stderr || ''}`.trim().split('\n').slice(-5).join(' | ');
    return { status: 'error', error: `${what} exited ${r.status ?? r.signal} without results: ${tail}` };
  }
  try {
    return JSON.parse(line.slice(RESULT_MARKER.length));
  } catch (err) {
    return { status: 'error', error: `${what} printed bad JSON: ${err.message}` };
  }
}

/** The next message of `worker`, or its error. */
function answer(worker) {
  return new Promise((resolve, reject) => {
    const fail = (error) => {
      worker.off('message', done);
      reject(error);
    };
    const done = (value) => {
      worker.off('error', fail);
      resolve(value);
    };
    worker.once('message', done);
    worker.once('error', fail);
  });
}

module.exports = { KiB, MiB, sizeLabel, median, spread, measure, runCase, sectionContext, runGetters, getterRows, RESULT_MARKER, childResult, answer };
