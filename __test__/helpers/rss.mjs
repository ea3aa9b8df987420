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
