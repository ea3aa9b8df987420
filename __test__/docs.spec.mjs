// The addon's table of error codes (src/error.rs, exported by the binding) is the one
// truth: the exported ErrorCode, index.d.ts's declarations and the README's error table
// must say exactly what it says, so documentation cannot drift from the code.
import test from 'ava';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const read = (path) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');
const { native } = require('../lib/native.js');
const { ErrorCode } = require('../index.js');

/** `[{ name, code, classes }]`, as the addon exports it. */
const table = JSON.parse(native.errorCodes());
const sorted = (values) => [...values].sort();

test('the addon exports a table of distinct codes, each with its JS classes', (t) => {
  t.true(table.length >= 25, `found ${table.length} codes`);
  t.is(new Set(table.map((row) => row.code)).size, table.length, 'no code twice');
  t.is(new Set(table.map((row) => row.name)).size, table.length, 'no name twice');
  for (const { name, code, classes } of table) {
    t.regex(code, /^ERR_[A-Z_]+$/, name);
    t.true(classes.length >= 1, `${code} has a class`);
  }
});

test('the exported ErrorCode is that table, frozen', (t) => {
  t.deepEqual({ ...ErrorCode }, Object.fromEntries(table.map(({ name, code }) => [name, code])));
  t.true(Object.isFrozen(ErrorCode));
});

/** The body of `export type NAME =` or `export declare const NAME: {`, up to its end. */
function declaration(text, start, end) {
  const from = text.indexOf(start);
  if (from < 0) return null;
  return text.slice(from + start.length, text.indexOf(end, from + start.length));
}

test("index.d.ts's ErrorCodeValue lists exactly the table's codes", (t) => {
  const body = declaration(read('index.d.ts'), 'export type ErrorCodeValue =', '\n\n');
  t.truthy(body, 'index.d.ts declares ErrorCodeValue');
  const declared = [...body.matchAll(/\|\s*'([A-Z_]+)'/g)].map((m) => m[1]);
  t.deepEqual(sorted(declared), sorted(table.map((row) => row.code)));
});

test("index.d.ts's ErrorCode declares exactly the table's names and codes", (t) => {
  const body = declaration(read('index.d.ts'), 'export declare const ErrorCode: {', '\n}');
  t.truthy(body, 'index.d.ts declares ErrorCode');
  const declared = Object.fromEntries([...body.matchAll(/readonly (\w+): '([A-Z_]+)'/g)].map((m) => [m[1], m[2]]));
  t.deepEqual(declared, Object.fromEntries(table.map(({ name, code }) => [name, code])));
});

test("the README's error table gives every code once, with the table's classes", (t) => {
  // Rows `| \`ERR_A\`, \`ERR_B\` | Class (why) / Class | meaning |` of the section's table.
  const rows = read('README.md')
    .split('\n')
    .filter((line) => /^\| `ERR_/.test(line))
    .map((line) => line.split('|').map((cell) => cell.trim()));
  const documented = new Map();
  for (const [, codes, classes] of rows) {
    const names = classes
      .replace(/\([^)]*\)/g, '')
      .split('/')
      .map((name) => name.trim());
    for (const [, code] of codes.matchAll(/`(ERR_[A-Z_]+)`/g)) {
      t.false(documented.has(code), `${code} has one row`);
      documented.set(code, names);
    }
  }
  t.deepEqual(sorted(documented.keys()), sorted(table.map((row) => row.code)), 'the same codes');
  for (const { code, classes } of table) {
    t.deepEqual(documented.get(code), classes, `${code}'s class`);
  }
});

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

test("the README's table of contents lists every section, in order, and every link to a heading resolves", (t) => {
  const text = read('README.md').replace(/```[\s\S]*?```/g, '');
  const sections = [...text.matchAll(/^## (.+)$/gm)].map((m) => m[1]).filter((title) => title !== 'Contents');
  const contents = declaration(text, '## Contents\n', '\n## ');
  t.truthy(contents, 'the README has a "## Contents" section');
  const listed = [...contents.matchAll(/^- \[([^\]]+)\]\(#([^)]+)\)/gm)].map((m) => ({ title: m[1], anchor: m[2] }));
  t.deepEqual(
    listed.map(({ title }) => title),
    sections,
    'each "## " section is listed in Contents as "- [Title](#anchor)", in the order of the README',
  );
  for (const { title, anchor } of listed) t.is(anchor, slug(title), `the anchor of "${title}"`);
  const anchors = new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1])));
  for (const [, anchor] of text.matchAll(/\]\(#([^)]+)\)/g)) t.true(anchors.has(anchor), `#${anchor} names a heading`);
});
