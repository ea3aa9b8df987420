// The report (scripts/report.js) reads a snapshot someone else wrote (snapshots are what
// people attach to bug reports): markup, quotes, `</script>` and attribute breakers
// planted in every field of a snapshot never reach the page as markup or the trace as
// anything but data. A field that must be a number (or a kind, an action, a flag) and is
// not is refused, naming the field; a string field (device names, stacks, addresses) is
// shown escaped.
import test from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { addon, getDevices } from './helpers/addon.mjs';

const require = createRequire(import.meta.url);
const { renderHtml, chromeTrace, checkSnapshot } = require('../scripts/report.js');
const REPORT = fileURLToPath(new URL('../scripts/report.js', import.meta.url));

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dpctl-memory-report-hardening-'));
test.after.always(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** What is planted: a tag with a handler, a script end, quotes of both kinds and attribute breakers. */
const PAYLOAD = `"'><img src=x onerror=alert(1)></script><script>alert(2)</script><svg onload=alert(3)> onmouseover="alert(4)" x='1' &amp;`;

const stats = (allocated, reserved) => {
  const figure = (current) => ({ current, peak: current, allocated: current, freed: 0 });
  const kind = (a, r) => ({ allocatedBytes: figure(a), activeBytes: figure(a), requestedBytes: figure(a), reservedBytes: figure(r), allocation: figure(a > 0 ? 1 : 0), segment: figure(r > 0 ? 1 : 0), numDeviceAlloc: 1, numDeviceFree: 1, poolHits: 1, poolMisses: 1, poolEvictions: 1, poolTrims: 1, numAllocRetries: 1, numOoms: 1 });
  return { filterString: 'fake:gpu:0', name: 'Fake', all: kind(allocated, reserved), device: kind(allocated, reserved), host: kind(10, 20), shared: kind(10, 20) };
};
const event = (action, timeUs, address, size, extra = {}) => ({ action, timeUs, device: 0, kind: 'device', address, size, requested: size, stack: null, ...extra });

/** A snapshot whose every field the page or the trace shows: a peak, a cached block, a refusal, dropped events. */
function snapshot() {
  return {
    format: 'dpctl-memory-snapshot',
    version: 1,
    epochMs: 1_700_000_000_000,
    timeUs: 100,
    devices: [{ index: 0, totalBytes: 1 << 30, stats: stats(50, 300) }],
    liveBlocks: [{ address: '0x3', size: 50, requested: 50, kind: 'device', device: 0, stack: 1, timeUs: 50 }],
    cachedBlocks: [{ address: '0x2', size: 250, kind: 'device', device: 0 }],
    history: { enabled: true, maxEntries: 10, stacks: true, dropped: 2, stacksRefused: 0, stacksUnread: 0 },
    stacks: ['    at big (app.js:1:1)', '    at small (app.js:2:1)'],
    events: [
      event('alloc', 10, '0x1', 50, { stack: 1, fromCache: false }),
      event('alloc', 30, '0x2', 250, { stack: 0, fromCache: false }),
      event('free', 35, '0x1', 50, { stack: 1, toCache: false }),
      event('release', 35, '0x1', 50),
      event('retry', 36, '0x0', 4096),
      event('oom', 37, '0x0', 4096, { retried: true }),
      event('trim', 38, '0x0', 0, { device: null, kind: 'unknown' }),
      event('free', 45, '0x2', 250, { stack: 0, toCache: true }),
      event('alloc', 50, '0x3', 50, { stack: 1, fromCache: false }),
    ],
  };
}

/** Every leaf of `value`: [path (as the report names it), the path's keys]. */
function leaves(value, at = '', keys = []) {
  if (value === null || typeof value !== 'object') return [[at, keys]];
  const entries = Array.isArray(value) ? value.map((v, i) => [`${at}[${i}]`, i, v]) : Object.entries(value).map(([k, v]) => [at ? `${at}.${k}` : k, k, v]);
  return entries.flatMap(([p, k, v]) => leaves(v, p, [...keys, k]));
}

function planted(keys, replace) {
  const s = snapshot();
  let o = s;
  for (const k of keys.slice(0, -1)) o = o[k];
  const last = keys.at(-1);
  o[last] = replace(o[last]);
  return s;
}

/** String fields: shown, escaped. Every other field is one the report checks. */
const isStringField = (p) => /(^stacks\[\d+\]$)|(\.address$)|(\.filterString$)|(\.name$)/.test(p);

const TAGS = new Set(['html', 'head', 'meta', 'title', 'style', 'body', 'h1', 'h2', 'h3', 'div', 'p', 'strong', 'svg', 'line', 'text', 'path', 'g', 'span', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'details', 'summary', 'code', 'pre']);
const ATTRIBUTES = new Set(['lang', 'charset', 'class', 'id', 'style', 'width', 'height', 'viewbox', 'role', 'aria-label', 'x', 'y', 'x1', 'x2', 'y1', 'y2', 'd', 'fill', 'stroke', 'stroke-width', 'stroke-dasharray', 'text-anchor', 'data-peak-bytes', 'data-peak-time-us']);

/**
 * The page's tags, parsed: each `<name attr="value" ...>` or `</name>`, every attribute
 * quoted with `"` and its value free of `"` and `<`; text between tags free of `<`. Throws
 * on anything else, and on a tag or attribute the report does not write.
 */
function parseTags(html) {
  const tags = [];
  let at = 0;
  const doctype = '<!doctype html>';
  if (!html.startsWith(doctype)) throw new Error('no doctype');
  at = doctype.length;
  const tag = /<(\/?)([a-z][a-z0-9]*)((?:\s+[a-z][a-z0-9-]*="[^"<]*")*)\s*(\/?)>/giy;
  while (at < html.length) {
    const next = html.indexOf('<', at);
    if (next < 0) break;
    const text = html.slice(at, next);
    if (/[<>]/.test(text)) throw new Error(`a raw < or > in text: ${JSON.stringify(text.slice(0, 80))}`);
    tag.lastIndex = next;
    const m = tag.exec(html);
    if (m === null) throw new Error(`not a tag the report writes at ${next}: ${JSON.stringify(html.slice(next, next + 80))}`);
    const name = m[2].toLowerCase();
    if (!TAGS.has(name)) throw new Error(`a <${name}> tag`);
    const attributes = [...m[3].matchAll(/([a-z][a-z0-9-]*)="([^"<]*)"/gi)].map((a) => [a[1].toLowerCase(), a[2]]);
    for (const [attribute] of attributes) if (!ATTRIBUTES.has(attribute)) throw new Error(`an attribute ${attribute} on <${name}>`);
    tags.push({ name, closing: m[1] === '/', attributes });
    at = tag.lastIndex;
  }
  if (/[<>]/.test(html.slice(at))) throw new Error('a raw < or > after the last tag');
  return tags;
}

/** `{ result }` of `fn()`, or `{ error }`. */
function outcome(fn) {
  try {
    return { result: fn() };
  } catch (error) {
    return { error };
  }
}

/** The page holds no markup of the payload: parsed, nothing raw, and the payload is there escaped where it is shown. */
function assertInert(t, html, where) {
  t.notThrows(() => parseTags(html), where);
  for (const raw of ['<img', '<svg onload', '</script>', '<script', 'onmouseover="alert', "x='1'"]) t.false(html.includes(raw), `${where}: ${raw} raw`);
}

test('the page shows every string field of a snapshot escaped, and the trace carries it as plain data', (t) => {
  assertInert(t, renderHtml(snapshot()), 'the snapshot as it is');
  const fields = leaves(snapshot()).filter(([p]) => isStringField(p));
  t.true(fields.length >= 8, fields.map(([p]) => p).join(', '));
  const escaped = PAYLOAD.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
  for (const [p, keys] of fields) {
    const s = planted(keys, (v) => `${v}${PAYLOAD}`);
    const html = renderHtml(s);
    assertInert(t, html, p);
    if (/filterString|name$|^stacks/.test(p)) t.true(html.includes(escaped), `${p} is shown, escaped`);
    const trace = JSON.parse(chromeTrace(s));
    t.true(Array.isArray(trace.traceEvents), p);
    if (/filterString|name$/.test(p)) t.true(trace.traceEvents.some((e) => e.ph === 'M' && e.args.name.includes(PAYLOAD)), `${p} is in the trace as it was`);
  }
  // The title (the command's --title) too.
  assertInert(t, renderHtml(snapshot(), { title: PAYLOAD }), 'the title');
});

test('a snapshot with markup, a quote or a non-number where a number, kind, action or flag belongs is refused, naming the field', (t) => {
  const fields = leaves(snapshot()).filter(([p]) => !isStringField(p));
  t.true(fields.length > 100, `${fields.length} fields`);
  for (const [p, keys] of fields) {
    for (const value of [PAYLOAD, `1" onmouseover="alert(1)`, '12', { toString: () => PAYLOAD }, [PAYLOAD]]) {
      const s = planted(keys, () => value);
      const expected = p === 'format' ? /is not a dpctl-memory snapshot/ : p === 'version' ? /snapshot of version .*this report reads version 1/ : new RegExp(`${p.replace(/[[\].]/g, '\\$&')} must be `);
      const where = `${p} = ${JSON.stringify(value)}`;
      // Whatever a renderer that took it made must hold no markup and parse as JSON.
      const page = outcome(() => renderHtml(s));
      if (page.error === undefined) assertInert(t, page.result, `${where}: the page`);
      t.regex(String(page.error?.message), expected, `${where}: the page`);
      const trace = outcome(() => chromeTrace(s));
      if (trace.error === undefined) t.notThrows(() => JSON.parse(trace.result), `${where}: the trace`);
      t.regex(String(trace.error?.message), expected, `${where}: the trace`);
    }
  }
  // Numbers JSON can say that are no figure: beyond a double (Infinity), below zero; an
  // index that names no stack; a time out of Date's range.
  for (const [text, expected] of [
    [JSON.stringify(snapshot()).replace('"totalBytes":1073741824', '"totalBytes":1e999'), /devices\[0\]\.totalBytes must be a number/],
    [JSON.stringify(snapshot()).replace('"dropped":2', '"dropped":-2'), /history\.dropped must be a number from 0 to 2\^53, not -2/],
    // Beyond 2^53, which charts drew as NaN (an adversarial review).
    [JSON.stringify(snapshot()).replace('"dropped":2', '"dropped":1e308'), /history\.dropped must be a number from 0 to 2\^53, not 1e\+308/],
    [JSON.stringify(snapshot()).replace('"stack":1,"timeUs":50', '"stack":7,"timeUs":50'), /liveBlocks\[0\]\.stack must be an index below 2, not 7/],
    [JSON.stringify(snapshot()).replace('"epochMs":1700000000000', '"epochMs":9000000000000000'), /epochMs must be a time/],
  ]) {
    t.throws(() => renderHtml(JSON.parse(text)), { message: expected });
  }
  // A device index per event, none of them listed, made a chart series each: 2.6 GB for
  // 20,000 of them (an adversarial review). Only listed devices are drawn.
  const unlisted = snapshot();
  unlisted.events[0].device = 20000;
  t.throws(() => renderHtml(unlisted), { message: /events\[0\]\.device must be the index of a listed device, not 20000/ });
});

test('the command refuses a planted number field with its name, renders a planted string escaped, and --help exits 0', (t) => {
  const bad = path.join(tmp, 'bad.json');
  const s = snapshot();
  s.events[5].kind = PAYLOAD;
  fs.writeFileSync(bad, JSON.stringify(s));
  const refused = spawnSync(process.execPath, [REPORT, bad, '-o', path.join(tmp, 'bad.html'), '--chrome-trace', path.join(tmp, 'bad-trace.json')], { encoding: 'utf8' });
  t.is(refused.status, 1, refused.stderr);
  t.regex(refused.stderr, /bad\.json is not a well-formed snapshot: events\[5\]\.kind must be one of device, host, shared, unknown, not "/);
  t.false(fs.existsSync(path.join(tmp, 'bad.html')), 'no page written');
  const good = path.join(tmp, 'good.json');
  const g = snapshot();
  g.devices[0].stats.name = PAYLOAD;
  g.stacks[0] = PAYLOAD;
  fs.writeFileSync(good, JSON.stringify(g));
  const page = path.join(tmp, 'good.html');
  const tracePath = path.join(tmp, 'good-trace.json');
  const r = spawnSync(process.execPath, [REPORT, good, '-o', page, '--chrome-trace', tracePath, '--title', PAYLOAD], { encoding: 'utf8' });
  t.is(r.status, 0, r.stderr);
  assertInert(t, fs.readFileSync(page, 'utf8'), 'the written page');
  const trace = JSON.parse(fs.readFileSync(tracePath, 'utf8'));
  t.is(trace.traceEvents.find((e) => e.ph === 'M').args.name, `fake:gpu:0 (${PAYLOAD})`);
  const help = spawnSync(process.execPath, [REPORT, '--help'], { encoding: 'utf8' });
  t.is(help.status, 0, help.stderr);
  t.regex(help.stdout, /^usage: dpctl-memory-report snapshot\.json/);
  t.is(help.stderr, '');
  const missing = spawnSync(process.execPath, [REPORT], { encoding: 'utf8' });
  t.is(missing.status, 2);
  t.regex(missing.stderr, /no snapshot given\nusage:/);
});

const CPU = (() => {
  try {
    return getDevices('opencl:cpu').length > 0;
  } catch {
    return false;
  }
})();
const realTitle = 'a real snapshot (allocations, frees to the cache, a trim, a release) passes the checks';
if (!CPU) {
  test.skip(`${realTitle} [no opencl:cpu device: skipped]`, () => {});
} else {
  test(realTitle, (t) => {
    // In a child: the recording is the process's.
    const script = `
      const m = require(${JSON.stringify(fileURLToPath(new URL('..', import.meta.url)))});
      const q = new m.SyclQueue('opencl:cpu');
      m.poolTrim();
      m.recordMemoryHistory({ maxEntries: 16 });
      const kept = [new m.MemoryUSMHost(100, { queue: q }), new m.MemoryUSMShared(5000, { queue: q }), new m.MemoryUSMDevice(70000, { queue: q })];
      for (let i = 0; i < 20; i++) new m.MemoryUSMHost(64 + i, { queue: q }).free();
      m.poolTrim();
      new m.MemoryUSMDevice(300, { queue: q }).free();
      process.stdout.write(JSON.stringify(m.memorySnapshot()));
      for (const k of kept) k.free();`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000 });
    t.is(r.status, 0, r.stderr);
    const s = JSON.parse(r.stdout);
    t.true(s.history.dropped > 0 && s.events.some((e) => e.action === 'trim') && s.cachedBlocks.length > 0, 'the fields the checks cover are there');
    t.notThrows(() => checkSnapshot(s));
    assertInert(t, renderHtml(s), 'a real snapshot');
    t.notThrows(() => JSON.parse(chromeTrace(s)));
  });
}
