#!/usr/bin/env node
// `registerHost` against the bare driver's `cuMemHostRegister` (peers/bare_ipc.node, built
// as its source says) on the same touched buffer in the same Node process, alternating, so
// that the registration row's gap to CuPy (a Python buffer) splits into what our call adds
// and what the buffer costs the driver. Prints each side's median and the ratio.
// Env: BENCH_REGISTER_MIB (default 1024), BENCH_REGISTER_ROUNDS (default 6).
'use strict';
const path = require('node:path');
const { getDevices, registerHost, SyclQueue } = require('..');
const { median, MiB } = require('./lib');

const bare = require(path.join(__dirname, 'peers', 'bare_ipc.node'));
const PORTABLE = 1; // CU_MEMHOSTREGISTER_PORTABLE, as registerHost asks
const nbytes = Number(process.env.BENCH_REGISTER_MIB ?? 1024) * MiB;
const rounds = Number(process.env.BENCH_REGISTER_ROUNDS ?? 6);

const device = getDevices().find((d) => d.backend === 'cuda');
if (!device) {
  console.log('bench/register-bare: no CUDA device');
  process.exit(0);
}
const queue = new SyclQueue(device);
bare.init();
const buffer = new Uint8Array(nbytes).fill(1); // touched: resident pages
const ms = (from) => Number(process.hrtime.bigint() - from) / 1e6;
const sides = {
  ours: () => registerHost(buffer, { queue }),
  'driver, flags 0': () => (bare.register(buffer, 0), { unregister: () => bare.unregister(buffer) }),
  'driver, PORTABLE': () => (bare.register(buffer, PORTABLE), { unregister: () => bare.unregister(buffer) }),
};
const times = Object.fromEntries(Object.keys(sides).map((name) => [name, { register: [], unregister: [] }]));
for (let round = 0; round < rounds; round++) {
  const order = Object.keys(sides);
  if (round % 2) order.reverse();
  for (const name of order) {
    let from = process.hrtime.bigint();
    const registration = sides[name]();
    times[name].register.push(ms(from));
    from = process.hrtime.bigint();
    registration.unregister();
    times[name].unregister.push(ms(from));
  }
}
console.log(`register + unregister of ${nbytes / MiB} MiB on ${device.filterString}, ${rounds} alternating rounds (medians)`);
const ours = median(times.ours.register);
for (const [name, t] of Object.entries(times)) {
  const register = median(t.register);
  console.log(
    `  ${name.padEnd(18)} register ${register.toFixed(1)} ms (this / ours ${(register / ours).toFixed(2)}x: above 1, ours is faster)` +
      `  unregister ${median(t.unregister).toFixed(1)} ms`,
  );
}
