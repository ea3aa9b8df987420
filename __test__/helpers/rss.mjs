// RSS once garbage is collected and the finalizers of the collected objects have run (ava
// runs without --expose-gc: the flag is set here and the collector taken from a context).
import v8 from 'node:v8';
import vm from 'node:vm';
import { setImmediate as tick } from 'node:timers/promises';

v8.setFlagsFromString('--expose-gc');
export const gc = vm.runInNewContext('gc');

/** Resident bytes after three collections, each followed by a turn of the event loop. */
export async function settledRss() {
  for (let i = 0; i < 3; i++) {
    gc();
    await tick();
  }
  return process.memoryUsage().rss;
}

/**
 * Runs `round` (async) `warmup` times, then `rounds` more, and returns RSS over the settled
 * figure after the warm-up, in MiB, after each of those rounds: a leak grows it round by
 * round, where first-use growth (the runtime's, the slabs', V8's) has levelled off.
 */
export async function rssGrowthOver(round, { warmup = 2, rounds = 4 } = {}) {
  for (let i = 0; i < warmup; i++) await round();
  const base = await settledRss();
  const seen = [];
  for (let i = 0; i < rounds; i++) {
    await round();
    seen.push(((await settledRss()) - base) / 2 ** 20);
  }
  return seen;
}
