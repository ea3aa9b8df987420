// The addon's table of error codes (src/error.rs, exported by the binding) is the one
// truth: the exported ErrorCode, index.d.ts's declarations and the error table of
// docs/errors.md must say exactly what it says, so documentation cannot drift from the code.
// And the README's links (and those of docs/*.md) resolve, in the repository and in the package.
import test from 'ava';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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

test("docs/errors.md's table gives every code once, with the table's classes", (t) => {
  // Rows `| \`ERR_A\`, \`ERR_B\` | Class (why) / Class | meaning |` of the table.
  const rows = read('docs/errors.md')
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

// The links of README.md and docs/*.md: each relative one names a file of the repository
// that the package ships too (so it works on GitHub and in node_modules alike), and each
// #anchor a heading of the file it names. Files only the repository has (ARCHITECTURE.md,
// bench/README.md) are named as `code`, not linked.
const ROOT_URL = new URL('..', import.meta.url);
const DOCUMENTS = ['README.md', ...readdirSync(new URL('docs/', ROOT_URL)).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

/** `[{ target, line }]`: the targets of the markdown links and images of `text`, outside code. */
export function links(text) {
  const found = [];
  let fence = false;
  for (const [i, line] of text.split('\n').entries()) {
    if (/^\s*(```|~~~)/.test(line)) fence = !fence;
    if (fence) continue;
    const prose = line.replace(/`[^`]*`/g, '');
    for (const m of prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)) found.push({ target: m[1], line: i + 1 });
  }
  return found;
}

/** The anchors of a markdown file's headings, as GitHub makes them. */
function anchorsOf(file) {
  const text = read(file).replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1])));
}

function packedFiles() {
  const npm = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: fileURLToPath(ROOT_URL), encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  if (npm.error || npm.status !== 0) return null;
  return new Set(JSON.parse(npm.stdout)[0].files.map((f) => f.path));
}

test('the link checker finds links and images outside code, and no link inside it', (t) => {
  const text = 'a [b](c.md#d) `[no](x.md)` ![img](p.png)\n```\n[no](y.md)\n```\n[e](https://x.y/z)';
  t.deepEqual(links(text).map((l) => l.target), ['c.md#d', 'p.png', 'https://x.y/z']);
});

const packed = packedFiles();
const linkTitle = 'every relative link of README.md and docs/*.md names a file the repository has and the package ships, and an anchor of it';
(packed ? test : test.skip)(packed ? linkTitle : `${linkTitle} [npm pack --dry-run did not run: skipped]`, (t) => {
  let checked = 0;
  for (const file of DOCUMENTS) {
    for (const { target, line } of links(read(file))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const where = `${file}:${line}: ${target}`;
      const [pathPart, anchor] = target.split('#');
      const named = pathPart === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), pathPart));
      t.false(named.startsWith('..'), `${where} leaves the repository`);
      t.true(existsSync(new URL(named, ROOT_URL)) && statSync(new URL(named, ROOT_URL)).isFile(), `${where}: no file ${named}`);
      t.true(packed.has(named), `${where}: ${named} is not in the package (package.json "files")`);
      if (anchor !== undefined && named.endsWith('.md') && existsSync(new URL(named, ROOT_URL))) {
        t.true(anchorsOf(named).has(anchor), `${where}: ${named} has no heading #${anchor}`);
      }
      checked++;
    }
  }
  t.true(checked >= 20, `checked ${checked} links`);
});
