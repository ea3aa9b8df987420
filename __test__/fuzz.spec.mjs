// The short run of the model-based fuzz (the long one is `npm run fuzz`, scripts/fuzz.js).
// Cases of base allocations of every kind and steps over them (interface views through
// every entry point, junk in every field and argument, copies, memset, buffers, frees,
// lifetime), each checked against the model in helpers/fuzz-model.mjs. A fixed seed by
// default; FUZZ_SEED, FUZZ_RUNS and FUZZ_PATH (a counterexample path) override it.
import test from 'ava';
import fc from 'fast-check';
import { addon, HAS_DEVICE } from './helpers/addon.mjs';
import {
  KNOWN_DEFECTS,
  caseArb,
  checkDefect1,
  closeUcx,
  createWorld,
  defect1Arb,
  defect2Arb,
  fuzzParams,
  kernelCaseArb,
  predictInterface,
  runCase,
  runKernelCase,
  runUcxCase,
  track,
  ucxAvailable,
  ucxCaseArb,
} from './helpers/fuzz-model.mjs';

const DEFAULT_SEED = 20261201;
const { seed, runs, path } = fuzzParams({ seed: DEFAULT_SEED, runs: 1200 });
const world = HAS_DEVICE ? createWorld(addon) : null;
const withDevice = HAS_DEVICE ? test.serial : test.serial.skip;
console.log(`fuzz.spec: FUZZ_SEED=${seed} FUZZ_RUNS=${runs}${path ? ` FUZZ_PATH=${path}` : ''}`);

/** Runs a property; on failure, fails `t` with the case, what differed and how to replay it. */
async function check(t, name, property, { numRuns, seed: s = seed }) {
  const started = Date.now();
  // With FUZZ_PATH, just that case (a counterexample path replays the shrunk case).
  const result = await fc.check(property, { seed: s, numRuns: path ? 1 : numRuns, path, endOnFailure: false });
  t.log(`${name}: ${result.numRuns} cases in ${Date.now() - started} ms (seed ${s})`);
  if (!result.failed) return;
  const error = result.errorInstance ?? result.error;
  const replay = `FUZZ_SEED=${s} FUZZ_PATH=${result.counterexamplePath} npx ava __test__/fuzz.spec.mjs --match '${name}*'`;
  t.fail(
    [
      `${name} failed after ${result.numRuns} cases (${result.numShrinks} shrinks):`,
      `  ${error instanceof Error ? error.message : String(error)}`,
      `  case: ${fc.stringify(result.counterexample).slice(0, 4000)}`,
      `  replay: ${replay}`,
      `  or:     node scripts/fuzz.js --replay --seed ${s} --path ${result.counterexamplePath}`,
    ].join('\n'),
  );
}

withDevice('model-based fuzz: interface consumer, argument paths, copies, lifetime', async (t) => {
  await check(t, 'model-based fuzz', fc.asyncProperty(caseArb(), (c) => runCase(world, c)), { numRuns: runs });
  t.true(world.cases > 0 || path !== undefined);
});

// Kernels and UCX: their own properties (helpers/fuzz-model.mjs), after the memory model's
// (whose registry of blocks they leave alone: each case frees what it made).
// OpenCL C needs an OpenCL device (a CUDA device loads PTX and CUDA C: gpu-kernels.spec).
const onOpenCl = HAS_DEVICE && world.queueA.syclDevice.backend === 'opencl';
if (HAS_DEVICE && !onOpenCl) console.log(`# kernel fuzz skipped: OpenCL C programs need an OpenCL device, not ${world.queueA.syclDevice.filterString}`);
(onOpenCl ? test.serial : test.serial.skip)('model-based fuzz of kernels: OpenCL C programs, submit/submitAsync with memory, scalar and local arguments, events, dependsOn, queue copies, bad arguments', async (t) => {
  const before = world.cases;
  await check(t, 'kernel fuzz', fc.asyncProperty(kernelCaseArb(), (c) => runKernelCase(world, c)), { numRuns: path ? 1 : Math.max(10, Math.round(runs / 15)) });
  t.true(world.cases > before || path !== undefined);
});

(HAS_DEVICE && ucxAvailable(addon) ? test.serial : test.serial.skip)('model-based fuzz of UCX: listen/connect/send/recv/close cycles in this process, every buffer form, bad inputs', async (t) => {
  const before = world.cases;
  try {
    await check(t, 'UCX fuzz', fc.asyncProperty(ucxCaseArb(), (c) => runUcxCase(world, c)), { numRuns: path ? 1 : Math.max(10, Math.round(runs / 60)) });
  } finally {
    closeUcx(world);
  }
  t.true(world.cases > before || path !== undefined);
});

// known defect 1: copyToHost/copyFromHost (and Async) given a non-buffer array-like (a
// Proxy of a Uint8Array, { length: 2**33 }, { length: 1e8 }) must throw
// ERR_INVALID_ARG_TYPE at once, without reading it.
const defect1 = KNOWN_DEFECTS.has(1) ? test.serial.failing : test.serial;
(HAS_DEVICE ? defect1 : test.serial.skip)('host copies refuse non-buffer array-likes at once with ERR_INVALID_ARG_TYPE', async (t) => {
  await check(t, 'host copies refuse non-buffer array-likes', fc.property(defect1Arb(), (c) => checkDefect1(world, c)), { numRuns: Math.max(20, Math.round(runs / 8)) });
  t.pass();
});

// known defect 2: after `globalThis.RangeError = function () { return 7 }` (or TypeError,
// Error replaced) the addon's errors must still be real errors of that class with codes.
const defect2 = KNOWN_DEFECTS.has(2) ? test.serial.failing : test.serial;
(HAS_DEVICE ? defect2 : test.serial.skip)('errors stay real, coded errors when the global error classes are replaced', async (t) => {
  await check(t, 'errors stay real', fc.asyncProperty(defect2Arb(), (c) => runCase(world, c)), { numRuns: Math.max(20, Math.round(runs / 12)) });
  t.pass();
});

withDevice('the model predicts the known rules by hand-written cases, and the addon agrees', (t) => {
  // A self-check of the model (a model that accepted everything could not fail a case).
  const m = new addon.MemoryUSMHost(100, { queue: world.queueA });
  const release = track(world, m, 'host');
  const base = { typestr: '|u1', version: 1, syclobj: world.queueA };
  const cases = [
    // The slack past the end of an odd-sized allocation, with a negative offset back into it.
    [{ ...base, data: [m.pointer + 100n, false], offset: -100, shape: [100] }, 'ERR_SUAI_OUT_OF_BOUNDS'],
    [{ ...base, data: [m.pointer + 300n, false], offset: -250, shape: [10] }, 'ERR_SUAI_OUT_OF_BOUNDS'],
    // Inside, with a negative offset that stays inside: a view.
    [{ ...base, data: [m.pointer + 50n, false], offset: -10, shape: [60] }, { off: 40, nbytes: 60 }],
    [{ ...base, data: [m.pointer, false], shape: [101] }, 'ERR_SUAI_OUT_OF_BOUNDS'],
    [{ ...base, data: [m.pointer, false], shape: [2, 2], strides: [10, -2], offset: 9 }, { off: 7, nbytes: 13 }],
  ];
  for (const [iface, want] of cases) {
    const got = predictInterface(world, iface);
    if (typeof want === 'string') {
      t.deepEqual(got.error?.map((e) => e.code), [want], 'the model');
      t.throws(() => new addon.MemoryUSMHost({ __sycl_usm_array_interface__: iface }), { code: want }, 'the addon');
    } else {
      t.is(got.view?.off, want.off, 'the model');
      t.is(got.view?.nbytes, want.nbytes, 'the model');
      const v = new addon.MemoryUSMHost({ __sycl_usm_array_interface__: iface });
      t.is(v.pointer, m.pointer + BigInt(want.off), 'the addon');
      t.is(v.nbytes, want.nbytes, 'the addon');
      v.free();
    }
  }
  const pointer = m.pointer;
  release();
  // Freed (cached, or given back to the runtime without the pool): never a view.
  const freed = { ...base, data: [pointer, false], shape: [1] };
  t.true(['ERR_SUAI_OUT_OF_BOUNDS', 'ERR_SUAI_FOREIGN_POINTER'].includes(predictInterface(world, freed).error?.[0].code));
  t.throws(() => new addon.MemoryUSMHost({ __sycl_usm_array_interface__: freed }), { code: predictInterface(world, freed).error?.[0].code });
});
