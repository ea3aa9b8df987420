// Regressions of the reliability review: each defect it found has a test here that
// fails on the code it was found in.
import test from 'ava';
import { eachDeviceKind, queueFor, exporter, freeAll } from './helpers/addon.mjs';

// Defect 1: an interface whose data pointer lies in the slack of a pooled block, with a
// negative offset back into the allocation, was accepted without holding the
// allocation: once freed, its block served a new owner that the stale view could read
// and write. Every size that is not a pool size class has such slack.
eachDeviceKind(test, 'an interface pointing past the end with an offset back in is refused', (t, { Class, device }) => {
  const q = queueFor(device);
  for (const nbytes of [64, 100, 5000]) {
    const base = new Class(nbytes, { queue: q });
    const pastEnd = exporter(base, { data: [base.pointer + BigInt(nbytes), false], shape: [nbytes], offset: -nbytes });
    const err = t.throws(() => new Class(pastEnd));
    t.is(err.code, 'ERR_SUAI_OUT_OF_BOUNDS', `${nbytes} bytes`);
    base.free();
  }
});

eachDeviceKind(test, 'an interface view with a negative offset holds the allocation it reads', (t, { Class, device }) => {
  const q = queueFor(device);
  const base = new Class(64, { queue: q });
  base.memset(0x11);
  const view = new Class(exporter(base, { data: [base.pointer + 32n, false], shape: [64], offset: -32 }));
  base.free();
  // The allocation is still the view's: a new allocation of the same size gets another block.
  const next = new Class(64, { queue: q });
  t.not(next.pointer, view.pointer);
  next.memset(0x22);
  t.deepEqual([...view.copyToHost()], new Array(64).fill(0x11));
  freeAll(view, next);
});
