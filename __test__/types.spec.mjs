// index.d.ts is exact: a strict consumer (strict, isolatedModules, module nodenext)
// compiles against it, it has no `any`, and it declares exactly the runtime's exports.
import test from 'ava';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { ts, typedTest } from './helpers/typescript.mjs';

const require = createRequire(import.meta.url);
const typed = typedTest(test);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DTS = `${ROOT}index.d.ts`;

typed('a strict nodenext consumer compiles against index.d.ts', (t) => {
  const configPath = `${ROOT}__test__/types/tsconfig.json`;
  const { config } = ts.readConfigFile(configPath, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, `${ROOT}__test__/types`);
  const program = ts.createProgram(parsed.fileNames, parsed.options);
  const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  t.deepEqual(diagnostics, []);
  t.true(program.getSourceFiles().some((f) => f.fileName === DTS), 'the consumer resolved dpctl-memory to index.d.ts');
});

typed('index.d.ts has no any', (t) => {
  const text = readFileSync(DTS, 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
  t.notRegex(text, /\bany\b/);
  t.notRegex(text, /this: unknown/);
});

/** The sorted names a declaration file exports whose symbol has one of `flags`. */
function declaredExports(file, flags) {
  const program = ts.createProgram([file], { strict: true, types: ['node'] });
  const checker = program.getTypeChecker();
  const symbol = checker.getSymbolAtLocation(program.getSourceFile(file));
  return checker
    .getExportsOfModule(symbol)
    .filter((s) => s.flags & flags)
    .map((s) => s.name)
    .sort();
}

typed('index.d.ts declares exactly the values the package exports at run time', (t) => {
  t.deepEqual(declaredExports(DTS, ts.SymbolFlags.Value), Object.keys(require('../index.js')).sort());
});

// lib/binding.d.ts, which lib/*.js are checked against (`tsc -p lib` in npm test), names
// exactly the functions the native binding exports.
const BINDING_DTS = `${ROOT}lib/binding.d.ts`;
typed('lib/binding.d.ts declares exactly the functions of the native binding', (t) => {
  const declared = declaredExports(BINDING_DTS, ts.SymbolFlags.Function);
  const { native } = require('../lib/native.js');
  const exported = Object.getOwnPropertyNames(native).filter((name) => typeof native[name] === 'function').sort();
  t.deepEqual(declared, exported);
});
