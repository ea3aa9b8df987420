// docs/api/ is the API reference TypeDoc generates from index.d.ts (`npm run docs`, with
// typedoc-plugin-markdown: small, diffable markdown). Regenerated here and compared file by
// file with what is checked in, so the reference cannot drift from the declarations.
// TypeDoc is a dev dependency; where it is not installed the test is skipped, visibly.
import test from 'ava';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TYPEDOC = path.join(ROOT, 'node_modules', 'typedoc', 'bin', 'typedoc');
const CHECKED_IN = path.join(ROOT, 'docs', 'api');
const TITLE = 'docs/api is what TypeDoc makes of index.d.ts now (else: npm run docs, and commit docs/api)';

/** Every file under `dir`, by path relative to it, with its text. */
function files(dir) {
  const out = new Map();
  const visit = (sub) => {
    for (const entry of readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = path.join(sub, entry.name);
      if (entry.isDirectory()) visit(rel);
      else out.set(rel, readFileSync(path.join(dir, rel), 'utf8'));
    }
  };
  if (existsSync(dir)) visit('');
  return out;
}

if (!existsSync(TYPEDOC)) {
  test.skip(`${TITLE} [typedoc is not installed: skipped]`, () => {});
} else {
  test(TITLE, async (t) => {
    const out = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-api-'));
    t.teardown(() => rmSync(out, { recursive: true, force: true }));
    await run(process.execPath, [TYPEDOC, '--out', out, '--logLevel', 'Warn'], { cwd: ROOT, maxBuffer: 16 * 2 ** 20 });
    const fresh = files(out);
    const kept = files(CHECKED_IN);
    t.true(fresh.size > 10, `TypeDoc wrote the reference (${fresh.size} files)`);
    const missing = [...fresh.keys()].filter((file) => !kept.has(file));
    const stale = [...kept.keys()].filter((file) => !fresh.has(file));
    const changed = [...fresh.keys()].filter((file) => kept.has(file) && kept.get(file) !== fresh.get(file));
    const drift = [
      ...missing.map((file) => `not checked in: docs/api/${file}`),
      ...stale.map((file) => `no longer generated: docs/api/${file}`),
      ...changed.map((file) => `out of date: docs/api/${file}`),
    ];
    t.deepEqual(drift, [], 'run `npm run docs` and commit docs/api');
  });
}
