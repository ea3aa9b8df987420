// The README's error table and index.d.ts's DpctlMemoryErrorCode list every code the
// addon can throw (src/error.rs), so the documentation stays in step with the code.
import test from 'ava';
import { readFileSync } from 'node:fs';

const read = (path) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');
const codes = [...new Set(read('src/error.rs').match(/"ERR_[A-Z_]+"/g).map((c) => c.slice(1, -1)))];

test('src/error.rs defines the error codes', (t) => {
  t.true(codes.length >= 25, `found ${codes.length} codes`);
});

test('the exported ErrorCode enum holds exactly those codes', async (t) => {
  const { createRequire } = await import('node:module');
  const { ErrorCode } = createRequire(import.meta.url)('../index.js');
  t.deepEqual(Object.values(ErrorCode).sort(), [...codes].sort());
});

for (const [file, form] of [['README.md', (c) => `\`${c}\``], ['index.d.ts', (c) => `'${c}'`]]) {
  test(`${file} lists every error code`, (t) => {
    const text = read(file);
    const missing = codes.filter((code) => !text.includes(form(code)));
    t.deepEqual(missing, [], `${file} lacks ${missing.join(', ')}`);
  });
}
