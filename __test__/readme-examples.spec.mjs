// Every JS example of README.md (and of docs/*.md, and the @example blocks of index.d.ts) runs as written: each ```js, ```javascript,
// ```mjs or ```cjs block is extracted, the package name replaced by this checkout's entry
// point, and run in its own Node process on the CPU device (on the default device where
// there is none, as on a GPU machine without the SYCL runtime); the verdict is its exit
// status and stderr (a timeout is only a hang guard). A block that cannot run alone is
// marked by an HTML comment on the line before its fence, `<!-- example: MARK -->`
// (invisible on GitHub and npm), from MARKS below: `fragment` never runs here; `ucx` runs
// where UCX is available, `gpu` where a GPU is found (scripts/gpu-suite.sh runs this file, so
// both run there), `opencl` where the CPU device is.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import vm from 'node:vm';

const require = createRequire(import.meta.url);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { getDevices, ucx } = require('../index.js');

/** Why a block may not run here; anything else is a typo and fails. */
const MARKS = {
  fragment: 'an excerpt or a signature: needs names it does not define, a second process or a worker',
  ucx: 'needs UCX (runs where ucx.available() says so; on a CUDA device, a UCX with CUDA transports)',
  gpu: 'needs a GPU (runs on the GPU suite)',
  opencl: 'needs the CPU device, an OpenCL device (OpenCL C kernels, or the device named)',
};
const LANGS = new Set(['js', 'javascript', 'mjs', 'cjs']);
/** A hang guard only: a block that runs past it fails as hung, whatever the machine's load. */
const HANG_GUARD_MS = 180_000;

/** The markdown files whose examples are tested: README.md and docs/*.md (docs/api is TypeDoc's, made from index.d.ts). */
function documents() {
  const docs = readdirSync(path.join(ROOT, 'docs')).filter((name) => name.endsWith('.md'));
  return ['README.md', ...docs.map((name) => `docs/${name}`)];
}

/** `[{ file, line, lang, mark, markLine, code }]`: the fenced JS blocks of a markdown file, unindented. */
export function extractBlocks(file, text) {
  const lines = text.split('\n');
  const blocks = [];
  const stray = [];
  for (let i = 0; i < lines.length; i++) {
    const comment = /^\s*<!--\s*example:\s*([^\s>]*)\s*-->\s*$/.exec(lines[i]);
    if (comment) stray.push({ line: i + 1, mark: comment[1] });
    const open = /^(\s*)(`{3,})\s*([\w-]*)[^`]*$/.exec(lines[i]);
    if (!open) continue;
    const [, indent, ticks, lang] = open;
    let end = i + 1;
    while (end < lines.length && !new RegExp(`^\\s*${ticks}\\s*$`).test(lines[end])) end++;
    if (LANGS.has(lang.toLowerCase())) {
      let before = i - 1;
      while (before >= 0 && lines[before].trim() === '') before--;
      const mark = before >= 0 ? /^\s*<!--\s*example:\s*([^\s>]*)\s*-->\s*$/.exec(lines[before]) : null;
      const code = lines
        .slice(i + 1, end)
        .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line.trimStart()))
        .join('\n');
      blocks.push({ file, line: i + 1, lang: lang.toLowerCase(), mark: mark ? mark[1] : null, markLine: mark ? before + 1 : null, code });
    }
    i = end;
  }
  const attached = new Set(blocks.filter((b) => b.markLine).map((b) => b.markLine));
  return { blocks, strayMarks: stray.filter((s) => !attached.has(s.line)) };
}

/** True when `code` uses `await` outside any function (it compiles in an async function, not in a plain one). */
function hasTopLevelAwait(code) {
  const compiles = (wrapped) => {
    try {
      new vm.Script(wrapped);
      return true;
    } catch {
      return false;
    }
  };
  return !compiles(`(function () {\n${code}\n})`) && compiles(`(async function () {\n${code}\n})`);
}

/** 'esm' or 'cjs' as the fence or the code says, or `{ error }` for a block that mixes them. */
export function moduleKind(lang, code) {
  const imports = /^\s*(import\s+(?:[\w$*{][^;]*?\s+from\s+)?['"]|export\s)/m.test(code);
  const esm = imports || hasTopLevelAwait(code);
  const cjs = /\brequire\s*\(|\bmodule\.exports\b/.test(code);
  if (esm && cjs) return { error: 'mixes require() with import or top-level await: neither CommonJS nor an ES module runs it' };
  if (lang === 'mjs' && cjs) return { error: 'a ```mjs block uses require()' };
  if (lang === 'cjs' && esm) return { error: 'a ```cjs block uses import or top-level await' };
  return lang === 'mjs' || esm ? 'esm' : 'cjs';
}

/** The block with `'dpctl-memory'` pointing at this checkout. */
function localized(code, kind) {
  const target = kind === 'esm' ? pathToFileURL(path.join(ROOT, 'index.mjs')).href : path.join(ROOT, 'index.js');
  return code.replace(/(['"])dpctl-memory\1/g, JSON.stringify(target));
}

/** Values the block promises on its `console.log(...); // 42 (why)` lines (numbers and booleans only). */
export function promisedOutputs(code) {
  return [...code.matchAll(/console\.log\(.*\);?[ \t]*\/\/[ \t]*(-?\d+(?:\.\d+)?|true|false)(?=[ \t]*(?:\(.*)?$)/gm)].map((m) => m[1]);
}

function runBlock(block, kind, env) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dpctl-memory-readme-'));
  try {
    const file = path.join(dir, kind === 'esm' ? 'example.mjs' : 'example.cjs');
    writeFileSync(file, localized(block.code, kind));
    return spawnSync(process.execPath, [file], { cwd: dir, env, encoding: 'utf8', timeout: HANG_GUARD_MS, killSignal: 'SIGKILL' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// index.d.ts's @example blocks too (TypeDoc puts them in docs/api): its doc comments'
// lines without their leading ` * `, so that a fence and a mark start their lines.
const dtsText = readFileSync(path.join(ROOT, 'index.d.ts'), 'utf8').replace(/^[ \t]*\* ?/gm, '');
const all = [
  ...documents().map((file) => ({ file, ...extractBlocks(file, readFileSync(path.join(ROOT, file), 'utf8')) })),
  { file: 'index.d.ts', ...extractBlocks('index.d.ts', dtsText) },
];
const blocks = all.flatMap((doc) => doc.blocks);

/** Blocks the GPU suite runs (marked `gpu`), and those that need UCX: `file:line`. */
export const GPU_SUITE_BLOCKS = blocks.filter((b) => b.mark === 'gpu' || b.mark === 'ucx').map((b) => `${b.file}:${b.line}`);

test('the README has JS examples, and every mark is a known one on the line before a JS block', (t) => {
  t.true(blocks.filter((b) => b.file === 'README.md').length >= 5, `found ${blocks.length} blocks`);
  for (const b of blocks) {
    if (b.mark !== null) t.true(Object.hasOwn(MARKS, b.mark), `${b.file}:${b.markLine}: unknown mark "${b.mark}" (known: ${Object.keys(MARKS).join(', ')})`);
  }
  for (const doc of all) {
    for (const s of doc.strayMarks) t.fail(`${doc.file}:${s.line}: <!-- example: ${s.mark} --> is not on the line before a JS block`);
  }
});

test('the checker tells CommonJS from ESM and refuses a block that mixes them', (t) => {
  t.is(moduleKind('js', "const m = require('dpctl-memory');\nm.x();"), 'cjs');
  t.is(moduleKind('js', "import { x } from 'dpctl-memory';\nx();"), 'esm');
  t.is(moduleKind('js', 'const v = await Promise.resolve(1);'), 'esm');
  t.is(moduleKind('js', 'async function f() { await 1; }'), 'cjs');
  t.truthy(moduleKind('js', "const m = require('dpctl-memory');\nawait m.x();").error);
  t.truthy(moduleKind('mjs', "const m = require('dpctl-memory');").error);
  t.deepEqual(promisedOutputs('console.log(a[0]); // 42\nconsole.log(b); // 6 (three times)\nconsole.log(c); // [ 1, 2 ]'), ['42', '6']);
});

const hasCpu = getDevices().some((d) => d.filterString === 'opencl:cpu:0');
// The CPU device where there is one; else the default device.
const cpuEnv = hasCpu ? { ...process.env, ONEAPI_DEVICE_SELECTOR: 'opencl:cpu' } : process.env;
const hasGpu = getDevices().some((d) => d.deviceType === 'gpu' || d.backend === 'cuda');
// UCX examples move device memory: on the default device where there is no CPU device (a
// CUDA GPU) they need a UCX with CUDA transports.
const hasUcx = ucx.available().available && (hasCpu || ucx.info().cudaMemory);

for (const block of blocks) {
  const where = `${block.file}:${block.line}`;
  const title = `${where} (${block.code.split('\n').find((l) => l.trim() && !l.trim().startsWith('//'))?.trim().slice(0, 60)})`;
  if (block.mark === 'fragment') {
    // Not run, but it must still be one kind of module: a user copies it into one file.
    test(`fragment ${title} is valid as CommonJS or ESM alone`, (t) => {
      const kind = moduleKind(block.lang, block.code);
      t.is(typeof kind, 'string', `${where}: ${kind.error}`);
    });
    continue;
  }
  const runs = block.mark === null || (block.mark === 'gpu' && hasGpu) || (block.mark === 'ucx' && hasUcx) || (block.mark === 'opencl' && hasCpu);
  const declare = runs ? test : test.skip;
  if (!runs) console.log(`# ${where} not run: ${MARKS[block.mark]}`);
  declare(`${block.mark ? `${block.mark} ` : ''}${title} runs as written`, (t) => {
    const kind = moduleKind(block.lang, block.code);
    if (typeof kind !== 'string') return t.fail(`${where}: ${kind.error}`);
    const r = runBlock(block, kind, block.mark === 'gpu' ? process.env : cpuEnv);
    if (r.error) return t.fail(`${where}: did not finish (${r.error.code}): hang guard`);
    t.is(r.status, 0, `${where} as ${kind} exited with ${r.status} (${r.signal ?? 'no signal'}):\n${r.stderr}`);
    t.is(r.stderr, '', `${where} wrote to stderr`);
    const lines = r.stdout.split('\n').map((l) => l.trim());
    for (const value of promisedOutputs(block.code)) {
      t.true(lines.includes(value), `${where} promises ${value} on a console.log line; it printed:\n${r.stdout}`);
    }
  });
}
