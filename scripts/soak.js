#!/usr/bin/env node
// Soak test: many allocate / view / copy / free cycles over the three USM kinds and mixed
// sizes, watching that nothing leaks, nothing is freed under a live view, and that memory
// dropped without free() is bounded by garbage collection.
//
//   node --expose-gc scripts/soak.js        (npm run soak)
//
// Each cycle allocates one memory object of a random kind and size (1 byte to 4 MiB, odd
// sizes included, a few with an alignment), fills it (copyFromHost, memset, or writing its
// `buffer`), reads it back and compares, then does one of: nothing, a zero-copy view, an
// interface view (`new Class(exporter)` / `asUsmMemory`), copyFromDevice into another kind,
// a `copy: true` conversion, or an asynchronous copy or fill (resolving later, sometimes
// with free() called while it is in flight). The memory is then freed explicitly or dropped
// for the garbage collector. Views outlive their parent's free(); buffers and TypedArrays
// of freed memory are kept too, and re-checked later, after their blocks served others.
//
// Checks (each counts once in the final "N passed, N failed" line):
//   data            every read-back (sync and async) equals what was written
//   detached        after free() the object's `buffer` and every TypedArray/DataView on it
//                   have length 0, and still do after their block has been reused
//   views-survive   zero-copy and interface views kept past the parent's free() still read
//                   the parent's bytes after many later allocations
//   freed-errors    any use after free() throws ERR_USM_FREED (sampled)
//   async           every asynchronous operation settles, resolves to what it should, and
//                   free() during one never breaks it
//   kernels         every SOAK_KERNEL_EVERY-th cycle (64) also allocates fresh memory of a
//                   random kind and size, memsets it and runs 1-3 chained submitAsync of a
//                   byte-increment kernel (each dependsOn the previous Promise or event),
//                   with a scalar argument; the bytes must read back incremented, or the
//                   memory is freed (or dropped) while the kernels are in flight, which must
//                   not break them (OpenCL C on a SYCL device; CUDA C through NVRTC on a
//                   CUDA device, skipped with the reason where no program builds)
//   ucx             every SOAK_UCX_EVERY-th cycle (256) also connects to a listener of this
//                   process over loopback, sends 1-3 messages (up to 256 KiB, plain buffers
//                   and memory objects) either way to receives posted first, compares them,
//                   checks a bad input is refused with its code, and closes both ends; at
//                   the end nothing is in flight and no endpoint is left (skipped where UCX
//                   does not load)
//   gc-bound-cycles during the cycles, the bytes of memory JS has dropped but not yet
//                   collected (poolStats() in-use bytes less what the soak holds) stay under
//                   SOAK_GARBAGE_MIB (512; 200 MiB was the most seen in 10^6 cycles on the
//                   CPU device; finalizers that never ran would reach tens of GiB)
//   gc-bound-burst  in a child node without --expose-gc: 1,500 dropped 1 MiB host and
//                   shared objects, touched through `buffer` or filled by memset with
//                   `buffer` never read, one per event-loop turn, no free(), no gc(): RSS
//                   grows by less than SOAK_BURST_MIB (256; 50-90 MiB when V8 knows of the
//                   memory, about 700 MiB when it does not). The cycles above cannot show
//                   this: they make so much JS garbage that V8 collects often anyway.
//   in-use-zero     poolStats() in-use bytes are 0 for every kind at the end, after freeing
//                   what is held and gc()
//   rss-peak        RSS, less what the pool caches and the soak holds, stays within
//                   SOAK_GARBAGE_MIB of the baseline
//   rss-end         RSS at the end is within SOAK_RSS_TOLERANCE (default 5 %, at least
//                   SOAK_RSS_MIN_MIB = 16 MiB) of the baseline taken after the warm-up; both
//                   measured the same way: everything freed, gc(), poolTrim(). The runtime,
//                   V8 and malloc move a few MiB between two such points (+3 to +9 MiB seen
//                   on a 190-220 MiB baseline, also at checkpoints within a run); a leak of
//                   one 64 KiB block every 4,000 cycles is 16 MiB per 10^6 cycles.
//
// Environment: SOAK_CYCLES (default 1000000), SOAK_WARMUP (cycles, default
// min(20000, SOAK_CYCLES / 10)), SOAK_SEED, SOAK_DEVICE (a filter string; default device),
// SOAK_CHECKPOINTS (parts of the measured run, default 4; RSS is measured as for the
// baseline between two), SOAK_OPS (which of none,view,iview,copy,convert,async,kernel,ucx
// the cycles do; all by default: to bisect a leak), SOAK_KERNEL_EVERY, SOAK_UCX_EVERY, SOAK_BURST (objects per burst, default 1500; 0 skips
// the bursts), SOAK_RSS_TOLERANCE, SOAK_RSS_MIN_MIB, SOAK_GARBAGE_MIB, SOAK_BURST_MIB,
// SOAK_MALLOC_DEFAULTS=1 (keep glibc's malloc thresholds, see MALLOC_ENV), SOAK_INJECT=leak
// (a control: keeps every 50th allocation alive unseen, so the checks must fail),
// SOAK_QUIET=1 (no progress lines). The last line is `SOAK_RESULT <json>` (figures and checks).
// Exit status: 0 when every check passed, 1 when one failed, 2 when it could not run.
//
// Other modes: `--burst KIND TOUCH N` (one GC-bound burst, see burstMain) and
// `--driver [FILTER]` (one pass over every API path for valgrind.sh and gpu-sanitize.sh).
'use strict';

const path = require('node:path');
const { xorshift32 } = require('./lib/xorshift.js');

const MiB = 2 ** 20;
const KiB = 1024;

function envNumber(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name}=${raw} is not a non-negative number`);
  return value;
}

function settings() {
  const cycles = Math.floor(envNumber('SOAK_CYCLES', 1e6));
  return {
    cycles,
    warmup: Math.floor(envNumber('SOAK_WARMUP', Math.min(20000, Math.floor(cycles / 10)))),
    seed: Math.floor(envNumber('SOAK_SEED', 20240601)) >>> 0 || 1,
    device: process.env.SOAK_DEVICE || undefined,
    burst: Math.floor(envNumber('SOAK_BURST', 1500)),
    rssTolerance: envNumber('SOAK_RSS_TOLERANCE', 0.05),
    rssMinMiB: envNumber('SOAK_RSS_MIN_MIB', 16),
    garbageMiB: envNumber('SOAK_GARBAGE_MIB', 512),
    burstMiB: envNumber('SOAK_BURST_MIB', 256),
    checkpoints: Math.floor(envNumber('SOAK_CHECKPOINTS', 4)),
    ops: (process.env.SOAK_OPS || 'none,view,iview,copy,convert,async,kernel,ucx').split(',').map((o) => o.trim()),
    kernelEvery: Math.max(1, Math.floor(envNumber('SOAK_KERNEL_EVERY', 64))),
    ucxEvery: Math.max(1, Math.floor(envNumber('SOAK_UCX_EVERY', 256))),
    inject: process.env.SOAK_INJECT || '',
    quiet: process.env.SOAK_QUIET === '1',
  };
}

// ---------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------

const CHECKS = ['data', 'detached', 'views-survive', 'freed-errors', 'async', 'kernels', 'ucx', 'gc-bound-cycles', 'gc-bound-burst', 'in-use-zero', 'rss-peak', 'rss-end'];

class Checks {
  constructor() {
    this.map = new Map(CHECKS.map((name) => [name, { assertions: 0, failures: 0, first: null, skipped: null }]));
  }
  ok(name, condition, message) {
    const c = this.map.get(name);
    c.assertions++;
    if (!condition) {
      c.failures++;
      if (c.first === null) c.first = typeof message === 'function' ? message() : message;
    }
    return condition;
  }
  skip(name, why) {
    this.map.get(name).skipped = why;
  }
  list() {
    return [...this.map].map(([name, c]) => ({ name, ...c, passed: c.skipped === null && c.failures === 0 && c.assertions > 0 }));
  }
}

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/** xorshift32: the same sequence for the same SOAK_SEED. */
function rng(seed) {
  const next = xorshift32(seed);
  return { int: (n) => next() % n, float: () => next() / 4294967296 };
}

const MAX_SIZE = 4 * MiB + 64;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const turn = () => new Promise((resolve) => setImmediate(resolve));
const rss = () => process.memoryUsage.rss();
const mib = (bytes) => (bytes / MiB).toFixed(1);

function pickSize(r) {
  const p = r.float();
  if (p < 0.02) return [512, 4096, 65536, 256 * KiB, MiB, 4 * MiB][r.int(6)]; // exact classes
  if (p < 0.3) return 1 + r.int(64); // tiny
  if (p < 0.6) return 65 + r.int(8128); // small, mostly odd
  if (p < 0.86) return 8193 + r.int(248 * KiB); // medium
  if (p < 0.985) return 256 * KiB + 1 + r.int(768 * KiB); // large
  return MiB + 1 + r.int(3 * MiB); // a few MiB
}

function throwsCode(fn, code) {
  try {
    fn();
  } catch (err) {
    return err && err.code === code;
  }
  return false;
}

const asBuffer = (view) => Buffer.from(view.buffer, view.byteOffset, view.byteLength);

// ---------------------------------------------------------------------------------------
// The GC-bound burst, in a child process of its own
// ---------------------------------------------------------------------------------------

/** [kind, how each object is touched]: through `buffer`, or memset with `buffer` never read. */
const BURST_CASES = [
  ['host', 'buffer'],
  ['shared', 'buffer'],
  ['host', 'memset'],
  ['shared', 'memset'],
];

/**
 * `node scripts/soak.js --burst KIND TOUCH N`: allocates N MiB-sized objects of KIND, touches
 * each (TOUCH 'buffer': fills it through `buffer`; 'memset': memset, `buffer` never read),
 * drops it (no free()), and awaits setImmediate before the next; never calls gc(). Prints
 * `BURST_RESULT <json>` with the RSS before the loop and its peak during it.
 */
async function burstMain(kind, touch, n) {
  const addon = require(path.join(__dirname, '..', 'index.js'));
  const Class = { host: addon.MemoryUSMHost, shared: addon.MemoryUSMShared, device: addon.MemoryUSMDevice }[kind];
  if (!Class || !['buffer', 'memset'].includes(touch) || !(n > 0)) throw new Error(`usage: soak.js --burst host|shared|device buffer|memset N`);
  const queue = process.env.SOAK_DEVICE ? new addon.SyclQueue(process.env.SOAK_DEVICE) : new addon.SyclQueue();
  const first = new Class(MiB, { queue });
  first.memset(0);
  first.free();
  // SOAK_BURST_KEEP=1 keeps every object (the control: held memory must show).
  const kept = process.env.SOAK_BURST_KEEP === '1' ? [] : null;
  const before = rss();
  let peak = before;
  const started = Date.now();
  for (let i = 0; i < n; i++) {
    const m = new Class(MiB, { queue });
    if (touch === 'buffer') new Uint8Array(m.buffer).fill(i & 0xff);
    else m.memset(i & 0xff);
    if (kept) kept.push(m);
    await turn();
    peak = Math.max(peak, rss());
  }
  const s = addon.poolStats()[kind];
  const result = { kind, touch, n, kept: kept ? kept.length : 0, device: queue.syclDevice.filterString, gcExposed: typeof globalThis.gc === 'function', before, peak, growth: peak - before, ms: Date.now() - started, inUseAtEnd: s.inUseBytes, hits: s.hits, misses: s.misses };
  console.log(`BURST_RESULT ${JSON.stringify(result)}`);
  if (kept) for (const m of kept) m.free();
}

/** Runs one burst in a child node (without --expose-gc); returns its result or { error }. */
function burstChild(kind, touch, n, device) {
  const { spawnSync } = require('node:child_process');
  const env = { ...process.env };
  if (device) env.SOAK_DEVICE = device;
  const child = spawnSync(process.execPath, [__filename, '--burst', kind, touch, String(n)], { env, encoding: 'utf8', timeout: 300_000, maxBuffer: 64 * MiB });
  const line = (child.stdout || '').split('\n').find((l) => l.startsWith('BURST_RESULT '));
  if (child.status !== 0 || !line) {
    return { kind, touch, error: `exit ${child.status}${child.signal ? ` (signal ${child.signal})` : ''}: ${(child.stderr || '').trim().slice(-2000)}` };
  }
  return JSON.parse(line.slice('BURST_RESULT '.length));
}

// The byte-increment kernel the soak and the driver run: OpenCL C on a SYCL device, CUDA C
// (NVRTC) on a CUDA device. Throws the library's error where no program can be built.
const ADDONE_OPENCL = '__kernel void addone(__global uchar *p, ulong n) { size_t i = get_global_id(0); if (i < n) p[i] += 1; }';
const ADDONE_CUDA = 'extern "C" __global__ void addone(unsigned char *p, unsigned long long n) { unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; if (i < n) p[i] += 1; }';
function kernelOf(addon, queue) {
  const program = queue.syclDevice.backend === 'cuda' ? addon.createProgramFromCuda(queue, ADDONE_CUDA) : addon.createProgramFromSource(queue, ADDONE_OPENCL);
  return program.getKernel('addone');
}

// ---------------------------------------------------------------------------------------
// The sanitizer driver: every API path once or twice, small enough for valgrind
// ---------------------------------------------------------------------------------------

/**
 * `node --expose-gc scripts/soak.js --driver [FILTER]` (scripts/valgrind.sh and
 * scripts/gpu-sanitize.sh run it under their tools): every kind allocated (odd sizes,
 * alignments), `buffer` read and written through TypedArrays and DataViews, zero-copy views,
 * interface views (offsets, sub-ranges, asUsmMemory), `copy: true` conversions, copies
 * between kinds and contexts, sync and async copies (fresh, plain, SharedArrayBuffer and USM
 * host destinations; sizes above the parallel host copy and, on CUDA, the pinned staging
 * thresholds), memset and memsetAsync, free() (also while async copies are in flight), uses
 * of freed objects, objects dropped for the garbage collector (gc(), so finalizers run under
 * the tool), error paths, poolStats()/poolTrim(); kernels (a program built from source:
 * OpenCL C on a SYCL device, CUDA C through NVRTC on a CUDA device; submit and submitAsync
 * with memory and scalar arguments, `__local` memory on OpenCL, events, dependsOn, free()
 * while a kernel runs, bad arguments) and the UCX transport over loopback in this process
 * (where it loads). DRIVER_ROUNDS rounds (default 2). Prints `driver: N passed, N failed`;
 * exit 1 on a failure.
 *
 * Every byte the driver reads was written first (by the driver or by a kernel), so that
 * compute-sanitizer's initcheck reports nothing of its own: a report over this run is a
 * read the library made of memory nobody wrote. DRIVER_FRESH_READS=1 adds, after the rest,
 * reads of fresh (never written) memory on purpose, each announced by a line
 * `driver: fresh read on purpose: ...`; DRIVER_FRESH_READS=only runs just those (the
 * control run of scripts/gpu-sanitize.sh, which initcheck must report).
 * DRIVER_LEAVE_ALIVE=1 ends with live objects of every kind and cached blocks left for
 * the library's teardown at exit (memcheck's leak check then covers it).
 */
async function driverMain(filter) {
  const a = require(path.join(__dirname, '..', 'index.js'));
  const rounds = Number(process.env.DRIVER_ROUNDS || 2);
  if (typeof globalThis.gc !== 'function') throw new Error('the driver needs node --expose-gc');
  let checks = 0;
  let failures = 0;
  function ok(cond, what) {
    checks++;
    if (!cond) {
      failures++;
      console.log(`driver: FAILED: ${what}`);
    }
  }
  function code(fn, expected, what) {
    try {
      fn();
      ok(false, `${what}: no error`);
    } catch (e) {
      ok(e && e.code === expected, `${what}: ${e && e.code} instead of ${expected}`);
    }
  }
  async function codeAsync(fn, expected, what) {
    try {
      await fn();
      ok(false, `${what}: no error`);
    } catch (e) {
      ok(e && e.code === expected, `${what}: ${e && e.code} instead of ${expected}`);
    }
  }
  function pattern(n, seed) {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = (i * 131 + seed * 7 + (i >> 8)) & 0xff;
    return b;
  }
  const same = (x, y) => Buffer.from(x.buffer, x.byteOffset, x.byteLength).equals(Buffer.from(y.buffer, y.byteOffset, y.byteLength));
  const exporter = (base, fields = {}) => ({ __sycl_usm_array_interface__: { ...base.__sycl_usm_array_interface__, ...fields } });

  // Dropped objects, made in a function of its own: a suspended async function keeps its
  // last locals reachable (V8 saves them with the frame), which would pin the last ones.
  function dropSome(C, host, queue) {
    for (let i = 0; i < 8; i++) {
      const d = new C(4096 + i, { queue });
      d.memset(i);
      if (host) new Uint8Array(d.buffer)[0] = 1;
      const v = new C(exporter(d));
      void v;
    }
  }

  /** Kernels: built once, run with every kind of argument, with bad ones refused. */
  async function driverKernels(queue) {
    let addone;
    try {
      addone = kernelOf(a, queue);
    } catch (e) {
      console.log(`driver: kernels skipped: no program builds here: ${e.code} ${e.message.split('\n')[0]}`);
      return;
    }
    const { kernelArg } = a;
    for (const C of [a.MemoryUSMDevice, a.MemoryUSMShared, a.MemoryUSMHost]) {
      const n = 4099;
      const m = new C(n, { queue });
      m.memset(5);
      const event = queue.submit(addone, [m, kernelArg.uint64(n)], [n]);
      ok(event.executionStatus === 'complete', `${C.name}: a waited submit is complete`);
      ok(m.toBytes().every((b) => b === 6), `${C.name}: submit`);
      const first = queue.submitAsync(addone, [m, kernelArg.uint64(n)], [n]);
      const second = queue.submitAsync(addone, [m, kernelArg.uint64(n)], [n], null, [first]);
      const third = queue.submitAsync(addone, [m, kernelArg.uint64(n)], [n], null, [await second]);
      (await third).wait();
      ok(m.toBytes().every((b) => b === 9), `${C.name}: submitAsync chained through dependsOn`);
      code(() => queue.submit(addone, [m], [n]), 'ERR_KERNEL_ARG_COUNT', `${C.name}: too few kernel arguments`);
      code(() => queue.submit(addone, [m, kernelArg.float32(1)], [n]), 'ERR_KERNEL_ARG_TYPE', `${C.name}: a scalar of the wrong type`);
      code(() => queue.submit(addone, [m, kernelArg.uint64(n)], [0]), 'ERR_INVALID_RANGE', `${C.name}: an empty range`);
      ok(m.toBytes().every((b) => b === 9), `${C.name}: refused submissions changed nothing`);
      // free() while a kernel runs: it keeps the memory until it finished.
      const inflight = queue.submitAsync(addone, [m, kernelArg.uint64(n)], [n]);
      m.free();
      ok((await inflight) instanceof a.SyclEvent, `${C.name}: a kernel in flight survives free()`);
      code(() => queue.submit(addone, [m, kernelArg.uint64(n)], [n]), 'ERR_USM_FREED', `${C.name}: a freed kernel argument`);
    }
    if (queue.syclDevice.backend !== 'cuda') {
      // `__local` memory (OpenCL): each group sums its items.
      const lsum = a.createProgramFromSource(queue, '__kernel void lsum(__global long *out, __local long *t, long v) { size_t l = get_local_id(0); t[l] = v + (long)l; barrier(CLK_LOCAL_MEM_FENCE); if (l == 0) { long s = 0; for (size_t k = 0; k < get_local_size(0); k++) s += t[k]; out[get_group_id(0)] = s; } }').getKernel('lsum');
      const out = new a.MemoryUSMShared(4 * 8, { queue });
      queue.submit(lsum, [out, kernelArg.local(16 * 8), kernelArg.int64(1000n)], [4 * 16], [16]);
      const bytes = out.toBytes();
      const sums = new BigInt64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
      ok(sums.every((x) => x === 16000n + 120n), `__local sums: ${sums}`);
      out.free();
    }
  }

  /** The UCX transport over loopback in this process, where it loads. */
  async function driverUcx(queue) {
    const { ucx } = a;
    if (!ucx.available().available) {
      console.log(`driver: UCX skipped: ${ucx.available().message}`);
      return;
    }
    const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
    const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: listener.port }), listener.accept()]);
    const kinds = [a.MemoryUSMHost, a.MemoryUSMShared];
    if (queue.syclDevice.backend !== 'cuda' || ucx.info().cudaMemory) kinds.push(a.MemoryUSMDevice);
    for (const n of [1, 70000, MiB + 3]) {
      for (const C of kinds) {
        const src = pattern(n, n & 0xff);
        const dst = new C(n, { queue });
        const got = server.recv(dst, { tag: 5n });
        await client.send(src, { tag: 5n });
        const info = await got;
        ok(info.nbytes === n && info.tag === 5n && dst.toBytes().equals(src), `UCX ${n} bytes into ${C.name}`);
        const back = new Uint8Array(n);
        const returned = client.recv(back, { tag: 6n });
        await server.send(dst, { tag: 6n });
        await returned;
        ok(same(back, src), `UCX ${n} bytes from ${C.name}`);
        dst.free();
      }
    }
    await codeAsync(() => client.send(42), 'ERR_INVALID_ARG_TYPE', 'UCX: send of a number');
    await codeAsync(() => client.send(new Uint8Array(1), { tag: -1n }), 'ERR_INVALID_ARG_VALUE', 'UCX: a negative tag');
    const small = server.recv(new Uint8Array(4), { tag: 7n });
    await Promise.allSettled([client.send(new Uint8Array(64), { tag: 7n })]);
    await codeAsync(() => small, 'ERR_UCX_TRUNCATED', 'UCX: a message larger than the receive');
    await client.close();
    await server.close();
    await codeAsync(() => client.send(new Uint8Array(1)), 'ERR_UCX_ENDPOINT_CLOSED', 'UCX: a send after close');
    listener.close();
    ok(ucx.info().inFlight === 0, 'UCX: nothing in flight at the end');
  }

  async function driverBody(a, filter, rounds) {
    const devices = a.getDevices();
    ok(devices.length > 0, 'a device');
    for (const d of devices) {
      void [d.name, d.vendor, d.backend, d.deviceType, d.filterString, d.driverVersion, d.globalMemSize, d.maxMemAllocSize, d.aspects, String(d)];
      ok(d.hasAspect('usm_host_allocations') === true || d.hasAspect('usm_host_allocations') === false, 'hasAspect');
    }
    void a.getRuntimeDiagnostics();
    const device = new a.SyclDevice(filter);
    const queue = new a.SyclQueue(device);
    const ctx = new a.SyclContext();
    void [String(queue), String(ctx), ctx.devices.length, queue.syclContext.equals(ctx), queue.equals(queue)];
    const ownCtx = new a.SyclContext(device);
    const otherQueue = new a.SyclQueue(ownCtx, device);
    const KINDS = [
      ['device', a.MemoryUSMDevice, false],
      ['shared', a.MemoryUSMShared, true],
      ['host', a.MemoryUSMHost, true],
    ];
    for (let round = 0; round < rounds; round++) {
      for (const [kind, C, host] of KINDS) {
        for (const n of [1, 7, 4099, 65536 + 3]) {
          const m = new C(n, { queue });
          const src = pattern(n, n + round);
          m.copyFromHost(src);
          ok(same(m.copyToHost(), src), `${kind} ${n}: copyToHost`);
          ok(m.toBytes().equals(src), `${kind} ${n}: toBytes`);
          const dst = new Uint8Array(n + 5);
          m.copyToHost(dst);
          ok(same(dst.subarray(0, n), src), `${kind} ${n}: copyToHost(dst)`);
          m.copyFromHost(new SharedArrayBuffer(Math.min(n, 3)));
          m.copyFromHost(src.buffer.slice(src.byteOffset, src.byteOffset + n));
          void [m.nbytes, m.size, m.pointer, m.referenceObj, m.syclQueue, m.syclContext, m.syclDevice, m.getUsmType(), m.getUsmTypeEnum(), m.getUsmType(queue), String(m)];
          if (host) {
            const buf = m.buffer;
            const u8 = new Uint8Array(buf);
            ok(same(u8, src), `${kind} ${n}: buffer reads the memory`);
            u8[n - 1] = 0xee;
            if (n >= 8) new DataView(buf).setUint32(n - 8, 0xdeadbeef);
            ok(m.toBytes()[n - 1] === 0xee, `${kind} ${n}: a buffer write is seen`);
          } else {
            code(() => m.buffer, 'ERR_NOT_HOST_ACCESSIBLE', 'device buffer');
          }
          m.memset(0x3c);
          ok(m.toBytes().every((b) => b === 0x3c), `${kind} ${n}: memset`);
          // Views: zero-copy, interface (offset, sub-range), asUsmMemory; outliving the parent.
          const view = new C(m);
          const off = n > 2 ? 1 : 0;
          const iview = new C(exporter(m, { offset: off, shape: [n - off] }));
          const wrapped = a.asUsmMemory(exporter(m));
          code(() => new C(exporter(m, { shape: [n + 1] })), 'ERR_SUAI_OUT_OF_BOUNDS', `${kind}: interface past the end`);
          const u8 = host ? new Uint8Array(m.buffer) : null;
          m.free();
          m.free();
          if (u8) ok(u8.length === 0, `${kind}: buffer detached by free()`);
          code(() => m.copyToHost(), 'ERR_USM_FREED', `${kind}: use after free`);
          code(() => m.nbytes, 'ERR_USM_FREED', `${kind}: getter after free`);
          ok(view.toBytes().every((b) => b === 0x3c), `${kind}: view outlives the parent`);
          ok(iview.nbytes === n - off && iview.toBytes().every((b) => b === 0x3c), `${kind}: interface view outlives the base`);
          if (host) ok(new Uint8Array(view.buffer).every((b) => b === 0x3c), `${kind}: the view's buffer`);
          // Copies between kinds, and copy: true conversions.
          for (const [okind, OC] of KINDS) {
            const o = new OC(n, { queue });
            o.copyFromDevice(view);
            ok(o.toBytes().every((b) => b === 0x3c), `${kind} -> ${okind}: copyFromDevice`);
            if (OC !== C) {
              const c = new OC(view, { copy: true });
              ok(c.toBytes().every((b) => b === 0x3c), `${kind} -> ${okind}: copy: true`);
              c.free();
              code(() => new OC(view), 'ERR_USM_KIND_MISMATCH', `${kind} -> ${okind} without copy`);
            }
            o.free();
          }
          // Across contexts (staged through the host).
          const far = new C(n, { queue: otherQueue });
          far.copyFromDevice(view);
          ok(far.toBytes().every((b) => b === 0x3c), `${kind}: copyFromDevice across contexts`);
          far.free();
          view[Symbol.dispose]();
          iview.free();
          wrapped.free();
        }
        // Alignments, and larger blocks (the parallel host copy starts at 4 MiB).
        for (const alignment of [64, 4096]) {
          const m = new C(1000, { queue, alignment });
          ok(m.pointer % BigInt(alignment) === 0n, `${kind}: alignment ${alignment}`);
          m.free();
        }
        // Above the 4 MiB parallel host copy; on CUDA above the 12 MiB pinned staging threshold.
        const bigN = (device.backend === 'cuda' ? 16 : 5) * MiB + 3;
        const big = new C(bigN, { queue });
        const bigSrc = pattern(bigN, 9);
        big.copyFromHost(bigSrc);
        ok(big.toBytes().equals(bigSrc), `${kind}: 5 MiB round trip`);
        // Async: fresh result, plain / SharedArrayBuffer / USM host destinations, sources.
        ok(same(await big.copyToHostAsync(), bigSrc), `${kind}: copyToHostAsync()`);
        const plain = new Uint8Array(bigN);
        ok((await big.copyToHostAsync(plain)) === plain && same(plain, bigSrc), `${kind}: copyToHostAsync(plain)`);
        const sab = new Uint8Array(new SharedArrayBuffer(bigN));
        await big.copyToHostAsync(sab);
        ok(same(sab, bigSrc), `${kind}: copyToHostAsync(SharedArrayBuffer)`);
        const hostDst = new a.MemoryUSMHost(bigN, { queue });
        await big.copyToHostAsync(new Uint8Array(hostDst.buffer));
        ok(hostDst.toBytes().equals(bigSrc), `${kind}: copyToHostAsync(USM host buffer)`);
        await big.copyFromHostAsync(pattern(bigN, 10));
        ok(big.toBytes().equals(pattern(bigN, 10)), `${kind}: copyFromHostAsync(plain)`);
        await big.copyFromHostAsync(sab);
        ok(big.toBytes().equals(bigSrc), `${kind}: copyFromHostAsync(SharedArrayBuffer)`);
        await big.copyFromHostAsync(hostDst.buffer);
        await big.memsetAsync(0x77);
        ok(big.toBytes().every((b) => b === 0x77), `${kind}: memsetAsync`);
        await hostDst.copyFromDeviceAsync(big);
        ok(hostDst.toBytes().every((b) => b === 0x77), `${kind}: copyFromDeviceAsync`);
        await codeAsync(() => big.copyToHostAsync(new Uint8Array(8)), 'ERR_DESTINATION_TOO_SMALL', `${kind}: async too small`);
        // free() while async operations are in flight: they keep the memory until they settle.
        const inflight = [big.copyToHostAsync(), big.memsetAsync(1), hostDst.copyFromDeviceAsync(big), big.copyFromHostAsync(bigSrc)];
        big.free();
        const settled = await Promise.allSettled(inflight);
        ok(settled.every((s) => s.status === 'fulfilled'), `${kind}: in-flight operations survive free()`);
        hostDst.free();
        // Dropped, never freed: collected and finalized under memcheck.
        dropSome(C, host, queue);
      }
      // Errors.
      code(() => new a.MemoryUSMHost(0, { queue }), 'ERR_INVALID_SIZE', 'size 0');
      code(() => new a.MemoryUSMHost(16, { queue, alignment: 3 }), 'ERR_INVALID_ALIGNMENT', 'alignment 3');
      code(() => new a.MemoryUSMHost(16, { queue, nope: 1 }), 'ERR_INVALID_ARG_TYPE', 'unknown option');
      const small = new a.MemoryUSMShared(16, { queue });
      code(() => small.memset(256), 'ERR_INVALID_FILL_VALUE', 'memset 256');
      code(() => small.copyFromHost(new Uint8Array(17)), 'ERR_SOURCE_TOO_LARGE', 'source too large');
      code(() => small.copyToHost(new Uint8Array(15)), 'ERR_DESTINATION_TOO_SMALL', 'destination too small');
      code(() => a.asUsmMemory({}), 'ERR_NOT_USM', 'not USM');
      const stale = exporter(small);
      small.free();
      try {
        a.asUsmMemory(stale).free();
        ok(false, 'a stale interface of a freed, cached block was accepted');
      } catch (e) {
        ok(['ERR_SUAI_OUT_OF_BOUNDS', 'ERR_SUAI_FOREIGN_POINTER'].includes(e.code), `stale interface: ${e.code}`);
      }
      const stats = a.poolStats();
      ok(typeof stats.host.hits === 'number', 'poolStats');
      globalThis.gc();
      for (let i = 0; i < 3; i++) await turn();
      globalThis.gc();
      await turn();
    }
    await driverKernels(queue);
    await driverUcx(queue);
    // Dropped objects: collected and finalized (views of exporters may take a second GC).
    const inUseNow = () => {
      const s = a.poolStats();
      return s.device.inUseBytes + s.host.inUseBytes + s.shared.inUseBytes;
    };
    for (let i = 0; i < 20 && inUseNow() > 0; i++) {
      globalThis.gc();
      await turn();
      await new Promise((r) => setTimeout(r, 20));
    }
    a.poolTrim();
    const inUse = inUseNow();
    ok(inUse === 0, `in-use bytes at the end: ${inUse} ${JSON.stringify(a.poolStats())}`);
  }

  /** Reads of memory nobody wrote, on purpose (DRIVER_FRESH_READS): one per kind and path. */
  function freshReads(filter) {
    const queue = new a.SyclQueue(new a.SyclDevice(filter));
    for (const C of [a.MemoryUSMDevice, a.MemoryUSMShared, a.MemoryUSMHost]) {
      const n = 4099;
      console.log(`driver: fresh read on purpose: ${C.name} toBytes() of ${n} bytes never written`);
      const m = new C(n, { queue });
      ok(m.toBytes().length === n, 'fresh read: toBytes');
      console.log(`driver: fresh read on purpose: ${C.name} copyFromDevice from ${n} bytes never written`);
      const o = new C(n, { queue });
      o.copyFromDevice(m);
      ok(o.nbytes === n, 'fresh read: copyFromDevice');
      o.free();
      m.free();
    }
  }

  if (process.env.DRIVER_FRESH_READS === 'only') {
    freshReads(filter);
    console.log(`driver: ${checks - failures} passed, ${failures} failed`);
    process.exitCode = failures ? 1 : 0;
    return;
  }
  await driverBody(a, filter, rounds);
  if (process.env.DRIVER_FRESH_READS === '1') freshReads(filter);
  if (process.env.DRIVER_LEAVE_ALIVE === '1') {
    // What a program that never cleans up leaves at exit: live objects of every kind and
    // blocks in the pool's cache. The library gives them back at exit (memcheck's leak
    // check of scripts/gpu-sanitize.sh must find nothing of it).
    const queue = new a.SyclQueue(new a.SyclDevice(filter));
    globalThis.leftAlive = [];
    for (const C of [a.MemoryUSMDevice, a.MemoryUSMShared, a.MemoryUSMHost]) {
      for (const n of [4096, 3 * MiB]) {
        const m = new C(n, { queue });
        m.memset(1);
        globalThis.leftAlive.push(m);
        new C(n + 512, { queue }).free();
      }
    }
    const s = a.poolStats();
    console.log(`driver: left alive at exit on purpose: ${s.device.inUseBytes + s.host.inUseBytes + s.shared.inUseBytes} bytes in use, ${s.device.cachedBlocks + s.host.cachedBlocks + s.shared.cachedBlocks} blocks cached`);
  }
  console.log(`driver: ${checks - failures} passed, ${failures} failed`);
  process.exitCode = failures ? 1 : 0;
}

// ---------------------------------------------------------------------------------------
// The soak
// ---------------------------------------------------------------------------------------

/**
 * Runs the soak; returns { ok, checks, figures }. Needs global.gc (node --expose-gc).
 * `log` receives the progress lines.
 */
async function soak(options = {}, log = console.log) {
  const cfg = { ...settings(), ...options };
  if (typeof globalThis.gc !== 'function') throw new Error('run node with --expose-gc (npm run soak does)');
  const addon = require(path.join(__dirname, '..', 'index.js'));
  const { MemoryUSMDevice, MemoryUSMHost, MemoryUSMShared, SyclQueue, asUsmMemory, poolStats, poolTrim } = addon;
  const queue = cfg.device ? new SyclQueue(cfg.device) : new SyclQueue();
  const KINDS = [
    { kind: 'device', Class: MemoryUSMDevice, host: false },
    { kind: 'shared', Class: MemoryUSMShared, host: true },
    { kind: 'host', Class: MemoryUSMHost, host: true },
  ];
  const checks = new Checks();
  const r = rng(cfg.seed);
  // What each cycle does after the fill and read-back, by weight (SOAK_OPS restricts it).
  const OP_WEIGHTS = { none: 3, view: 1, iview: 1, copy: 1, convert: 1, async: 3 };
  const OP_TABLE = Object.entries(OP_WEIGHTS).filter(([op]) => cfg.ops.includes(op)).flatMap(([op, w]) => Array(w).fill(op));
  if (OP_TABLE.length === 0) throw new Error(`SOAK_OPS names none of ${Object.keys(OP_WEIGHTS).join(', ')}`);

  // Sources: one random pattern (sliced at random offsets) and constant buffers for memset.
  const PATTERN = Buffer.alloc(MAX_SIZE);
  for (let i = 0; i < MAX_SIZE; i++) PATTERN[i] = r.int(256);
  const FILLS = [0x00, 0x5a, 0xa5, 0xff];
  const CONST = FILLS.map((v) => Buffer.alloc(MAX_SIZE, v));

  // What the soak holds on purpose, to tell it apart from dropped memory awaiting GC.
  let heldBytes = 0;
  const survivors = []; // views kept past their parent's free(): { mem, expected, bytes }
  const detached = []; // buffers, TypedArrays and DataViews of freed memory
  const pending = []; // in-flight async operations
  const SURVIVORS_MAX = 48;
  const DETACHED_MAX = 256;
  const PENDING_MAX = 8;
  const injectLeak = cfg.inject === 'leak';
  const leaked = [];

  const counts = { kernels: 0, ucxCycles: 0, allocations: 0, freed: 0, dropped: 0, views: 0, interfaceViews: 0, copies: 0, conversions: 0, asyncOps: 0, asyncFreedInFlight: 0, bytesAllocated: 0 };
  const stats = { peakRss: 0, peakExcess: -Infinity, peakGarbage: 0, samples: 0 };
  let baseline = 0;
  let measuring = false;

  // Kernels: one program, built once, whose kernel adds 1 to each of n bytes.
  let addone = null;
  if (!cfg.ops.includes('kernel')) checks.skip('kernels', 'SOAK_OPS leaves kernel out');
  else {
    try {
      addone = kernelOf(addon, queue);
    } catch (e) {
      checks.skip('kernels', `no program builds here: ${e.code ?? ''} ${e.message}`);
    }
  }
  let kernelSerial = 0;
  async function kernelCycle() {
    const { Class } = KINDS[r.int(3)];
    const n = 1 + r.int(r.int(4) === 0 ? 1 << 20 : 4096);
    const start = r.int(256);
    const k = 1 + r.int(3);
    const m = new Class(n, { queue });
    counts.kernels++;
    m.memset(start);
    const promises = [];
    let dep = null;
    for (let j = 0; j < k; j++) {
      const p = queue.submitAsync(addone, [m, addon.kernelArg.uint64(n)], [n], null, dep ? [dep] : null);
      promises.push(p);
      dep = (kernelSerial++ & 1) === 0 ? p : await p;
    }
    const how = r.int(4);
    if (how === 0) m.free(); // freed while the kernels run: they keep it until they finish
    const settled = await Promise.allSettled(promises);
    checks.ok('kernels', settled.every((x) => x.status === 'fulfilled'), () => `a kernel submission rejected: ${settled.find((x) => x.status === 'rejected').reason}`);
    if (how === 0) return;
    const want = (start + k) & 0xff;
    const bytes = m.toBytes();
    const at = bytes.findIndex((b) => b !== want);
    checks.ok('kernels', at < 0, () => `after ${k} chained increments of ${start} over ${n} bytes, byte ${at} is ${bytes[at]} (expected ${want})`);
    if (how === 1) return; // dropped: the collector frees it
    m.free();
  }

  // UCX: one listener of this process; every UCX cycle connects, talks, closes.
  const ucx = addon.ucx;
  let listener = null;
  let ucxBase = null;
  if (!cfg.ops.includes('ucx')) checks.skip('ucx', 'SOAK_OPS leaves ucx out');
  else if (!ucx.available().available) checks.skip('ucx', `UCX does not load here: ${ucx.available().message}`);
  else {
    listener = ucx.listen({ host: '127.0.0.1', port: 0 });
    ucxBase = ucx.info();
  }
  async function ucxCycle() {
    const [client, server] = await Promise.all([ucx.connect({ host: '127.0.0.1', port: listener.port }), listener.accept()]);
    counts.ucxCycles++;
    const made = [];
    try {
      for (let j = 1 + r.int(3); j > 0; j--) {
        const size = r.int(2) ? 1 + r.int(256) : 1 + r.int(256 * KiB);
        const tag = BigInt(r.int(1 << 30)) * 4n + BigInt(j);
        const [from, to] = r.int(2) ? [client, server] : [server, client];
        const off = r.int(MAX_SIZE - size);
        const expected = PATTERN.subarray(off, off + size);
        let src = expected;
        if (r.int(3) === 0) {
          src = new MemoryUSMHost(size, { queue });
          made.push(src);
          src.copyFromHost(expected);
        }
        let dst = new Uint8Array(size);
        if (r.int(3) === 0) {
          dst = new MemoryUSMShared(size, { queue });
          made.push(dst);
        }
        const got = to.recv(dst, { tag });
        await from.send(src, { tag });
        const info = await got;
        const same = asBuffer(dst instanceof Uint8Array ? dst : dst.toBytes()).equals(expected);
        checks.ok('ucx', info.nbytes === size && info.tag === tag && same, () => `a ${size}-byte message (tag ${tag}) came back as ${info.nbytes} bytes, tag ${info.tag}, ${same ? 'same' : 'different'} bytes`);
      }
      // One bad input per cycle: a coded refusal.
      try {
        await client.send(new Uint8Array(1), { tag: -1n });
        checks.ok('ucx', false, 'a send with tag -1 was accepted');
      } catch (e) {
        checks.ok('ucx', e.code === 'ERR_INVALID_ARG_VALUE', () => `a send with tag -1: ${e.code} ${e.message}`);
      }
    } finally {
      await client.close();
      await server.close();
      for (const m of made) m.free();
    }
  }

  function verifyMem(mem, expected, where) {
    const out = r.int(3) === 0 ? mem.toBytes() : mem.copyToHost();
    return checks.ok('data', asBuffer(out).equals(expected), () => `${where}: ${mem} does not read back what was written`);
  }

  function expectDetached(item, where) {
    const { buffer, u8, dv } = item;
    let ok = buffer.byteLength === 0 && u8.length === 0 && u8[0] === undefined;
    if (dv) {
      try {
        dv.getUint8(0);
        ok = false;
      } catch {
        /* a DataView on a detached buffer throws */
      }
    }
    return checks.ok('detached', ok, () => `${where}: a buffer of freed memory still has ${buffer.byteLength} bytes (TypedArray ${u8.length})`);
  }

  function keepSurvivor(entry) {
    survivors.push(entry);
    heldBytes += entry.bytes;
    if (survivors.length > SURVIVORS_MAX) retireSurvivor(survivors.splice(r.int(survivors.length), 1)[0]);
  }

  function retireSurvivor(entry) {
    checks.ok('views-survive', asBuffer(entry.mem.copyToHost()).equals(entry.expected), () => `a ${entry.what} kept past its parent's free() reads wrong bytes`);
    heldBytes -= entry.bytes;
    if (r.float() < 0.7) entry.mem.free();
    else counts.dropped++;
  }

  function keepDetached(item) {
    detached.push(item);
    if (detached.length > DETACHED_MAX) expectDetached(detached.splice(r.int(detached.length), 1)[0], 'later');
  }

  /** Frees `mem` (70 %) or drops it; checks its buffer detaches on free. */
  function release(mem, bufferItem) {
    if (r.float() < 0.7) {
      mem.free();
      counts.freed++;
      if (bufferItem) {
        expectDetached(bufferItem, 'right after free()');
        keepDetached(bufferItem);
      }
      if (r.int(64) === 0) {
        checks.ok('freed-errors', throwsCode(() => mem.nbytes, 'ERR_USM_FREED'), 'nbytes after free()');
        checks.ok('freed-errors', throwsCode(() => mem.copyToHost(), 'ERR_USM_FREED'), 'copyToHost after free()');
        checks.ok('freed-errors', throwsCode(() => new mem.constructor(mem), 'ERR_USM_FREED'), 'a view of freed memory');
        checks.ok('freed-errors', throwsCode(() => mem.memsetAsync(1), 'ERR_USM_FREED'), 'memsetAsync after free()');
      }
    } else {
      counts.dropped++;
    }
  }

  function track(promise, bytes) {
    heldBytes += bytes;
    counts.asyncOps++;
    const p = promise.then(
      () => {
        heldBytes -= bytes;
      },
      (err) => {
        heldBytes -= bytes;
        checks.ok('async', false, `an async operation rejected: ${err && err.code} ${err && err.message}`);
      },
    );
    pending.push(p);
  }

  async function drainPending() {
    while (pending.length) await Promise.all(pending.splice(0));
  }

  function asyncOp(mem, spec, expected, size) {
    const { host } = spec;
    const op = r.int(5);
    const freeInFlight = r.float() < 0.3;
    const ok = (cond, what) => checks.ok('async', cond, what);
    let p;
    if (op === 0) {
      // copyToHostAsync into a fresh Uint8Array, a plain buffer, a SharedArrayBuffer, or USM host memory.
      const dstKind = r.int(4);
      let dst = null;
      let dstMem = null;
      if (dstKind === 1) dst = new Uint8Array(size + r.int(8));
      else if (dstKind === 2) dst = new Uint8Array(new SharedArrayBuffer(size));
      else if (dstKind === 3) {
        dstMem = new MemoryUSMHost(size, { queue });
        dst = new Uint8Array(dstMem.buffer);
      }
      p = (dst ? mem.copyToHostAsync(dst) : mem.copyToHostAsync()).then((out) => {
        ok(dst ? out === dst : out instanceof Uint8Array && out.length === size, 'copyToHostAsync resolves to its destination');
        checks.ok('data', asBuffer(out).subarray(0, size).equals(expected), 'copyToHostAsync read back');
        if (dstMem) dstMem.free();
      });
    } else if (op === 1) {
      // copyFromHostAsync of a plain slice or a SharedArrayBuffer copy; verified after it settles.
      const off = r.int(64);
      let src = PATTERN.subarray(off, off + size);
      if (r.int(2)) {
        const sab = new Uint8Array(new SharedArrayBuffer(size));
        sab.set(src);
        src = sab;
      }
      const want = asBuffer(src);
      p = mem.copyFromHostAsync(src).then((v) => {
        ok(v === undefined, 'copyFromHostAsync resolves to undefined');
        if (!freeInFlight) verifyMem(mem, want, 'after copyFromHostAsync');
      });
    } else if (op === 2) {
      const v = FILLS[r.int(FILLS.length)];
      p = mem.memsetAsync(v).then(() => {
        if (!freeInFlight) verifyMem(mem, CONST[FILLS.indexOf(v)].subarray(0, size), 'after memsetAsync');
      });
    } else {
      // copyFromDeviceAsync: into another allocation of some kind, from this one.
      const other = KINDS[r.int(3)];
      const dst = new other.Class(size, { queue });
      p = dst.copyFromDeviceAsync(mem).then(() => {
        verifyMem(dst, expected, `copyFromDeviceAsync into ${other.kind}`);
        dst.free();
      });
    }
    if (freeInFlight) {
      counts.asyncFreedInFlight++;
      mem.free(); // must not free under the operation: it holds the allocation until it settles
      counts.freed++;
    }
    track(p, size * 2);
    return freeInFlight;
  }

  function cycle(i) {
    const spec = KINDS[r.int(3)];
    const { Class, host } = spec;
    const size = pickSize(r);
    const alignment = r.int(20) === 0 ? [64, 256, 4096][r.int(3)] : 0;
    const mem = new Class(size, alignment ? { queue, alignment } : { queue });
    counts.allocations++;
    counts.bytesAllocated += size;
    // SOAK_INJECT=leak: a control that the checks can fail: every 50th allocation is kept
    // alive by a view the soak never frees and does not count as held.
    if (injectLeak && counts.allocations % 50 === 0) leaked.push(new Class(mem));

    // Fill, and remember what it must read.
    let expected;
    let bufferItem = null;
    const fill = r.int(host ? 3 : 2);
    if (fill === 0) {
      const off = r.int(64);
      expected = PATTERN.subarray(off, off + size);
      mem.copyFromHost(r.int(2) ? expected : new Uint8Array(expected.buffer, expected.byteOffset, size));
    } else if (fill === 1) {
      const f = r.int(FILLS.length);
      mem.memset(FILLS[f]);
      expected = CONST[f].subarray(0, size);
    } else {
      const off = r.int(64);
      expected = PATTERN.subarray(off, off + size);
      const buffer = mem.buffer;
      const u8 = new Uint8Array(buffer);
      u8.set(expected);
      bufferItem = { buffer, u8, dv: size >= 8 && r.int(4) === 0 ? new DataView(buffer, 0, 8) : null };
    }
    // Read back: sync copies, toBytes, or the zero-copy buffer itself.
    if (host && r.int(3) === 0) {
      const buffer = mem.buffer;
      const u8 = new Uint8Array(buffer);
      checks.ok('data', asBuffer(u8).equals(expected), () => `buffer of ${spec.kind} ${size} bytes`);
      bufferItem = bufferItem || { buffer, u8, dv: null };
    } else if (r.int(4) === 0) {
      const dst = new Uint8Array(size + r.int(16));
      mem.copyToHost(dst);
      checks.ok('data', asBuffer(dst).subarray(0, size).equals(expected), () => `copyToHost(dst) of ${spec.kind} ${size} bytes`);
    } else {
      verifyMem(mem, expected, `${spec.kind} ${size} bytes`);
    }

    const what = OP_TABLE[r.int(OP_TABLE.length)];
    if (what === 'none') {
      // nothing more
    } else if (what === 'view') {
      // A zero-copy view kept past the parent's free().
      const view = r.int(2) ? new Class(mem) : asUsmMemory(mem);
      counts.views++;
      mem.free();
      counts.freed++;
      if (bufferItem) {
        expectDetached(bufferItem, "parent's buffer after free() with a view alive");
        keepDetached(bufferItem);
      }
      keepSurvivor({ mem: view, expected, bytes: size, what: 'zero-copy view' });
      return;
    } else if (what === 'iview') {
      // An interface view of a sub-range, kept past the base's free().
      const off = r.int(size);
      const len = 1 + r.int(size - off);
      const iface = mem.__sycl_usm_array_interface__;
      const exp = { __sycl_usm_array_interface__: { ...iface, shape: [len], offset: off } };
      const view = r.int(2) ? new Class(exp) : asUsmMemory(exp);
      counts.interfaceViews++;
      mem.free();
      counts.freed++;
      if (bufferItem) {
        expectDetached(bufferItem, "base's buffer after free() with an interface view alive");
        keepDetached(bufferItem);
      }
      keepSurvivor({ mem: view, expected: expected.subarray(off, off + len), bytes: size, what: 'interface view' });
      return;
    } else if (what === 'copy') {
      const other = KINDS[r.int(3)];
      const dst = new other.Class(size, { queue });
      dst.copyFromDevice(mem);
      counts.copies++;
      verifyMem(dst, expected, `copyFromDevice ${spec.kind} -> ${other.kind}`);
      release(dst, null);
    } else if (what === 'convert') {
      const others = KINDS.filter((k) => k.Class !== Class);
      const other = others[r.int(others.length)];
      const converted = new other.Class(mem, { copy: true });
      counts.conversions++;
      verifyMem(converted, expected, `copy: true ${spec.kind} -> ${other.kind}`);
      release(converted, null);
    } else {
      // An asynchronous operation, sometimes with free() while it runs.
      if (asyncOp(mem, spec, expected, size)) {
        if (bufferItem) {
          expectDetached(bufferItem, 'buffer after free() during an async operation');
          keepDetached(bufferItem);
        }
        return;
      }
      // Not freed in flight: release it once it settles (the promise holds the rest).
      const p = pending[pending.length - 1].then(() => release(mem, bufferItem));
      pending[pending.length - 1] = p;
      return;
    }
    release(mem, bufferItem);
  }

  function sample() {
    const s = poolStats();
    const now = rss();
    const inUse = s.device.inUseBytes + s.host.inUseBytes + s.shared.inUseBytes;
    // What the pool caches, and the idle scratch blocks of async copies where the build reports them.
    const cached = s.device.cachedBytes + s.host.cachedBytes + s.shared.cachedBytes + ((s.scratch && s.scratch.bytes) || 0);
    stats.samples++;
    stats.peakRss = Math.max(stats.peakRss, now);
    if (measuring) {
      // Pool blocks are up to 25 % larger than the request (size classes).
      const garbage = inUse - 1.25 * heldBytes;
      stats.peakGarbage = Math.max(stats.peakGarbage, garbage);
      stats.peakExcess = Math.max(stats.peakExcess, now - cached - 1.25 * heldBytes - baseline);
    }
    return { now, inUse, cached };
  }

  /** Everything held released, collected and trimmed; returns the RSS then. */
  async function quiesce() {
    await drainPending();
    while (survivors.length) retireSurvivor(survivors.pop());
    while (detached.length) expectDetached(detached.pop(), 'at the end');
    for (let round = 0; round < 20; round++) {
      globalThis.gc();
      await turn();
      await sleep(round < 3 ? 1 : 20);
      const s = poolStats();
      if (s.device.inUseBytes + s.host.inUseBytes + s.shared.inUseBytes === 0) break;
    }
    const s = poolStats();
    const trimmed = poolTrim();
    globalThis.gc();
    await turn();
    const scratch = s.scratch ? s.scratch.bytes : null;
    return { rss: rss(), trimmed, scratch, inUse: { device: s.device.inUseBytes, host: s.host.inUseBytes, shared: s.shared.inUseBytes } };
  }

  async function run(from, to, label) {
    const every = Math.max(1, Math.floor((to - from) / 20));
    const started = Date.now();
    for (let i = from; i < to; i++) {
      cycle(i);
      if (addone && i % cfg.kernelEvery === 7 % cfg.kernelEvery) await kernelCycle();
      if (listener && i % cfg.ucxEvery === 13 % cfg.ucxEvery) await ucxCycle();
      if (pending.length >= PENDING_MAX) await drainPending();
      if ((i & 31) === 31) await turn(); // let the event loop (and finalizers) run
      if ((i & 255) === 255) sample();
      if (!cfg.quiet && (i + 1 - from) % every === 0) {
        const s = sample();
        const secs = (Date.now() - started) / 1000;
        log(`soak ${label}: ${i + 1 - from}/${to - from} cycles, ${secs.toFixed(1)} s, rss ${mib(s.now)} MiB (peak ${mib(stats.peakRss)}), pool in use ${mib(s.inUse)} MiB, cached ${mib(s.cached)} MiB, held ${mib(heldBytes)} MiB`);
      }
    }
    await drainPending();
  }

  function runBursts() {
    const results = [];
    if (cfg.burst <= 0) {
      checks.skip('gc-bound-burst', 'SOAK_BURST=0');
      return results;
    }
    for (const [kind, touch] of BURST_CASES) {
      const b = burstChild(kind, touch, cfg.burst, cfg.device);
      results.push(b);
      if (b.error) {
        checks.ok('gc-bound-burst', false, `the burst child (${kind}, ${touch}) failed: ${b.error}`);
        continue;
      }
      log(`soak burst (child process, no --expose-gc): ${cfg.burst} dropped 1 MiB ${kind} objects (${touch === 'buffer' ? 'written through buffer' : 'memset, buffer never read'}): rss ${mib(b.before)} -> peak ${mib(b.peak)} MiB (+${mib(b.growth)}) in ${b.ms} ms`);
      checks.ok('gc-bound-burst', b.growth < cfg.burstMiB * MiB, `${cfg.burst} dropped 1 MiB ${kind} objects (${touch}) grew RSS by ${mib(b.growth)} MiB (bound ${cfg.burstMiB} MiB): dropped memory is not bounded by GC`);
    }
    return results;
  }

  const t0 = Date.now();
  const warmup = Math.min(cfg.warmup, cfg.cycles);
  const malloc = Object.keys(MALLOC_ENV).every((k) => process.env[k] !== undefined) ? `malloc thresholds fixed (${Object.entries(MALLOC_ENV).map(([k]) => `${k}=${process.env[k]}`).join(' ')})` : "glibc's default malloc thresholds";
  log(`soak: ${cfg.cycles} cycles (warm-up ${warmup}) on ${queue.syclDevice.filterString} (${queue.syclDevice.name}), seed ${cfg.seed}, node ${process.version}, ${malloc}`);
  await run(0, warmup, 'warm-up');
  const base = await quiesce();
  baseline = base.rss;
  const tBase = Date.now();
  log(`soak: baseline after warm-up: rss ${mib(baseline)} MiB (${((tBase - t0) / 1000).toFixed(1)} s)`);
  measuring = true;
  stats.peakRss = baseline;

  // The measured cycles, in SOAK_CHECKPOINTS parts; between two parts everything is
  // released and RSS measured as for the baseline (a steady leak shows as a slope there).
  const parts = Math.max(1, cfg.checkpoints);
  const checkpoints = [];
  const bursts = [];
  for (let part = 0; part < parts; part++) {
    const from = warmup + Math.floor(((cfg.cycles - warmup) * part) / parts);
    const to = warmup + Math.floor(((cfg.cycles - warmup) * (part + 1)) / parts);
    await run(from, to, `part ${part + 1}/${parts}`);
    if (part === Math.floor((parts - 1) / 2)) bursts.push(...runBursts());
    if (part < parts - 1) {
      const q = await quiesce();
      const mu = process.memoryUsage();
      checkpoints.push({ cycles: to, rssMiB: q.rss / MiB, heapUsedMiB: mu.heapUsed / MiB, externalMiB: mu.external / MiB, arrayBuffersMiB: mu.arrayBuffers / MiB });
      log(`soak: checkpoint at ${to} cycles: rss ${mib(q.rss)} MiB (${q.rss >= baseline ? '+' : ''}${mib(q.rss - baseline)} over the baseline) after poolTrim() released ${mib(q.trimmed)} MiB (${q.scratch === null ? 'no scratch figures' : `${mib(q.scratch)} MiB of it async scratch`}); V8 heap used ${mib(mu.heapUsed)} MiB, external ${mib(mu.external)} MiB, array buffers ${mib(mu.arrayBuffers)} MiB`);
    }
  }
  const tEnd = Date.now();
  const end = await quiesce();

  if (listener) {
    listener.close();
    const info = ucx.info();
    checks.ok('ucx', info.inFlight === 0 && info.endpoints === ucxBase.endpoints, () => `at the end the UCX worker has ${info.inFlight} operations in flight and ${info.endpoints} endpoints (${ucxBase.endpoints} before the cycles)`);
  }
  for (const name of ['kernels', 'ucx']) {
    const c = checks.map.get(name);
    if (c.skipped === null && c.assertions === 0) checks.skip(name, 'not exercised in so few cycles');
  }
  for (const kind of ['device', 'host', 'shared']) {
    checks.ok('in-use-zero', end.inUse[kind] === 0, `poolStats().${kind}.inUseBytes is ${end.inUse[kind]} after freeing everything and gc()`);
  }
  checks.ok('gc-bound-cycles', stats.peakGarbage < cfg.garbageMiB * MiB, `up to ${mib(stats.peakGarbage)} MiB of dropped memory awaited GC during the cycles (bound ${cfg.garbageMiB} MiB)`);
  if (stats.samples === 0 || !Number.isFinite(stats.peakExcess)) stats.peakExcess = 0;
  checks.ok('rss-peak', stats.peakExcess < cfg.garbageMiB * MiB, `RSS rose ${mib(stats.peakExcess)} MiB above the baseline beyond what the pool caches and the soak holds (bound ${cfg.garbageMiB} MiB)`);
  const tolerance = Math.max(cfg.rssTolerance * baseline, cfg.rssMinMiB * MiB);
  checks.ok('rss-end', Math.abs(end.rss - baseline) <= tolerance, `RSS at the end ${mib(end.rss)} MiB vs baseline ${mib(baseline)} MiB: ${mib(end.rss - baseline)} MiB apart, tolerance ${mib(tolerance)} MiB`);
  // These two are counted per cycle; a run too short to sample them says so.
  for (const name of ['freed-errors', 'views-survive', 'detached', 'async']) {
    if (checks.map.get(name).assertions === 0) checks.skip(name, 'not exercised in so few cycles');
  }

  const list = checks.list();
  const figures = {
    cycles: cfg.cycles,
    warmup,
    seed: cfg.seed,
    device: queue.syclDevice.filterString,
    malloc,
    seconds: (tEnd - tBase) / 1000,
    totalSeconds: (Date.now() - t0) / 1000,
    rssBaselineMiB: baseline / MiB,
    rssEndMiB: end.rss / MiB,
    rssPeakMiB: stats.peakRss / MiB,
    rssEndDeltaMiB: (end.rss - baseline) / MiB,
    rssToleranceMiB: tolerance / MiB,
    peakGarbageMiB: Math.max(0, stats.peakGarbage) / MiB,
    peakExcessMiB: stats.peakExcess / MiB,
    bursts: bursts.map((b) => (b.error ? b : { kind: b.kind, touch: b.touch, n: b.n, beforeMiB: b.before / MiB, peakMiB: b.peak / MiB, growthMiB: b.growth / MiB, ms: b.ms })),
    checkpoints,
    inUseEnd: end.inUse,
    pool: poolStats(),
    counts,
    leakedInjected: leaked.length,
  };
  const passed = list.filter((c) => c.passed).length;
  const skipped = list.filter((c) => c.skipped !== null).length;
  const failed = list.length - passed - skipped;
  return { ok: failed === 0, passed, failed, skipped, checks: list, figures };
}

// glibc raises its mmap threshold to the largest block freed so far (up to 32 MiB), after
// which freed multi-MiB blocks (async scratch, JS buffers) stay in the heap: RSS then rises
// 25-40 MiB over the first tens of thousands of cycles after any warm-up and stays there,
// with no leak. With the thresholds fixed, large blocks go back to the system when freed
// and RSS follows what is really held. SOAK_MALLOC_DEFAULTS=1 keeps glibc's defaults.
const MALLOC_ENV = { MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_TRIM_THRESHOLD_: '131072' };

function needsMallocReexec() {
  if (process.platform !== 'linux' || process.env.SOAK_MALLOC_DEFAULTS === '1') return false;
  return Object.keys(MALLOC_ENV).some((k) => process.env[k] === undefined);
}

function reexecWithFixedMalloc() {
  const { spawnSync } = require('node:child_process');
  const env = { ...MALLOC_ENV, ...process.env };
  const child = spawnSync(process.execPath, [...process.execArgv, __filename, ...process.argv.slice(2)], { env, stdio: 'inherit' });
  if (child.error) {
    console.error(`soak: could not run node again with fixed malloc thresholds: ${child.error.message}`);
    process.exit(2);
  }
  process.exit(child.status === null ? 2 : child.status);
}

async function main() {
  let result;
  try {
    result = await soak();
  } catch (err) {
    console.error(`soak: could not run: ${err && err.stack ? err.stack : err}`);
    process.exit(2);
  }
  const f = result.figures;
  console.log(`soak: ${f.cycles} cycles in ${f.seconds.toFixed(1)} s after the warm-up (${f.totalSeconds.toFixed(1)} s in all); ${f.counts.allocations} allocations, ${(f.counts.bytesAllocated / 2 ** 30).toFixed(1)} GiB, ${f.counts.freed} freed, ${f.counts.dropped} dropped, ${f.counts.asyncOps} async`);
  console.log(`soak: rss baseline ${f.rssBaselineMiB.toFixed(1)} MiB, end ${f.rssEndMiB.toFixed(1)} MiB (${f.rssEndDeltaMiB >= 0 ? '+' : ''}${f.rssEndDeltaMiB.toFixed(1)}, tolerance ${f.rssToleranceMiB.toFixed(1)}), peak ${f.rssPeakMiB.toFixed(1)} MiB; dropped memory awaiting GC at most ${f.peakGarbageMiB.toFixed(1)} MiB`);
  for (const c of result.checks) {
    const state = c.skipped !== null ? `skipped (${c.skipped})` : c.passed ? 'ok' : `FAILED (${c.failures} of ${c.assertions}): ${c.first}`;
    console.log(`  ${c.passed ? 'ok    ' : c.skipped !== null ? 'skip  ' : 'not ok'} ${c.name}: ${c.assertions} assertions, ${state}`);
  }
  console.log(`${result.passed} passed, ${result.failed} failed, ${result.skipped} skipped`);
  console.log(`SOAK_RESULT ${JSON.stringify({ ok: result.ok, passed: result.passed, failed: result.failed, skipped: result.skipped, checks: result.checks, figures: f })}`);
  process.exitCode = result.ok ? 0 : 1;
}

module.exports = { soak, settings, burstChild, driverMain, BURST_CASES, CHECKS };

if (require.main === module) {
  if (process.argv[2] === '--driver') {
    driverMain(process.argv[3] || 'opencl:cpu').catch((err) => {
      console.log(`driver: threw: ${err && err.stack ? err.stack : err}`);
      process.exit(1);
    });
  } else if (process.argv[2] === '--burst') {
    burstMain(process.argv[3], process.argv[4], Number(process.argv[5])).catch((err) => {
      console.error(err && err.stack ? err.stack : err);
      process.exit(2);
    });
  } else if (needsMallocReexec()) {
    reexecWithFixedMalloc();
  } else {
    main();
  }
}
