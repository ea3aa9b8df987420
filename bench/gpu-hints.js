#!/usr/bin/env node
// The GPU figures that need awaiting or a derived number, printed as a table:
// - prefetch proxy: a device-side copyFromDevice out of 256 MiB of shared (managed) memory
//   the CPU has just written, with and without an awaited prefetch() to the device first
//   (kernel-free: the copy engine reads the pages where they are, or faults them over);
// - registerHost: register and unregister of 1 GiB, 1 GiB copies pageable (staged) and
//   registered, and after how many reuses a registration pays for itself.
// Usage, from the repository root with the addon built: node bench/gpu-hints.js
'use strict';
const { MiB, sizeLabel, median } = require('./lib');

const REPEATS = Number(process.env.HINTS_REPEATS || 7);

function timeNs(fn) {
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0);
}

async function prefetchProxy(m, queue, n) {
  const shared = new m.MemoryUSMShared(n, { queue });
  const dev = new m.MemoryUSMDevice(n, { queue });
  const host = new Uint8Array(shared.buffer);
  const without = [];
  const withPrefetch = [];
  let applied = false;
  try {
    for (let i = 0; i < REPEATS; i++) {
      host.fill(i & 0xff); // the pages are on the host now
      without.push(timeNs(() => dev.copyFromDevice(shared)));
      host.fill((i + 1) & 0xff);
      applied = (await shared.prefetch()).applied;
      withPrefetch.push(timeNs(() => dev.copyFromDevice(shared)));
    }
    const back = dev.copyToHost();
    if (back[0] !== (REPEATS & 0xff) || back[n - 1] !== (REPEATS & 0xff)) throw new Error('prefetch proxy: wrong bytes');
  } finally {
    dev.free();
    shared.free();
  }
  return { without: median(without), withPrefetch: median(withPrefetch), applied };
}

function registration(m, queue, n) {
  const buffer = new Uint8Array(n).fill(1);
  const dev = new m.MemoryUSMDevice(n, { queue });
  const reg = [];
  const unreg = [];
  const pageable = [];
  const registered = [];
  try {
    for (let i = 0; i < REPEATS; i++) pageable.push(timeNs(() => dev.copyFromHost(buffer)));
    for (let i = 0; i < REPEATS; i++) {
      let r;
      reg.push(timeNs(() => (r = m.registerHost(buffer, { queue }))));
      if (!r.registered) throw new Error('registerHost: the runtime did not register');
      registered.push(timeNs(() => dev.copyFromHost(buffer)));
      unreg.push(timeNs(() => r.unregister()));
    }
  } finally {
    dev.free();
  }
  return { register: median(reg), unregister: median(unreg), pageable: median(pageable), registered: median(registered) };
}

async function main() {
  const m = require('..');
  const gpu = m.getDevices().find((d) => d.backend === 'cuda');
  if (!gpu) {
    console.log('gpu-hints: no CUDA device');
    return;
  }
  const queue = new m.SyclQueue(gpu);
  console.log(`gpu-hints on ${gpu.name} (${gpu.filterString}), median of ${REPEATS}`);
  const n = 256 * MiB;
  const p = await prefetchProxy(m, queue, n);
  const ms = (ns) => `${(ns / 1e6).toFixed(2)} ms`;
  const gbps = (bytes, ns) => `${(bytes / ns).toFixed(1)} GB/s`;
  console.log(`prefetch proxy ${sizeLabel(n)}: copyFromDevice(shared) after host writes ${ms(p.without)} (${gbps(n, p.without)}), ` +
    `after prefetch() ${ms(p.withPrefetch)} (${gbps(n, p.withPrefetch)}): ${(p.without / p.withPrefetch).toFixed(2)}x, applied ${p.applied}`);
  const g = 1024 * MiB;
  const r = registration(m, queue, g);
  const saved = r.pageable - r.registered;
  const reuses = saved > 0 ? Math.ceil((r.register + r.unregister) / saved) : Infinity;
  console.log(`registerHost ${sizeLabel(g)}: register ${ms(r.register)}, unregister ${ms(r.unregister)}`);
  console.log(`H2D ${sizeLabel(g)}: pageable (staged) ${ms(r.pageable)} (${gbps(g, r.pageable)}), registered ${ms(r.registered)} (${gbps(g, r.registered)})`);
  console.log(`registration pays after ${reuses} copies of ${sizeLabel(g)} (register+unregister / time saved per copy)`);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
