#!/usr/bin/env node
// The long run of the model-based fuzz (`npm run fuzz`; the short one is
// __test__/fuzz.spec.mjs in `npm test`). The cases are split into batches, each run by a
// child `node` process, at most two at a time: a crash, abort or hang of the addon is
// reported with the batch's seed and the case it was in, and the run carries on with the
// rest of the batch. Every failure prints one command that replays it.
//
//   node scripts/fuzz.js [--runs N] [--seed S] [--batch B] [--jobs J]
//   node scripts/fuzz.js --replay --seed S --path P [--pool off]
//
// Environment: FUZZ_RUNS (default 100000), FUZZ_SEED (default: random, printed),
// FUZZ_BATCH (5000), FUZZ_JOBS (2), FUZZ_BATCH_TIMEOUT (seconds per batch, 900),
// FUZZ_KERNEL_RUNS (default FUZZ_RUNS / 10) and FUZZ_UCX_RUNS (FUZZ_RUNS / 20): cases of the
// kernel and UCX properties (__test__/helpers/fuzz-model.mjs, `kernelCaseArb`,
// `ucxCaseArb`), in batches of FUZZ_BATCH / 5, each family in children of its own
// (`--family kernel|ucx`); UCX's are skipped where UCX does not load.
// Every fourth batch of each family runs with the allocation pool off (DPCTL_MEMORY_POOL=0).
// Ends with a line "N passed, N failed" (cases) and exits 1 on any failure.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { pathToFileURL } = require('node:url');

const root = path.resolve(__dirname, '..');
// FUZZ_MODEL names another model file (to check that the harness reports failures).
const MODEL = pathToFileURL(path.resolve(process.env.FUZZ_MODEL ?? path.join(root, '__test__', 'helpers', 'fuzz-model.mjs'))).href;

function parseArgs(argv) {
  const args = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) {
      args._.push(a);
      continue;
    }
    const [key, inline] = a.slice(2).split('=', 2);
    if (inline !== undefined) args[key] = inline;
    else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) args[key] = argv[++i];
    else args[key] = true;
  }
  return args;
}

const args = parseArgs(process.argv.slice(2));
const num = (v, d) => (v === undefined || v === true || v === '' ? d : Number(v));

// ---------------------------------------------------------------------------------------
// The child: one batch (or one replay) in this process
// ---------------------------------------------------------------------------------------

async function child() {
  // The model's own (ESM) fast-check, so that its arbitraries and `check` are one library.
  const fcModule = await import('fast-check');
  const fc = fcModule.default ?? fcModule;
  const addon = require(path.join(root, 'index.js'));
  const model = await import(MODEL);
  const world = model.createWorld(addon);
  const seed = num(args.seed, 1);
  const replay = Boolean(args.replay);
  const runs = num(args.runs, 1);
  const start = args.path === undefined ? undefined : String(args.path);
  if (!world) {
    emit({ error: 'no SYCL device: nothing to fuzz' });
    process.exit(2);
  }
  // The progress file says which case is running, written before each case with a
  // synchronous write, so that it survives a crash of the process.
  const progressFd = args.progress ? fs.openSync(args.progress, 'w') : null;
  const first = start === undefined ? 0 : Number(start.split(':')[0]);
  let calls = 0;
  let failedAt = null;
  const note = (index) => {
    if (progressFd === null) return;
    const text = JSON.stringify({ index, failedAt }).padEnd(120, ' ');
    fs.writeSync(progressFd, text, 0, 'utf8');
  };
  const started = Date.now();
  let property;
  if (args.known) {
    // The known-defect properties (see KNOWN_DEFECTS in the model).
    const which = Number(args.known);
    property =
      which === 1
        ? fc.property(model.defect1Arb(), (c) => model.checkDefect1(world, c))
        : fc.asyncProperty(model.defect2Arb(), (c) => model.runCase(world, c));
  } else {
    // A family: the memory model (default), or the kernel or UCX properties.
    const family = FAMILIES[args.family ?? 'memory'];
    if (!family) {
      emit({ error: `no fuzz family ${args.family}: one of ${Object.keys(FAMILIES).join(', ')}` });
      process.exit(2);
    }
    if (family.available && !family.available(addon)) {
      emit({ error: `the ${args.family} family cannot run here (UCX did not load: ${addon.ucx.available().message})` });
      process.exit(2);
    }
    const arb = family.arb(model, { includeKnown: Boolean(args['include-known']) });
    property = fc.asyncProperty(arb, async (c) => {
      const index = failedAt === null ? first + calls : failedAt;
      calls++;
      note(index);
      if (replay) console.log(`case ${index}: ${fc.stringify(c)}`);
      try {
        await family.run(model)(world, c);
      } catch (e) {
        if (failedAt === null) {
          failedAt = index;
          note(index);
        }
        throw e;
      }
    });
  }
  const result = await fc.check(property, { seed, numRuns: replay ? 1 : runs, path: start, endOnFailure: replay });
  model.closeUcx?.(world);
  const error = result.errorInstance ?? result.error;
  if (!args.progress) {
    // Run by hand (a replay): say it in words.
    const where = `seed ${seed}${start !== undefined ? `, path ${start}` : ''}${process.env.DPCTL_MEMORY_POOL === '0' ? ', pool off' : ''}`;
    if (result.failed) {
      console.log(`FAIL (${where}) after ${result.numRuns} case(s): ${error instanceof Error ? error.message : String(error)}`);
      console.log(`  case: ${fc.stringify(result.counterexample)}`);
      console.log(`  path: ${result.counterexamplePath}`);
    } else {
      console.log(`passed (${where}): ${result.numRuns} case(s) in ${Date.now() - started} ms`);
    }
    process.exit(result.failed ? 1 : 0);
  }
  emit({
    seed,
    ms: Date.now() - started,
    numRuns: result.numRuns,
    failed: result.failed,
    path: result.counterexamplePath,
    message: result.failed ? (error instanceof Error ? error.message : String(error)) : undefined,
    counterexample: result.failed ? fc.stringify(result.counterexample) : undefined,
    firstFailure: failedAt,
    cases: world.cases,
    coverage: Object.fromEntries(world.coverage),
  });
  if (progressFd !== null) fs.closeSync(progressFd);
  process.exit(result.failed ? 1 : 0);
}

/** The properties a batch may run: `--family memory|kernel|ucx`. */
const FAMILIES = {
  memory: { arb: (model, o) => model.caseArb(o), run: (model) => model.runCase },
  kernel: { arb: (model) => model.kernelCaseArb(), run: (model) => model.runKernelCase },
  ucx: { arb: (model) => model.ucxCaseArb(), run: (model) => model.runUcxCase, available: (addon) => addon.ucx.available().available },
};

/** One JSON line on stdout, written synchronously (the parent reads the last line). */
function emit(object) {
  fs.writeSync(1, `\n${JSON.stringify(object)}\n`);
}

// ---------------------------------------------------------------------------------------
// The parent: batches in children, at most `jobs` at a time
// ---------------------------------------------------------------------------------------

function envPrefix(job) {
  return `${process.env.FUZZ_MODEL ? `FUZZ_MODEL=${process.env.FUZZ_MODEL} ` : ''}${job.poolOff ? 'DPCTL_MEMORY_POOL=0 ' : ''}`;
}

const familyArg = (job) => (job.family && job.family !== 'memory' ? ` --family ${job.family}` : '');

function replayCommand(job, at) {
  const env = envPrefix(job);
  const known = job.known ? ` --known ${job.known}` : '';
  return `${env}node scripts/fuzz.js --replay --seed ${job.seed} --path ${at}${known}${familyArg(job)}`;
}

function historyCommand(job, index) {
  const env = envPrefix(job);
  return `${env}node scripts/fuzz.js --child --seed ${job.seed} --runs ${index + 1}${job.start ? ` --path ${job.start}` : ''}${familyArg(job)}`;
}

function runJob(job, timeoutS) {
  return new Promise((resolve) => {
    const progress = path.join(os.tmpdir(), `dpctl-fuzz-${process.pid}-${job.id}.json`);
    const argv = [__filename, '--child', '--seed', String(job.seed), '--runs', String(job.runs), '--progress', progress];
    if (job.start !== undefined) argv.push('--path', String(job.start));
    if (job.known) argv.push('--known', String(job.known));
    if (job.family) argv.push('--family', job.family);
    if (args['include-known']) argv.push('--include-known');
    const env = { ...process.env };
    if (job.poolOff) env.DPCTL_MEMORY_POOL = '0';
    const proc = spawn(process.execPath, argv, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d) => {
      out += d;
      if (out.length > 1 << 22) out = out.slice(-(1 << 21));
    });
    proc.stderr.on('data', (d) => {
      err += d;
      if (err.length > 1 << 20) err = err.slice(-(1 << 19));
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      proc.kill('SIGKILL');
    }, timeoutS * 1000);
    proc.on('close', (code, signal) => {
      clearTimeout(timer);
      let progressState = null;
      try {
        progressState = JSON.parse(fs.readFileSync(progress, 'utf8'));
      } catch {
        /* the child never wrote it */
      }
      fs.rmSync(progress, { force: true });
      const last = out.trim().split('\n').pop();
      let report = null;
      try {
        report = JSON.parse(last);
      } catch {
        /* a crash before the report */
      }
      resolve({ job, code, signal, timedOut, report, progress: progressState, stderr: err });
    });
  });
}

async function parent() {
  const total = num(args.runs ?? process.env.FUZZ_RUNS, 100000);
  const batch = num(args.batch ?? process.env.FUZZ_BATCH, 5000);
  const jobs = Math.max(1, Math.min(num(args.jobs ?? process.env.FUZZ_JOBS, 2), os.availableParallelism?.() ?? os.cpus().length));
  const timeoutS = num(process.env.FUZZ_BATCH_TIMEOUT, 900);
  const baseSeed = num(args.seed ?? process.env.FUZZ_SEED, Math.floor(Math.random() * 2 ** 31));
  const model = await import(MODEL);
  console.log(`fuzz: ${total} cases in batches of ${batch}, ${jobs} at a time, base seed ${baseSeed} (FUZZ_SEED=${baseSeed} to repeat)`);
  const queue = [];
  let id = 0;
  for (let i = 0, left = total; left > 0; i++, left -= batch) {
    queue.push({ id: id++, batch: i, seed: (baseSeed + i * 7919) % 2 ** 31, runs: Math.min(batch, left), start: undefined, poolOff: i % 4 === 3, failures: 0 });
  }
  // The kernel and UCX properties: their own batches (a tenth and a twentieth of the
  // cases by default), after the memory model's.
  const addon = require(path.join(root, 'index.js'));
  const families = [
    ['kernel', num(args['kernel-runs'] ?? process.env.FUZZ_KERNEL_RUNS, Math.ceil(total / 10))],
    ['ucx', addon.ucx.available().available ? num(args['ucx-runs'] ?? process.env.FUZZ_UCX_RUNS, Math.ceil(total / 20)) : 0],
  ];
  if (!addon.ucx.available().available) console.log(`fuzz: no UCX here (${addon.ucx.available().message}): the UCX family is skipped`);
  for (const [family, runs] of families) {
    // A model of its own (FUZZ_MODEL) may have the memory property only.
    if (typeof model[`${family}CaseArb`] !== 'function') continue;
    const size = Math.max(1, Math.ceil(batch / 5));
    for (let i = 0, left = runs; left > 0; i++, left -= size) {
      queue.push({ id: id++, batch: `${family} ${i}`, family, seed: (baseSeed + 104729 + i * 7919) % 2 ** 31, runs: Math.min(size, left), start: undefined, poolOff: i % 4 === 3, failures: 0 });
    }
  }
  for (const n of model.KNOWN_DEFECTS) queue.push({ id: id++, batch: `known defect ${n}`, known: n, seed: baseSeed, runs: 200, poolOff: false, failures: 0 });
  for (const j of queue) if (!j.known) console.log(`batch ${j.batch}: seed ${j.seed}, ${j.runs} cases${j.poolOff ? ', pool off' : ''}`);
  const totals = { passed: 0, failed: 0 };
  const failures = [];
  const known = [];
  const coverage = new Map();
  const started = Date.now();
  const running = new Set();

  const handle = (r) => {
    const { job, report } = r;
    const label = `batch ${job.batch} (seed ${job.seed}${job.poolOff ? ', pool off' : ''}${job.start !== undefined ? `, from case ${job.start}` : ''})`;
    if (job.known) {
      const open = report?.failed || !report;
      known.push(`known defect ${job.known}: ${open ? `still open: ${report?.message ?? `the child died (${r.signal ?? r.code})`}` : 'now passes: remove it from KNOWN_DEFECTS'}`);
      return;
    }
    if (report && !report.error) {
      for (const [k, v] of Object.entries(report.coverage ?? {})) coverage.set(k, (coverage.get(k) ?? 0) + v);
    }
    if (report && !report.failed && !report.error) {
      totals.passed += report.numRuns;
      console.log(`${label}: ${report.numRuns} passed in ${(report.ms / 1000).toFixed(1)} s`);
      return;
    }
    // A failure, a crash or a hang: report it, then carry on after the case.
    let index;
    let text;
    if (report && report.failed) {
      index = report.firstFailure ?? Number(String(report.path).split(':')[0]);
      const passedHere = index - (job.start ?? 0);
      totals.passed += Math.max(0, passedHere);
      text = [
        `FAIL ${label}, case ${index}: ${report.message}`,
        `  case (shrunk): ${report.counterexample}`,
        `  replay: ${replayCommand(job, report.path)}`,
        `  with the batch's history up to it: ${historyCommand(job, index)}`,
      ].join('\n');
    } else {
      const how = r.timedOut ? `hung (killed after ${timeoutS} s)` : r.signal ? `was killed by ${r.signal}` : `exited with status ${r.code} without a report`;
      index = r.progress?.failedAt ?? r.progress?.index ?? job.start ?? 0;
      totals.passed += Math.max(0, index - (job.start ?? 0));
      const during = r.progress?.failedAt != null ? ` while shrinking the failure of case ${r.progress.failedAt}` : ` in case ${index}`;
      text = [
        `CRASH ${label}: the child ${how}${during}`,
        `  replay: ${replayCommand(job, index)}`,
        `  with the batch's history up to it: ${historyCommand(job, index)}`,
        `  stderr: ${r.stderr.trim().split('\n').slice(-8).join('\n          ')}`,
      ].join('\n');
    }
    totals.failed++;
    failures.push(text);
    console.log(text);
    const end = (job.start ?? 0) + job.runs;
    if (index + 1 < end && job.failures < 20) {
      queue.push({ ...job, id: id++, start: index + 1, runs: end - index - 1, failures: job.failures + 1 });
    } else if (index + 1 < end) {
      console.log(`${label}: ${end - index - 1} cases left unrun after 20 failures in this batch`);
    }
  };

  await new Promise((resolve) => {
    const next = () => {
      while (running.size < jobs && queue.length) {
        const job = queue.shift();
        const p = runJob(job, timeoutS).then((r) => {
          running.delete(p);
          handle(r);
          next();
        });
        running.add(p);
      }
      if (running.size === 0 && queue.length === 0) resolve();
    };
    next();
  });

  const seconds = (Date.now() - started) / 1000;
  console.log('');
  console.log('coverage (step, outcome: count):');
  for (const [k, v] of [...coverage].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    if (!/^(setup|teardown)/.test(k)) console.log(`  ${String(v).padStart(8)}  ${k}`);
  }
  for (const line of known) console.log(line);
  if (failures.length) {
    // One line per kind of failure (numbers and addresses aside), with one replay each.
    const kinds = new Map();
    for (const f of failures) {
      const [head, ...rest] = f.split('\n');
      const key = head.replace(/^[A-Z]+ batch [^:]*: /, '').replace(/0x[0-9a-f]+|\d+/g, 'N').slice(0, 200);
      const entry = kinds.get(key) ?? { count: 0, head, replay: rest.find((l) => l.includes('replay:')) };
      entry.count++;
      kinds.set(key, entry);
    }
    console.log(`\n${failures.length} failure(s), ${kinds.size} kind(s):`);
    for (const { count, head, replay } of kinds.values()) console.log(`${count} x ${head}\n${replay ?? ''}`);
  }
  console.log(`fuzz: ${seconds.toFixed(1)} s, ${((totals.passed + totals.failed) / seconds).toFixed(0)} cases/s, base seed ${baseSeed}`);
  console.log(`${totals.passed} passed, ${totals.failed} failed`);
  process.exit(totals.failed > 0 ? 1 : 0);
}

if (args.child || args.replay) {
  child().catch((e) => {
    console.error(e?.stack ?? e);
    process.exit(3);
  });
} else {
  parent().catch((e) => {
    console.error(e?.stack ?? e);
    process.exit(3);
  });
}
