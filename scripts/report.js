#!/usr/bin/env node
'use strict';
// dpctl-memory-report: a snapshot (JSON.stringify(memorySnapshot()) in a file) as one
// self-contained HTML page, and optionally as a Chrome trace (counter tracks that
// Perfetto and chrome://tracing open).
//
//   npx dpctl-memory-report snapshot.json -o report.html [--chrome-trace trace.json]
//
// The page needs no network and no script: the charts are SVG drawn here. It shows each
// device's memory over time (allocated and reserved bytes per USM kind, rebuilt from the
// recorded events), the peak and what was live at it, the top allocation sites by bytes,
// the pool's cached blocks and the statistics.
const fs = require('node:fs');
const path = require('node:path');

const KINDS = ['device', 'host', 'shared'];
const COLORS = { device: '#d9480f', host: '#1971c2', shared: '#2f9e44' };
const CHART_WIDTH = 1100;
const CHART_HEIGHT = 260;
/** Points per drawn line at most: each is the maximum of its stretch of time. */
const BUCKETS = 1100;
const TOP_SITES = 15;

const USAGE = 'usage: dpctl-memory-report snapshot.json [-o report.html] [--chrome-trace trace.json] [--title text]\n';

/** Exits 2 with `message` and the usage on stderr. */
function usage(message) {
  process.stderr.write(`dpctl-memory-report: ${message}\n${USAGE}`);
  process.exit(2);
}

const HELP = `${USAGE}
Writes a snapshot (JSON.stringify(memorySnapshot()) in a file; - reads stdin) as one
self-contained HTML page (default report.html), and with --chrome-trace as a Chrome trace
for https://ui.perfetto.dev or chrome://tracing. A file that is not a well-formed snapshot
(a number where a number belongs, a known kind, ...) is refused with the field at fault.

  -o, --output FILE        the page
  --chrome-trace FILE      the trace
  --title TEXT             the page's title
  -h, --help               this text
`;

function parseArgs(argv) {
  const args = { input: undefined, output: undefined, chromeTrace: undefined, title: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === '-o' || arg === '--output') args.output = value();
    else if (arg === '--chrome-trace') args.chromeTrace = value();
    else if (arg === '--title') args.title = value();
    else if (arg === '-h' || arg === '--help') {
      process.stdout.write(HELP);
      process.exit(0);
    } else if (arg.startsWith('-') && arg !== '-') usage(`unknown option ${arg}`);
    else if (args.input === undefined) args.input = arg;
    else usage(`one snapshot at a time (got ${args.input} and ${arg})`);
  }
  if (args.input === undefined) usage('no snapshot given');
  if (args.output === undefined && args.chromeTrace === undefined) args.output = 'report.html';
  return args;
}

/** The snapshot in `text`, checked (`checkSnapshot`): a file that is not one says why. */
function readSnapshot(text, name) {
  let snapshot;
  try {
    snapshot = JSON.parse(text);
  } catch (error) {
    throw new Error(`${name} is not JSON: ${error.message}`);
  }
  return checkSnapshot(snapshot, name);
}

// A snapshot is what people attach to bug reports: the page and the trace are made from
// a file someone else wrote. Each field the report reads is checked to be what
// `memorySnapshot()` writes (a number where a number belongs, one of the known kinds and
// actions), and a file that differs is refused naming the field; the strings (device
// names, filter strings, stacks) are escaped wherever they are shown, and so is every
// other value, checked or not.
const KIND_NAMES = ['device', 'host', 'shared', 'unknown'];
const ACTIONS = ['alloc', 'free', 'release', 'trim', 'retry', 'oom'];
const FIGURES = ['allocatedBytes', 'activeBytes', 'requestedBytes', 'reservedBytes', 'allocation', 'segment'];
const COUNTERS = ['numDeviceAlloc', 'numDeviceFree', 'poolHits', 'poolMisses', 'poolEvictions', 'poolTrims', 'numAllocRetries', 'numOoms'];

/** A value as an error message shows it: its JSON, cut short (control characters escaped). */
function shown(value) {
  let text;
  try {
    text = JSON.stringify(value);
  } catch {
    text = undefined;
  }
  if (text === undefined) text = typeof value;
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * `snapshot` when it is a snapshot of the version this report reads, with every field the
 * report uses of the type `memorySnapshot()` gives it; else an Error that names the field
 * (`name`: what to call the snapshot).
 */
function checkSnapshot(snapshot, name = 'the snapshot') {
  if (snapshot === null || typeof snapshot !== 'object' || Array.isArray(snapshot) || snapshot.format !== 'dpctl-memory-snapshot') {
    throw new Error(`${name} is not a dpctl-memory snapshot (write one with JSON.stringify(memorySnapshot()))`);
  }
  if (snapshot.version !== 1) throw new Error(`${name} is a snapshot of version ${shown(snapshot.version)}; this report reads version 1`);
  // The field at fault is named as `${list}[${item}]${where}` inside a list (`list` null:
  // `where` alone), so that nothing is built per event unless one is wrong.
  let list = null;
  let item = 0;
  const fail = (where, what, value) => {
    const field = list === null ? where : `${list}[${item}]${where}`;
    throw new Error(`${name} is not a well-formed snapshot: ${field} must be ${what}, not ${shown(value)}`);
  };
  const object = (value, where) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) fail(where, 'an object', value);
    return value;
  };
  /** A finite number, at least 0 (sizes, counts, times). */
  // Up to 2^53: bytes and microseconds fit, and the charts' arithmetic stays finite.
  const amount = (value, where) => {
    if (typeof value !== 'number' || !(value >= 0 && value <= Number.MAX_SAFE_INTEGER)) fail(where, 'a number from 0 to 2^53', value);
  };
  const index = (value, where, below = Infinity) => {
    if (!Number.isSafeInteger(value) || value < 0 || value >= below) fail(where, below === Infinity ? 'an index (an integer, 0 or more)' : `an index below ${below}`, value);
  };
  const string = (value, where) => {
    if (typeof value !== 'string') fail(where, 'a string', value);
  };
  const oneOf = (names) => (value, where) => {
    if (!names.includes(value)) fail(where, `one of ${names.join(', ')}`, value);
  };
  const flag = (value, where) => {
    if (typeof value !== 'boolean') fail(where, 'true or false', value);
  };
  const kind = oneOf(KIND_NAMES);
  const action = oneOf(ACTIONS);
  amount(snapshot.epochMs, 'epochMs');
  amount(snapshot.timeUs, 'timeUs');
  if (!Number.isFinite(new Date(snapshot.epochMs + snapshot.timeUs / 1000).getTime())) fail('epochMs', 'a time', snapshot.epochMs);
  for (const field of ['devices', 'liveBlocks', 'cachedBlocks', 'events', 'stacks']) {
    if (!Array.isArray(snapshot[field])) throw new Error(`${name} has no ${field} list`);
  }
  if (snapshot.history !== undefined) {
    const h = object(snapshot.history, 'history');
    flag(h.enabled, 'history.enabled');
    flag(h.stacks, 'history.stacks');
    for (const n of ['maxEntries', 'dropped', 'stacksRefused']) amount(h[n], `history.${n}`);
    if (h.stacksUnread !== undefined) amount(h.stacksUnread, 'history.stacksUnread');
  }
  const { stacks, devices, liveBlocks, cachedBlocks, events } = snapshot;
  // A block's or event's device is one the snapshot lists (each device the report draws
  // costs a chart's series: an index per event would cost memory without bound).
  let listed = new Set();
  const device = (value, where) => value === null || listed.has(value) || fail(where, 'the index of a listed device', value);
  const stack = (value, where) => value === null || index(value, where, stacks.length);
  list = 'stacks';
  for (item = 0; item < stacks.length; item++) string(stacks[item], '');
  list = 'devices';
  for (item = 0; item < devices.length; item++) {
    const d = object(devices[item], '');
    index(d.index, '.index');
    amount(d.totalBytes, '.totalBytes');
    const stats = object(d.stats, '.stats');
    string(stats.filterString, '.stats.filterString');
    string(stats.name, '.stats.name');
    for (const k of ['all', ...KINDS]) {
      const figures = object(stats[k], `.stats.${k}`);
      for (const f of FIGURES) {
        const figure = object(figures[f], `.stats.${k}.${f}`);
        for (const n of ['current', 'peak', 'allocated', 'freed']) amount(figure[n], `.stats.${k}.${f}.${n}`);
      }
      for (const c of COUNTERS) amount(figures[c], `.stats.${k}.${c}`);
    }
  }
  listed = new Set(devices.map((d) => d.index));
  list = 'liveBlocks';
  for (item = 0; item < liveBlocks.length; item++) {
    const b = object(liveBlocks[item], '');
    string(b.address, '.address');
    amount(b.size, '.size');
    amount(b.requested, '.requested');
    kind(b.kind, '.kind');
    device(b.device, '.device');
    stack(b.stack, '.stack');
    if (b.timeUs !== null) amount(b.timeUs, '.timeUs');
  }
  list = 'cachedBlocks';
  for (item = 0; item < cachedBlocks.length; item++) {
    const b = object(cachedBlocks[item], '');
    string(b.address, '.address');
    amount(b.size, '.size');
    kind(b.kind, '.kind');
    device(b.device, '.device');
  }
  list = 'events';
  for (item = 0; item < events.length; item++) {
    const e = object(events[item], '');
    action(e.action, '.action');
    amount(e.timeUs, '.timeUs');
    device(e.device, '.device');
    kind(e.kind, '.kind');
    string(e.address, '.address');
    amount(e.size, '.size');
    amount(e.requested, '.requested');
    stack(e.stack, '.stack');
    if (e.fromCache !== undefined) flag(e.fromCache, '.fromCache');
    if (e.toCache !== undefined) flag(e.toCache, '.toCache');
    if (e.retried !== undefined) flag(e.retried, '.retried');
  }
  return snapshot;
}

const escapeHtml = (text) => String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit + 1 < units.length) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(2)} ${units[unit]}`;
}

const seconds = (us) => (us >= 1e6 ? `${(us / 1e6).toFixed(3)} s` : us >= 1e3 ? `${(us / 1e3).toFixed(2)} ms` : `${us.toFixed(0)} µs`);

/** The first frame of a stack, as a site's name. */
function siteName(stack) {
  if (stack === undefined) return '(no stack recorded)';
  const line = stack.split('\n').find((l) => l.trim().length > 0) ?? '';
  return line.trim().replace(/^at /, '') || '(empty stack)';
}

/** Each `device:kind`'s deltas of allocated and reserved bytes, event by event. */
function deltas(event) {
  switch (event.action) {
    case 'alloc':
      return [event.size, event.fromCache ? 0 : event.size];
    case 'free':
      return [-event.size, 0];
    case 'release':
      return [0, -event.size];
    default:
      return [0, 0];
  }
}

/**
 * Replays the events: per `device:kind` the allocated and reserved bytes over time
 * (starting from what the figures at the end imply, so memory allocated before the ring's
 * first event counts), and the peak of allocated bytes over all devices and kinds.
 */
function analyse(snapshot) {
  const events = snapshot.events;
  const series = new Map();
  const seriesOf = (device, kind) => {
    const key = `${device}:${kind}`;
    let s = series.get(key);
    if (s === undefined) {
      s = { key, device, kind, allocated: 0, reserved: 0, sumAllocated: 0, sumReserved: 0, points: [] };
      series.set(key, s);
    }
    return s;
  };
  for (const d of snapshot.devices) for (const kind of KINDS) seriesOf(d.index, kind);
  for (const e of events) {
    if (e.device === null || !KINDS.includes(e.kind)) continue;
    const [a, r] = deltas(e);
    const s = seriesOf(e.device, e.kind);
    s.sumAllocated += a;
    s.sumReserved += r;
  }
  let total = 0;
  for (const s of series.values()) {
    const d = snapshot.devices.find((x) => x.index === s.device);
    const end = d ? d.stats[s.kind] : undefined;
    s.allocated = Math.max(0, (end ? end.allocatedBytes.current : 0) - s.sumAllocated);
    s.reserved = Math.max(0, (end ? end.reservedBytes.current : 0) - s.sumReserved);
    s.start = { allocated: s.allocated, reserved: s.reserved };
    total += s.allocated;
  }
  const t0 = events.length > 0 ? events[0].timeUs : snapshot.timeUs;
  const t1 = Math.max(snapshot.timeUs, t0 + 1);
  const width = (t1 - t0) / BUCKETS;
  const bucketOf = (t) => Math.min(BUCKETS - 1, Math.max(0, Math.floor((t - t0) / width)));
  for (const s of series.values()) {
    // Per bucket: the maxima after its events, and the figures after its last one (-1: none).
    s.maxA = new Float64Array(BUCKETS).fill(-1);
    s.maxR = new Float64Array(BUCKETS).fill(-1);
    s.endA = new Float64Array(BUCKETS).fill(-1);
    s.endR = new Float64Array(BUCKETS).fill(-1);
  }
  let peak = { bytes: total, index: -1, timeUs: t0 };
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    if (e.device === null || !KINDS.includes(e.kind)) continue;
    const [a, r] = deltas(e);
    if (a === 0 && r === 0) continue;
    const s = series.get(`${e.device}:${e.kind}`);
    s.allocated += a;
    s.reserved += r;
    total += a;
    if (total > peak.bytes) peak = { bytes: total, index: i, timeUs: e.timeUs };
    const b = bucketOf(e.timeUs);
    if (s.allocated > s.maxA[b]) s.maxA[b] = s.allocated;
    if (s.reserved > s.maxR[b]) s.maxR[b] = s.reserved;
    s.endA[b] = s.allocated;
    s.endR[b] = s.reserved;
  }
  // Each bucket drawn at the most it held: what it started with or reached.
  for (const s of series.values()) {
    let a = s.start.allocated;
    let r = s.start.reserved;
    s.points = [];
    for (let b = 0; b < BUCKETS; b++) {
      s.points.push([t0 + b * width, Math.max(a, s.maxA[b]), Math.max(r, s.maxR[b])]);
      if (s.endA[b] >= 0) a = s.endA[b];
      if (s.endR[b] >= 0) r = s.endR[b];
    }
    s.points.push([t1, a, r]);
    delete s.maxA;
    delete s.maxR;
    delete s.endA;
    delete s.endR;
  }
  return { series: [...series.values()], peak, t0, t1 };
}

/** What was live at the peak: replayed up to it, and what the ring says was older. */
function liveAtPeak(snapshot, peak) {
  const events = snapshot.events;
  const live = new Map();
  for (let i = 0; i <= peak.index; i++) {
    const e = events[i];
    if (e.action === 'alloc') live.set(e.address, e);
    else if (e.action === 'free') live.delete(e.address);
  }
  // Allocations older than the ring that were still live at the peak: freed after it
  // without an alloc seen since, or live at the end without one.
  const allocatedAfter = new Set();
  for (let i = peak.index + 1; i < events.length; i++) {
    const e = events[i];
    if (e.action === 'alloc') allocatedAfter.add(e.address);
    else if (e.action === 'free' && !allocatedAfter.has(e.address) && !live.has(e.address)) live.set(e.address, { ...e, older: true });
  }
  for (const b of snapshot.liveBlocks) {
    if (!live.has(b.address) && !allocatedAfter.has(b.address) && (b.timeUs === null || b.timeUs <= peak.timeUs)) {
      live.set(b.address, { ...b, older: b.timeUs === null });
    }
  }
  return [...live.values()];
}

/** Blocks grouped by their allocating call: `[{ stack, bytes, count }]`, most bytes first. */
function bySite(blocks, sizeOf = (b) => b.size) {
  const sites = new Map();
  for (const b of blocks) {
    const key = b.stack ?? -1;
    const site = sites.get(key) ?? { stack: key, bytes: 0, count: 0 };
    site.bytes += sizeOf(b);
    site.count += 1;
    sites.set(key, site);
  }
  return [...sites.values()].sort((a, b) => b.bytes - a.bytes);
}

function deviceName(snapshot, index) {
  const d = snapshot.devices.find((x) => x.index === index);
  return d ? `${d.stats.filterString} (${d.stats.name})` : `device ${index}`;
}

/** One device's chart: allocated (solid) and reserved (dashed) bytes of each kind. */
function chart(snapshot, analysis, device) {
  const lines = analysis.series.filter((s) => s.device === device && s.points.some((p) => p[1] > 0 || p[2] > 0));
  const max = Math.max(1, ...lines.flatMap((s) => s.points.map((p) => Math.max(p[1], p[2]))));
  const left = 80;
  const top = 10;
  const w = CHART_WIDTH - left - 10;
  const h = CHART_HEIGHT - top - 30;
  const x = (t) => left + ((t - analysis.t0) / (analysis.t1 - analysis.t0)) * w;
  const y = (v) => top + h - (v / max) * h;
  const out = [`<svg class="chart" width="${CHART_WIDTH}" height="${CHART_HEIGHT}" viewBox="0 0 ${CHART_WIDTH} ${CHART_HEIGHT}" role="img" aria-label="memory over time on ${escapeHtml(deviceName(snapshot, device))}">`];
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    out.push(`<line x1="${left}" x2="${left + w}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" class="grid"/>`);
    out.push(`<text x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" class="axis" text-anchor="end">${escapeHtml(bytes(Math.round(v)))}</text>`);
  }
  for (let i = 0; i <= 5; i++) {
    const t = analysis.t0 + ((analysis.t1 - analysis.t0) * i) / 5;
    out.push(`<text x="${x(t).toFixed(1)}" y="${top + h + 18}" class="axis" text-anchor="${i === 0 ? 'start' : i === 5 ? 'end' : 'middle'}">${escapeHtml(seconds(t - analysis.t0))}</text>`);
  }
  for (const s of lines) {
    for (const [field, dash] of [[2, ' stroke-dasharray="5 3"'], [1, '']]) {
      let d = '';
      let previous;
      for (const p of s.points) {
        const px = x(p[0]).toFixed(1);
        const py = y(p[field]).toFixed(1);
        d += previous === undefined ? `M${px},${py}` : `H${px}V${py}`;
        previous = py;
      }
      const what = field === 1 ? 'allocated' : 'reserved';
      out.push(`<path d="${d}" fill="none" stroke="${COLORS[s.kind]}" stroke-width="${field === 1 ? 2 : 1.2}"${dash}><title>${escapeHtml(s.kind)} ${what}</title></path>`);
    }
  }
  out.push('</svg>');
  const legend = lines.map((s) => `<span class="key" style="--c:${COLORS[s.kind]}">${escapeHtml(s.kind)}</span>`).join(' ');
  return { svg: out.join(''), legend, x, y, max };
}

/** Markup made here, which `table` puts in its cell as it is. */
class Html {
  constructor(text) {
    this.text = text;
  }
}

/** A table; each cell is text (escaped) or `Html`. */
function table(headers, rows) {
  const head = headers.map((h) => `<th>${escapeHtml(h)}</th>`).join('');
  const cell = (c) => `<td>${c instanceof Html ? c.text : escapeHtml(c)}</td>`;
  const body = rows.map((r) => `<tr>${r.map(cell).join('')}</tr>`).join('\n');
  return `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function sitesTable(snapshot, sites, total) {
  const rows = sites.slice(0, TOP_SITES).map((site) => {
    const stack = site.stack >= 0 ? snapshot.stacks[site.stack] : undefined;
    const share = total > 0 ? ((100 * site.bytes) / total).toFixed(1) : '0.0';
    const name = siteName(stack);
    const where = stack === undefined ? name : new Html(`<details><summary><code>${escapeHtml(name)}</code></summary><pre>${escapeHtml(stack)}</pre></details>`);
    return [bytes(site.bytes), `${share} %`, site.count, where];
  });
  return table(['bytes', 'share', 'blocks', 'allocated at'], rows);
}

function statsTable(snapshot) {
  const rows = [];
  for (const d of snapshot.devices) {
    for (const kind of ['all', ...KINDS]) {
      const s = d.stats[kind];
      if (kind !== 'all' && s.allocation.allocated === 0) continue;
      rows.push([
        d.stats.filterString,
        kind,
        bytes(s.allocatedBytes.current),
        bytes(s.allocatedBytes.peak),
        bytes(s.reservedBytes.current),
        bytes(s.reservedBytes.peak),
        s.allocation.current,
        s.allocation.allocated,
        `${s.poolHits} / ${s.poolMisses}`,
        s.poolEvictions,
        s.poolTrims,
        s.numAllocRetries,
        s.numOoms,
      ]);
    }
  }
  return table(['device', 'kind', 'allocated', 'peak', 'reserved', 'peak', 'live', 'allocations', 'pool hits / misses', 'evictions', 'trims', 'retries', 'OOMs'], rows);
}

function cachedTable(snapshot) {
  const groups = new Map();
  for (const b of snapshot.cachedBlocks) {
    const key = `${b.device}:${b.kind}:${b.size}`;
    const g = groups.get(key) ?? { device: b.device, kind: b.kind, size: b.size, count: 0 };
    g.count += 1;
    groups.set(key, g);
  }
  const rows = [...groups.values()]
    .sort((a, b) => b.size * b.count - a.size * a.count)
    .map((g) => [deviceName(snapshot, g.device), g.kind, bytes(g.size), g.count, bytes(g.size * g.count)]);
  const total = snapshot.cachedBlocks.reduce((sum, b) => sum + b.size, 0);
  return { html: rows.length > 0 ? table(['device', 'kind', 'block size', 'blocks', 'bytes'], rows) : '<p>The pool holds no cached block.</p>', total };
}

const STYLE = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #212529; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #dee2e6; padding-bottom: 4px; }
.meta { color: #6c757d; margin-bottom: 16px; }
.chart .grid { stroke: #e9ecef; } .chart .axis { font-size: 11px; fill: #6c757d; }
.key { display: inline-block; margin-right: 14px; } .key::before { content: ""; display: inline-block; width: 14px; height: 3px; background: var(--c); margin-right: 5px; vertical-align: middle; }
.peak { fill: #c92a2a; } .peak-label { font-size: 12px; fill: #c92a2a; font-weight: 600; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; } th, td { padding: 3px 10px; border-bottom: 1px solid #e9ecef; text-align: left; vertical-align: top; }
th { background: #f8f9fa; } td:first-child { white-space: nowrap; }
code, pre { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; } pre { margin: 4px 0; white-space: pre-wrap; color: #495057; }
#peak-summary { font-size: 15px; } .note { color: #6c757d; font-size: 12px; }
`;

/** The report page (HTML text) of a snapshot (checked: see `checkSnapshot`). */
function renderHtml(snapshot, options = {}) {
  return page(checkSnapshot(snapshot), options);
}

/** The page of a checked snapshot: every value from it is escaped where it is shown. */
function page(snapshot, options) {
  const analysis = analyse(snapshot);
  const { peak } = analysis;
  const taken = new Date(snapshot.epochMs + snapshot.timeUs / 1000);
  const title = options.title ?? 'dpctl-memory report';
  const parts = [];
  parts.push(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>`);
  parts.push(`<h1>${escapeHtml(title)}</h1>`);
  const h = snapshot.history;
  const dropped = h && h.dropped ? ` (${escapeHtml(h.dropped)} older ones dropped from the ring)` : '';
  const recorded = h && h.enabled ? `, stacks ${h.stacks ? 'on' : 'off'}` : ', no history recorded';
  parts.push(
    `<div class="meta">Snapshot taken ${escapeHtml(taken.toISOString())}; ${escapeHtml(snapshot.events.length)} events recorded${dropped}` +
      `${recorded}; ${escapeHtml(snapshot.liveBlocks.length)} live blocks, ${escapeHtml(snapshot.cachedBlocks.length)} cached.</div>`,
  );
  const peakLive = liveAtPeak(snapshot, peak);
  const peakBytes = peakLive.reduce((sum, b) => sum + b.size, 0);
  parts.push(
    `<p id="peak-summary" data-peak-bytes="${escapeHtml(peak.bytes)}" data-peak-time-us="${escapeHtml(peak.timeUs)}">Peak: <strong>${escapeHtml(bytes(peak.bytes))}</strong> allocated (all devices and kinds) at <strong>${escapeHtml(seconds(peak.timeUs - analysis.t0))}</strong>, in ${escapeHtml(peakLive.length)} live blocks.</p>`,
  );
  parts.push('<h2>Memory over time</h2><p class="note">Solid: allocated bytes (blocks held by live allocations); dashed: reserved bytes (held from the runtime: live and cached blocks). Each point is the maximum of its stretch of time.</p>');
  for (const d of snapshot.devices) {
    const c = chart(snapshot, analysis, d.index);
    parts.push(`<h3>${escapeHtml(deviceName(snapshot, d.index))}</h3><div>${c.legend}</div>`);
    let svg = c.svg;
    // The peak, marked on the chart of every device that held memory at it.
    const held = peakLive.filter((b) => b.device === d.index).reduce((sum, b) => sum + b.size, 0);
    if (held > 0 && peak.index >= 0) {
      const px = c.x(peak.timeUs).toFixed(1);
      const marker = `<g id="peak-${escapeHtml(d.index)}" class="peak-marker"><line x1="${px}" x2="${px}" y1="10" y2="${CHART_HEIGHT - 30}" stroke="#c92a2a" stroke-dasharray="2 2"/><text x="${Number(px) + (Number(px) > CHART_WIDTH / 2 ? -6 : 6)}" y="22" class="peak-label" text-anchor="${Number(px) > CHART_WIDTH / 2 ? 'end' : 'start'}">peak ${escapeHtml(bytes(peak.bytes))} (${escapeHtml(bytes(held))} here)</text></g>`;
      svg = svg.replace('</svg>', `${marker}</svg>`);
    }
    parts.push(svg);
  }
  parts.push(`<h2>Live at the peak, by allocating call</h2><p class="note">${escapeHtml(bytes(peakBytes))} in ${escapeHtml(peakLive.length)} blocks${peakLive.some((b) => b.older) ? '; blocks allocated before the recording have no stack' : ''}.</p>`);
  parts.push(sitesTable(snapshot, bySite(peakLive), peakBytes));
  const allocs = snapshot.events.filter((e) => e.action === 'alloc');
  const allocBytes = allocs.reduce((sum, e) => sum + e.size, 0);
  parts.push(`<h2>Top allocation sites by bytes</h2><p class="note">Every recorded allocation: ${escapeHtml(bytes(allocBytes))} in ${escapeHtml(allocs.length)} allocations.</p>`);
  parts.push(sitesTable(snapshot, bySite(allocs), allocBytes));
  const liveNow = snapshot.liveBlocks.reduce((sum, b) => sum + b.size, 0);
  parts.push(`<h2>Live now, by allocating call</h2><p class="note">${escapeHtml(bytes(liveNow))} in ${escapeHtml(snapshot.liveBlocks.length)} blocks.</p>`);
  parts.push(sitesTable(snapshot, bySite(snapshot.liveBlocks), liveNow));
  const cached = cachedTable(snapshot);
  parts.push(`<h2>The pool's cached blocks</h2><p class="note">${escapeHtml(bytes(cached.total))} in ${escapeHtml(snapshot.cachedBlocks.length)} blocks: freed memory kept for reuse (poolTrim() gives it back).</p>${cached.html}`);
  parts.push(`<h2>Statistics</h2>${statsTable(snapshot)}`);
  const ooms = snapshot.events.filter((e) => e.action === 'oom');
  if (ooms.length > 0) {
    const rows = ooms.map((e) => [seconds(e.timeUs - analysis.t0), deviceName(snapshot, e.device), e.kind, bytes(e.size), e.retried ? 'yes' : 'no']);
    parts.push(`<h2>Refused allocations</h2>${table(['at', 'device', 'kind', 'asked', 'after a trim and retry'], rows)}`);
  }
  parts.push('</body></html>\n');
  return parts.join('\n');
}

/**
 * The Chrome trace event format (JSON object form) of a snapshot (checked: see
 * `checkSnapshot`): one counter track per device and kind with its allocated and reserved
 * bytes at every event, and an instant event per refusal. Perfetto and chrome://tracing
 * open it.
 */
function chromeTrace(snapshot) {
  return trace(checkSnapshot(snapshot));
}

/** The trace of a checked snapshot: each event an object, written by JSON.stringify. */
function trace(snapshot) {
  const analysis = analyse(snapshot);
  const out = [];
  for (const d of snapshot.devices) {
    out.push(JSON.stringify({ name: 'process_name', ph: 'M', pid: d.index, tid: 0, args: { name: `${d.stats.filterString} (${d.stats.name})` } }));
  }
  const state = new Map(analysis.series.map((s) => [s.key, { allocated: s.start.allocated, reserved: s.start.reserved }]));
  const counter = (device, kind, ts, v) => JSON.stringify({ name: `${kind} memory`, ph: 'C', ts, pid: device, tid: 0, args: { allocated: v.allocated, reserved: v.reserved } });
  for (const s of analysis.series) out.push(counter(s.device, s.kind, analysis.t0, state.get(s.key)));
  for (const e of snapshot.events) {
    if (e.action === 'oom') {
      out.push(JSON.stringify({ name: `out of memory: ${e.size} bytes of ${e.kind}`, ph: 'i', s: 'p', ts: e.timeUs, pid: e.device ?? 0, tid: 0 }));
      continue;
    }
    if (e.device === null || !KINDS.includes(e.kind)) continue;
    const [a, r] = deltas(e);
    if (a === 0 && r === 0) continue;
    const v = state.get(`${e.device}:${e.kind}`);
    v.allocated += a;
    v.reserved += r;
    out.push(counter(e.device, e.kind, e.timeUs, v));
  }
  // One event a line (a trace of 10^6 events is not one object held whole).
  return `{"displayTimeUnit":"ms","traceEvents":[\n${out.join(',\n')}\n]}\n`;
}

function main(argv) {
  const args = parseArgs(argv);
  const text = args.input === '-' ? fs.readFileSync(0, 'utf8') : fs.readFileSync(args.input, 'utf8');
  const snapshot = readSnapshot(text, args.input === '-' ? 'the input' : args.input);
  if (args.output !== undefined) {
    fs.writeFileSync(args.output, page(snapshot, { title: args.title }));
    process.stdout.write(`dpctl-memory-report: wrote ${path.resolve(args.output)}\n`);
  }
  if (args.chromeTrace !== undefined) {
    fs.writeFileSync(args.chromeTrace, trace(snapshot));
    process.stdout.write(`dpctl-memory-report: wrote ${path.resolve(args.chromeTrace)} (open it in https://ui.perfetto.dev or chrome://tracing)\n`);
  }
}

if (require.main === module) {
  try {
    main(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`dpctl-memory-report: ${error.message}\n`);
    process.exit(1);
  }
}

module.exports = { readSnapshot, checkSnapshot, renderHtml, chromeTrace, analyse };
