// The GPU section: our figures on cuda:gpu:0, and the table rows that set them against raw
// CUDA runtime calls through CuPy and PyTorch (bench/peers/cuda_gpu.py, same case ids).
// Our calls are synchronous (they return when the copy is done), so wall time is the measure.
'use strict';
const { sizeLabel, median, runCase, sectionContext, runGetters, getterRows } = require('./lib');
const ipcPipe = require('./ipc-pipe');
const { interleavedCycle } = require('./ipc-interleaved');

function runOurs(addon, cfg, timing) {
  const { q, opts, classes, MemoryUSMDevice, MemoryUSMHost, MemoryUSMShared, ours, node, checks, run } =
    sectionContext(addon, cfg, timing);

  {
    const n = cfg.copySize;
    const lab = sizeLabel(n);
    const pinned = new MemoryUSMHost(n, opts);
    const d1 = new MemoryUSMDevice(n, opts);
    const d2 = new MemoryUSMDevice(n, opts);
    const src = new Uint8Array(n).fill(1); // pageable, touched
    const dst = new Uint8Array(n).fill(0);
    try {
      const pv = new Uint8Array(pinned.buffer);
      pv.fill(2);
      run(`h2d.pinned.${lab}`, () => d1.copyFromDevice(pinned));
      pv.fill(0);
      run(`d2h.pinned.${lab}`, () => pinned.copyFromDevice(d1));
      checks.push([`pinned round trip ${lab}`, pv[0] === 2 && pv[n - 1] === 2]);
      run(`h2d.pinned_view.${lab}`, () => d1.copyFromHost(pinned.buffer));
      run(`d2h.pinned_view.${lab}`, () => d1.copyToHost(pinned.buffer));
      run(`h2d.pageable.${lab}`, () => d1.copyFromHost(src));
      run(`d2h.pageable.${lab}`, () => d1.copyToHost(dst));
      checks.push([`pageable round trip ${lab}`, dst[0] === 1 && dst[n - 1] === 1]);
      d2.memset(0);
      run(`d2d.${lab}`, () => d2.copyFromDevice(d1));
      const back = d2.copyToHost();
      checks.push([`d2d ${lab}`, back[0] === 1 && back[n - 1] === 1]);
    } finally {
      pinned.free();
      d1.free();
      d2.free();
    }
    const sb = Buffer.from(src.buffer);
    const db = Buffer.from(dst.buffer);
    runCase(node, `hostcopy.${lab}`, () => sb.copy(db), timing);
  }

  if (addon.registerHost) {
    // Registered copies of plain buffers against the pinned MemoryUSMHost above (same run).
    const n = cfg.copySize;
    const lab = sizeLabel(n);
    const d = new MemoryUSMDevice(n, opts);
    const src = new Uint8Array(n).fill(4);
    const dst = new Uint8Array(n);
    const registrations = [addon.registerHost(src, opts), addon.registerHost(dst, opts)];
    try {
      run(`h2d.registered.${lab}`, () => d.copyFromHost(src));
      run(`d2h.registered.${lab}`, () => d.copyToHost(dst));
      checks.push([`registered round trip ${lab}`, registrations.every((r) => r.registered) && dst[0] === 4 && dst[n - 1] === 4]);
    } finally {
      for (const r of registrations) r.unregister();
      d.free();
    }
    registrationCost(addon, cfg, opts, ours);
  }

  for (const n of cfg.midSizes) {
    const lab = sizeLabel(n);
    const d = new MemoryUSMDevice(n, opts);
    const src = new Uint8Array(n).fill(5);
    const dst = new Uint8Array(n);
    try {
      run(`h2d.pageable.${lab}`, () => d.copyFromHost(src));
      run(`d2h.pageable.${lab}`, () => d.copyToHost(dst));
      checks.push([`pageable round trip ${lab}`, dst[0] === 5 && dst[n - 1] === 5]);
    } finally {
      d.free();
    }
  }

  {
    const n = cfg.overheadSize;
    const lab = sizeLabel(n);
    const pinned = new MemoryUSMHost(n, opts);
    const d = new MemoryUSMDevice(n, opts);
    const src = new Uint8Array(n).fill(1);
    const dst = new Uint8Array(n);
    try {
      run(`overhead.h2d.pinned.${lab}`, () => d.copyFromDevice(pinned));
      run(`overhead.h2d.pageable.${lab}`, () => d.copyFromHost(src));
      run(`overhead.d2h.pageable.${lab}`, () => d.copyToHost(dst));
    } finally {
      pinned.free();
      d.free();
    }
  }

  for (const kind of cfg.kinds) {
    const C = classes[kind];
    for (const n of cfg.allocSizes) run(`alloc.${kind}.${sizeLabel(n)}`, () => new C(n, opts).free());
  }
  runGetters(addon, opts, run, node, timing);
  runKernels(addon, cfg, { q, opts, MemoryUSMDevice, checks, run });
  const peers = { cupy: {} };
  if (addon.IPCMemoryHandle.isAvailable(q.syclDevice)) runIpc(addon, cfg, timing, { opts, ours, checks, run, cupy: peers.cupy });
  return { ours, node, checks, peers };
}

/** The kernel rows: sync submits (they return when the kernel is done) of the tests' PTX. */
function runKernels(addon, cfg, { q, opts, MemoryUSMDevice, checks, run }) {
  const { kernels } = cfg;
  const ptx = require('node:fs').readFileSync(require('node:path').join(__dirname, '..', kernels.ptx), 'utf8');
  const program = addon.createProgramFromPtx(q, ptx);
  const empty = program.getKernel('empty');
  run('kernel.empty_submit', () => q.submit(empty, [], [1], [1]));
  const n = kernels.saxpyItems;
  const x = new MemoryUSMDevice(n * 4, opts);
  const y = new MemoryUSMDevice(n * 4, opts);
  try {
    x.copyFromHost(new Float32Array(n).fill(1));
    y.memset(0);
    const saxpy = program.getKernel('saxpy');
    const args = [y, x, addon.kernelArg.float32(2), addon.kernelArg.uint32(n)];
    run('kernel.saxpy_submit', () => q.submit(saxpy, args, [n], [kernels.block]));
    checks.push(['kernel.saxpy', new Float32Array(y.copyToHost().buffer)[n - 1] > 0]);
  } finally {
    x.free();
    y.free();
  }
}


/**
 * `registerHost` and `unregister()` of `registerSize` bytes, timed one call each (a
 * batch would register the same bytes twice), `registerRepeats` times.
 */
function registrationCost(addon, cfg, opts, ours) {
  const lab = sizeLabel(cfg.registerSize);
  const buffer = new Uint8Array(cfg.registerSize).fill(1); // touched: resident pages
  const register = [];
  const unregister = [];
  try {
    for (let i = 0; i < cfg.registerRepeats; i++) {
      const t0 = process.hrtime.bigint();
      const r = addon.registerHost(buffer, opts);
      const t1 = process.hrtime.bigint();
      r.unregister();
      const t2 = process.hrtime.bigint();
      register.push(Number(t1 - t0));
      unregister.push(Number(t2 - t1));
    }
  } catch (err) {
    ours[`register.${lab}`] = ours[`unregister.${lab}`] = { error: `${err.code ? `${err.code}: ` : ''}${err.message}` };
    return;
  }
  const record = (samples) => ({ ns: median(samples), min_ns: Math.min(...samples), batch: 1, samples });
  ours[`register.${lab}`] = record(register);
  ours[`unregister.${lab}`] = record(unregister);
}

/**
 * IPC rows: export + open + close of 1 MiB, the open and close in a child process kept
 * alive and driven over FIFOs (bench/ipc-child.js), as the CuPy peer drives its child
 * over pipes; and copies into memory the child opened against the same copies into
 * memory of its own (measured in the child).
 */
function runIpc(addon, cfg, timing, { opts, ours, checks, run, cupy }) {
  const fs = require('node:fs');
  const path = require('node:path');
  const { spawn } = require('node:child_process');
  const { IPCMemoryHandle, MemoryUSMDevice } = addon;
  const { REQUEST, OPS, fifos, cycle, readExact, sendRequest } = ipcPipe;
  const [dir, requests, answers] = fifos('dpctl-memory-ipc-');
  const script = path.join(__dirname, 'ipc-child.js');
  const child = spawn(process.execPath, [script, requests, answers, cfg.filter, JSON.stringify(timing)], { stdio: 'inherit' });
  // Read-write: opening never waits for the child. The answers are opened read-only, so
  // a child that dies is the end of the input, never a read that waits forever.
  const output = fs.openSync(requests, 'r+');
  const input = fs.openSync(answers, 'r');
  const request = Buffer.alloc(REQUEST);
  const mem = new MemoryUSMDevice(1 << 20, opts);
  const large = new MemoryUSMDevice(cfg.copySize, opts);
  try {
    run('ipc.cycle.1MiB', () => cycle(output, input, request, new IPCMemoryHandle(mem).toBytes(), 1 << 20));
    // The cycle's parts: the export alone, one message each way alone, and open + close
    // alone in the child.
    const none = new Uint8Array(64);
    run('ipc.export.1MiB', () => new IPCMemoryHandle(mem).toBytes());
    run('ipc.ping', () => {
      sendRequest(output, request, OPS.ping, none, 0);
      if (readExact(input, 1) === null) throw new Error('the IPC child ended');
    });
    /** The child's length-prefixed JSON answer to `op`. */
    const ask = (op, bytes, nbytes) => {
      sendRequest(output, request, op, bytes, nbytes);
      const length = readExact(input, 4);
      const text = length && readExact(input, length.readUInt32LE(0));
      if (text === null) throw new Error('the IPC child ended before it answered');
      return JSON.parse(text.toString());
    };
    try {
      ours['ipc.openclose.1MiB'] = ask(OPS.loop, new IPCMemoryHandle(mem).toBytes(), 1 << 20);
    } catch (err) {
      ours['ipc.openclose.1MiB'] = { error: err.message };
    }
    // The cycle again, ours and CuPy's in alternating batches on the same CPUs.
    try {
      const both = interleavedCycle(addon, cfg, timing, mem);
      ours['ipc.cycle.same_cpus.1MiB'] = both.ours;
      cupy['ipc.cycle.same_cpus.1MiB'] = both.cupy;
    } catch (err) {
      ours['ipc.cycle.same_cpus.1MiB'] = { error: err.message };
    }
    const { results, check } = ask(OPS.bench, new IPCMemoryHandle(large).toBytes(), cfg.copySize);
    Object.assign(ours, results);
    checks.push([`copies into opened IPC memory ${sizeLabel(cfg.copySize)}`, check]);
  } catch (err) {
    ours[`ipc.h2d.opened.${sizeLabel(cfg.copySize)}`] = { error: err.message };
  } finally {
    sendRequest(output, request, OPS.quit, new Uint8Array(64), 0);
    fs.closeSync(output);
    fs.closeSync(input);
    fs.rmSync(dir, { recursive: true, force: true });
    mem.free();
    large.free();
    if (child.exitCode === null) child.kill();
  }
}

function rows(cfg) {
  const out = [];
  const lab = sizeLabel(cfg.copySize);
  const cupy = (id, name, target) => ({ source: 'cupy', id, name, target });
  const torch = (id, name) => ({ source: 'torch', id, name, target: null });
  const add = (label, ours, metric, peer) => out.push({ label, ours, metric, bytes: metric === 'bw' ? cfg.copySize : undefined, peer });

  add(`H2D pinned ${lab} (dev.copyFromDevice(MemoryUSMHost))`, `h2d.pinned.${lab}`, 'bw', cupy(`h2d.pinned.${lab}`, 'cudaMemcpy pinned (CuPy)', { ratio: 0.95 }));
  add(`H2D pinned ${lab} (dev.copyFromDevice(MemoryUSMHost))`, `h2d.pinned.${lab}`, 'bw', torch(`h2d.pinned.${lab}`, 'torch pinned .cuda()'));
  add(`D2H pinned ${lab} (MemoryUSMHost.copyFromDevice(dev))`, `d2h.pinned.${lab}`, 'bw', cupy(`d2h.pinned.${lab}`, 'cudaMemcpy pinned (CuPy)', { ratio: 0.95 }));
  add(`D2H pinned ${lab} (MemoryUSMHost.copyFromDevice(dev))`, `d2h.pinned.${lab}`, 'bw', torch(`d2h.pinned.${lab}`, 'torch pinned.copy_(gpu)'));
  add(`H2D pinned ${lab} (dev.copyFromHost(host.buffer))`, `h2d.pinned_view.${lab}`, 'bw', cupy(`h2d.pinned.${lab}`, 'cudaMemcpy pinned (CuPy)', null));
  add(`D2H pinned ${lab} (dev.copyToHost(host.buffer))`, `d2h.pinned_view.${lab}`, 'bw', cupy(`d2h.pinned.${lab}`, 'cudaMemcpy pinned (CuPy)', null));
  // Pageable targets (issue 11): 0.9x what the same pipeline reaches in C at 256 MiB, 25 GB/s
  // at 16 MiB, and 1.5x cudaMemcpy from pageable memory in the same run at every size.
  add(`H2D pageable ${lab} (copyFromHost(ArrayBuffer))`, `h2d.pageable.${lab}`, 'bw', cupy(`h2d.pageable.${lab}`, 'cudaMemcpy pageable (CuPy)', { gbps: 43, ratio: 1.5 }));
  add(`H2D pageable ${lab} (copyFromHost(ArrayBuffer))`, `h2d.pageable.${lab}`, 'bw', torch(`h2d.pageable.${lab}`, 'torch pageable .cuda()'));
  add(`D2H pageable ${lab} (copyToHost(ArrayBuffer))`, `d2h.pageable.${lab}`, 'bw', cupy(`d2h.pageable.${lab}`, 'cudaMemcpy pageable (CuPy)', { gbps: 36, ratio: 1.5 }));
  add(`D2H pageable ${lab} (copyToHost(ArrayBuffer))`, `d2h.pageable.${lab}`, 'bw', torch(`d2h.pageable.${lab}`, 'torch .cpu()'));
  add(`D2H pageable ${lab} (copyToHost(ArrayBuffer))`, `d2h.pageable.${lab}`, 'bw', torch(`d2h.pageable_into.${lab}`, 'torch pageable.copy_(gpu)'));
  for (const n of cfg.midSizes) {
    const m = sizeLabel(n);
    const bw = (label, id, name, target) => out.push({ label, ours: id, metric: 'bw', bytes: n, peer: cupy(id, name, target) });
    const target = n === 16 * 1024 * 1024 ? { gbps: 25, ratio: 1.5 } : { ratio: 1.5 };
    bw(`H2D pageable ${m} (copyFromHost(ArrayBuffer))`, `h2d.pageable.${m}`, 'cudaMemcpy pageable (CuPy)', target);
    bw(`D2H pageable ${m} (copyToHost(ArrayBuffer))`, `d2h.pageable.${m}`, 'cudaMemcpy pageable (CuPy)', target);
  }
  const pinnedOurs = (id) => ({ source: 'ours', id, name: 'MemoryUSMHost (ours, same run)', target: { ratio: 0.95 } });
  add(`H2D registered ${lab} (copyFromHost(registerHost(ArrayBuffer)))`, `h2d.registered.${lab}`, 'bw', pinnedOurs(`h2d.pinned.${lab}`));
  add(`D2H registered ${lab} (copyToHost(registerHost(ArrayBuffer)))`, `d2h.registered.${lab}`, 'bw', pinnedOurs(`d2h.pinned.${lab}`));
  const rlab = sizeLabel(cfg.registerSize);
  add(`registerHost ${rlab}`, `register.${rlab}`, 'time', cupy(`register.${rlab}`, 'cudaHostRegister (CuPy), same pages as ours', { ratio: 0.9 }));
  add(`registerHost ${rlab}`, `register.${rlab}`, 'time', cupy(`register_hugepages.${rlab}`, 'cudaHostRegister (CuPy), numpy huge pages', null));
  add(`HostRegistration.unregister() ${rlab}`, `unregister.${rlab}`, 'time', cupy(`unregister.${rlab}`, 'cudaHostUnregister (CuPy)', null));
  add(`D2D ${lab} (copyFromDevice, bytes once)`, `d2d.${lab}`, 'bw', cupy(`d2d.${lab}`, 'cudaMemcpy D2D + sync (CuPy)', null));
  add(`D2D ${lab} (copyFromDevice, bytes once)`, `d2d.${lab}`, 'bw', torch(`d2d.${lab}`, 'torch copy_ + sync'));
  add(`host memcpy ${lab} (Node Buffer.copy, ceiling)`, null, 'bw', { source: 'node', id: `hostcopy.${lab}`, name: 'Node Buffer.copy', target: null });

  const olab = sizeLabel(cfg.overheadSize);
  add(`per call: H2D pinned ${olab}`, `overhead.h2d.pinned.${olab}`, 'time', cupy(`overhead.h2d.pinned.${olab}`, 'cudaMemcpy (CuPy)', { ratio: 1 }));
  add(`per call: H2D pageable ${olab}`, `overhead.h2d.pageable.${olab}`, 'time', cupy(`overhead.h2d.pageable.${olab}`, 'cudaMemcpy (CuPy)', { ratio: 1 }));
  add(`per call: D2H pageable ${olab}`, `overhead.d2h.pageable.${olab}`, 'time', cupy(`overhead.d2h.pageable.${olab}`, 'cudaMemcpy (CuPy)', null));

  const raw = { device: 'cudaMalloc+cudaFree', host: 'cudaHostAlloc+cudaFreeHost', shared: 'cudaMallocManaged+cudaFree' };
  const cached = { device: 'torch.empty cuda (caching)', host: 'torch.empty pinned (caching)' };
  for (const kind of cfg.kinds) {
    for (const n of cfg.allocSizes) {
      const id = `alloc.${kind}.${sizeLabel(n)}`;
      const target = kind === 'host' && n === 1024 * 1024 ? { ratio: 50 } : null;
      add(`alloc+free ${kind} ${sizeLabel(n)}`, id, 'time', cupy(id, `${raw[kind]} (CuPy)`, target));
      // Targets: pooled 4 KiB and 1 MiB of each kind, and large device blocks (256 MiB,
      // 1 GiB: pooled too), at least torch's caching allocator.
      const cachedTarget = n <= 1024 * 1024 || kind === 'device' ? { ratio: 1 } : null;
      if (cached[kind]) add(`alloc+free ${kind} ${sizeLabel(n)}`, id, 'time', { ...torch(id, cached[kind]), target: cachedTarget });
    }
  }
  // The target is on the cycle measured in alternating batches on the same CPUs
  // (bench/ipc-interleaved.js says why); the pairs measured apart stay beside it.
  add('IPC export+open+close 1MiB (open in a child process, messages)', 'ipc.cycle.same_cpus.1MiB', 'time', cupy('ipc.cycle.same_cpus.1MiB', 'the same (CuPy), alternating batches, same CPUs', { ratio: 1 }));
  add('  the same, each pair on its own CPUs', 'ipc.cycle.1MiB', 'time', cupy('ipc.cycle.1MiB', 'ipcGetMemHandle+ipcOpenMemHandle+ipcCloseMemHandle (CuPy, child)', null));
  add('  its part: export alone', 'ipc.export.1MiB', 'time', cupy('ipc.export.1MiB', 'ipcGetMemHandle (CuPy)', null));
  add('  its part: one message each way alone', 'ipc.ping', 'time', cupy('ipc.ping', 'the same over pipes (CuPy peer)', null));
  add('  its part: open+close alone, in the child', 'ipc.openclose.1MiB', 'time', cupy('ipc.openclose.1MiB', 'ipcOpenMemHandle+ipcCloseMemHandle (CuPy, child)', null));
  const same = (id) => ({ source: 'ours', id, name: 'the same copy into ordinary device memory', target: { ratio: 0.95 } });
  add(`H2D pageable ${lab} into opened IPC memory`, `ipc.h2d.opened.${lab}`, 'bw', same(`ipc.h2d.plain.${lab}`));
  add(`D2D ${lab} into opened IPC memory`, `ipc.d2d.opened.${lab}`, 'bw', same(`ipc.d2d.plain.${lab}`));
  // Kernels (issue 18): launch overhead of a sync submit against CuPy's RawKernel call
  // followed by a stream synchronize (target 1x), beside the bare asynchronous call; saxpy
  // over 256 MiB vectors with the same PTX (target 0.95x; bytes moved: x and y read, y
  // written; the H200's HBM3e is 4.8 TB/s).
  add('submit: empty kernel (sync)', 'kernel.empty_submit', 'time', cupy('kernel.empty_submit', 'RawKernel call + stream sync (CuPy)', { ratio: 1 }));
  add('submit: empty kernel (sync)', 'kernel.empty_submit', 'time', cupy('kernel.empty_launch', 'RawKernel call, no wait (CuPy)', null));
  const k = cfg.kernels;
  out.push({ label: `saxpy ${sizeLabel(k.saxpyItems * 4)} vectors (sync submit, GB/s moved)`, ours: 'kernel.saxpy_submit', metric: 'bw', bytes: 3 * 4 * k.saxpyItems, peer: cupy('kernel.saxpy_submit', 'RawKernel saxpy + sync (CuPy, same PTX)', { ratio: 0.95 }) });
  for (const row of getterRows()) out.push(row);
  return out.map((r) => ({ section: 'gpu', ...r }));
}

module.exports = { runOurs, rows, runIpc };
