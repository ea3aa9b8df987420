// The report (scripts/report.js, `npx dpctl-memory-report`): its reading of a snapshot
// (memory over time rebuilt from events, the peak and what was live at it, including
// blocks older than the ring), the Chrome trace export, and the page of a real snapshot of
// 10^5 events rendered by a real headless Chromium (Debian's `chromium`, installed by the
// test where it is missing and the test runs as root, else skipped visibly).
import test from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { addon, getDevices } from './helpers/addon.mjs';

const require = createRequire(import.meta.url);
const { analyse, renderHtml, chromeTrace, readSnapshot } = require('../scripts/report.js');
const REPORT = fileURLToPath(new URL('../scripts/report.js', import.meta.url));
const { MemoryUSMHost, SyclQueue, recordMemoryHistory, memorySnapshot, memoryStats, resetPeakStats, poolTrim } = addon;

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dpctl-memory-report-'));
test.after.always(() => fs.rmSync(tmp, { recursive: true, force: true }));

const stats = (allocated, reserved) => {
  const figure = (current) => ({ current, peak: current, allocated: current, freed: 0 });
  const kind = (a, r) => ({ allocatedBytes: figure(a), activeBytes: figure(a), requestedBytes: figure(a), reservedBytes: figure(r), allocation: figure(0), segment: figure(0), numDeviceAlloc: 0, numDeviceFree: 0, poolHits: 0, poolMisses: 0, poolEvictions: 0, poolTrims: 0, numAllocRetries: 0, numOoms: 0 });
  return { filterString: 'fake:gpu:0', name: 'Fake', all: kind(allocated, reserved), device: kind(allocated, reserved), host: kind(0, 0), shared: kind(0, 0) };
};
const event = (action, timeUs, address, size, extra = {}) => ({ action, timeUs, device: 0, kind: 'device', address, size, requested: size, stack: null, ...extra });

/** A small snapshot: 100 bytes allocated before the ring (freed at t=40), a peak of 400 at t=30. */
function smallSnapshot() {
  return {
    format: 'dpctl-memory-snapshot',
    version: 1,
    epochMs: 1_700_000_000_000,
    timeUs: 100,
    devices: [{ index: 0, totalBytes: 1 << 30, stats: stats(50, 300) }],
    liveBlocks: [{ address: '0x3', size: 50, requested: 50, kind: 'device', device: 0, stack: 1, timeUs: 50 }],
    cachedBlocks: [{ address: '0x2', size: 250, kind: 'device', device: 0 }],
    history: { enabled: true, maxEntries: 10, stacks: true, dropped: 2, stacksRefused: 0 },
    stacks: ['at big (app.js:1:1)', 'at small (app.js:2:1)'],
    events: [
      event('alloc', 10, '0x1', 50, { stack: 1, fromCache: false }),
      event('alloc', 30, '0x2', 250, { stack: 0, fromCache: false }),
      event('free', 35, '0x1', 50, { stack: 1, toCache: false }),
      event('release', 35, '0x1', 50),
      event('free', 40, '0x9', 100, { toCache: false }),
      event('release', 40, '0x9', 100),
      event('free', 45, '0x2', 250, { stack: 0, toCache: true }),
      event('alloc', 50, '0x3', 50, { stack: 1, fromCache: false }),
    ],
  };
}

test('the report rebuilds memory over time from the end figures and the events, and finds the peak', (t) => {
  const snapshot = smallSnapshot();
  const { peak, series } = analyse(snapshot);
  t.like(peak, { bytes: 400, index: 1, timeUs: 30 }, '100 from before the ring + 50 + 250');
  const device = series.find((s) => s.key === '0:device');
  t.deepEqual(device.start, { allocated: 100, reserved: 100 });
  t.is(Math.max(...device.points.map((p) => p[1])), 400);
  t.deepEqual(device.points.at(-1).slice(1), [50, 300], 'and ends at the figures of the snapshot');
  const html = renderHtml(snapshot);
  t.regex(html, /id="peak-summary" data-peak-bytes="400" data-peak-time-us="30"/);
  t.regex(html, /in 3 live blocks/, 'two recorded, one older than the ring (freed at 40 with no alloc seen)');
  t.regex(html, /at big \(app\.js:1:1\)/);
  t.regex(html, /id="peak-0"/);
  t.notRegex(html, /<script|https?:\/\//, 'no script, nothing fetched');
  const trace = JSON.parse(chromeTrace(snapshot));
  const counters = trace.traceEvents.filter((e) => e.ph === 'C' && e.name === 'device memory');
  t.deepEqual(counters.map((e) => e.args.allocated), [100, 150, 400, 350, 350, 250, 250, 0, 50]);
  t.deepEqual(counters.at(-1).args, { allocated: 50, reserved: 300 });
  t.true(trace.traceEvents.some((e) => e.ph === 'M' && e.args.name === 'fake:gpu:0 (Fake)'));
});

test('the command refuses what is not a snapshot, with a reason', (t) => {
  const file = path.join(tmp, 'not-a-snapshot.json');
  fs.writeFileSync(file, '{"hello": 1}');
  const r = spawnSync(process.execPath, [REPORT, file, '-o', path.join(tmp, 'x.html')], { encoding: 'utf8' });
  t.is(r.status, 1);
  t.regex(r.stderr, /is not a dpctl-memory snapshot/);
  t.throws(() => readSnapshot('{', 'x'), { message: /x is not JSON/ });
  const bad = spawnSync(process.execPath, [REPORT, '--bogus'], { encoding: 'utf8' });
  t.is(bad.status, 2);
  t.regex(bad.stderr, /unknown option --bogus/);
});

const CPU = (() => {
  try {
    return getDevices('opencl:cpu').length > 0;
  } catch {
    return false;
  }
})();

/** The chromium binary: on PATH, or installed now with apt-get when root; else why not. */
function findChromium() {
  const names = [process.env.CHROME_BIN, 'chromium', 'chromium-browser'].filter(Boolean);
  const found = () => names.find((name) => spawnSync(name, ['--version'], { encoding: 'utf8' }).status === 0);
  let binary = found();
  if (binary) return { binary };
  if (process.platform !== 'linux' || typeof process.getuid !== 'function' || process.getuid() !== 0) return { why: 'no chromium on PATH, and not root to install it' };
  if (spawnSync('apt-get', ['--version']).status !== 0) return { why: 'no chromium on PATH, and no apt-get' };
  const install = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], { encoding: 'utf8', timeout: 15 * 60_000, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  binary = found();
  return binary ? { binary } : { why: `apt-get install chromium failed: ${(install.stderr || '').trim().split('\n').slice(-2).join(' ')}` };
}

/** A real snapshot of 10^5 events: allocations from three call sites, growing then shrinking. */
function recordSnapshot() {
  const queue = new SyclQueue('opencl:cpu');
  poolTrim();
  resetPeakStats();
  recordMemoryHistory({ maxEntries: 100_000 });
  const held = [];
  const tensors = (n) => new MemoryUSMHost(n, { queue });
  const scratch = (n) => new MemoryUSMHost(n, { queue });
  const batches = (n) => new MemoryUSMHost(n, { queue });
  try {
    for (let i = 0; i < 100_000; i++) {
      const grow = i < 60_000 ? i % 3 !== 0 : i % 3 === 0;
      if (grow || held.length === 0) held.push([tensors, scratch, batches][i % 3](1024 * (1 + (i % 7))));
      else held.splice((i * 7919) % held.length, 1)[0].free();
    }
    const snapshot = memorySnapshot();
    const peak = memoryStats(queue.syclDevice).all.allocatedBytes.peak;
    return { snapshot, peak };
  } finally {
    recordMemoryHistory({ enabled: false });
    for (const m of held) m.free();
  }
}

const renderTitle = 'a real snapshot of 10^5 events renders in headless Chromium, with the peak shown';
if (!CPU) {
  test.skip(`${renderTitle} [no opencl:cpu device: skipped]`, () => {});
} else {
  const chromium = findChromium();
  if (!chromium.binary) {
    test.skip(`${renderTitle} [${chromium.why}: skipped]`, () => {});
  } else {
    test.serial(renderTitle, (t) => {
      const { snapshot, peak } = recordSnapshot();
      t.is(snapshot.events.length, 100_000);
      const input = path.join(tmp, 'snapshot.json');
      const page = path.join(tmp, 'report.html');
      const trace = path.join(tmp, 'trace.json');
      fs.writeFileSync(input, JSON.stringify(snapshot));
      const r = spawnSync(process.execPath, [REPORT, input, '-o', page, '--chrome-trace', trace], { encoding: 'utf8' });
      t.is(r.status, 0, r.stderr);
      t.true(JSON.parse(fs.readFileSync(trace, 'utf8')).traceEvents.filter((e) => e.ph === 'C').length > 50_000);
      const flags = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', `--user-data-dir=${path.join(tmp, 'profile')}`];
      const dom = spawnSync(chromium.binary, [...flags, '--dump-dom', `file://${page}`], { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 << 20 });
      t.is(dom.status, 0, dom.stderr);
      const html = dom.stdout;
      const summary = /<p id="peak-summary" data-peak-bytes="(\d+)"[^>]*>(.*?)<\/p>/.exec(html);
      t.truthy(summary, 'the rendered page has the peak');
      t.is(Number(summary?.[1]), peak, 'the peak of the page is the peak memoryStats() counted');
      t.regex(html, /class="peak-marker"/, 'and marks it on the chart');
      t.regex(html, /(tensors|scratch|batches) \(.*report\.spec\.mjs:\d+/, 'the allocation sites are named');
      const shot = path.join(tmp, 'report.png');
      const screenshot = spawnSync(chromium.binary, [...flags, `--screenshot=${shot}`, '--window-size=1280,1500', '--hide-scrollbars', `file://${page}`], { encoding: 'utf8', timeout: 120_000 });
      t.is(screenshot.status, 0, screenshot.stderr);
      const png = fs.readFileSync(shot);
      t.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG screenshot');
      t.true(png.length > 10_000, `${png.length} bytes`);
    });
  }
}
