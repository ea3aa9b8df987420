// The API reference is complete: index.d.ts, which docs/api is generated from, is parsed
// with the TypeScript compiler and every public declaration is checked for a description,
// every parameter for an `@param` with a description, and every function, constructor,
// method and getter for `@throws` lines naming a code of the error table (`ERR_…`),
// except the few that cannot throw, listed below with the reason. Members whose name
// starts with `_` and `private`/`protected` ones are not public and not checked; the
// fields of plain data interfaces (options, statistics) are described where they need it
// and not checked one by one.
import test from 'ava';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ts, typedTest } from './helpers/typescript.mjs';

const typed = typedTest(test);
const DTS = fileURLToPath(new URL('../index.d.ts', import.meta.url));

/**
 * What cannot throw (beyond `ERR_INVALID_THIS` for a call on an object of another class,
 * which each class's description says once), by `Owner.member`, with why.
 */
const CANNOT_THROW = new Map([
  ['*.toString', 'formats what the object holds; also after free() and close()'],
  ['*.toJSON', 'toString()'],
  ['*.[Symbol.dispose]', 'free()/unregister(): idempotent releases'],
  ['USMAllocationError.constructor', 'the error classes take any message and options, as Error does'],
  ['SyclQueueCreationError.constructor', 'as Error'],
  ['SyclDeviceCreationError.constructor', 'as Error'],
  ['_Memory.free', 'idempotent; the binding\'s free has no error path'],
  ['HostRegistration.unregister', 'idempotent'],
  ['SyclDevice.name', 'the device properties are read once, at construction'],
  ['SyclDevice.vendor', 'read at construction'],
  ['SyclDevice.backend', 'read at construction'],
  ['SyclDevice.deviceType', 'read at construction'],
  ['SyclDevice.filterString', 'read at construction'],
  ['SyclDevice.driverVersion', 'read at construction'],
  ['SyclDevice.globalMemSize', 'read at construction'],
  ['SyclDevice.maxMemAllocSize', 'read at construction'],
  ['SyclDevice.localMemSize', 'read at construction'],
  ['SyclDevice.aspects', 'read at construction'],
  ['SyclContext.devices', 'the context\'s own devices; the binding has no failing runtime call there'],
  ['SyclContext.deviceCount', 'the count of those devices, read as `devices` reads them'],
  ['SyclQueue.syclDevice', 'the queue\'s own device, kept after the first read; no failing runtime call'],
  ['SyclQueue.syclContext', 'the queue\'s own context, kept after the first read; no failing runtime call'],
  ['SyclProgram.kernelNames', 'kept from the build'],
  ['SyclProgram.buildLog', 'kept from the build'],
  ['SyclProgram.syclQueue', 'kept from the build'],
  ['SyclKernel.functionName', 'the kernel facts are read once, when getKernel made it'],
  ['SyclKernel.numArgs', 'kernel facts'],
  ['SyclKernel.workGroupSize', 'kernel facts'],
  ['SyclKernel.preferredWorkGroupSizeMultiple', 'kernel facts'],
  ['SyclKernel.privateMemSize', 'kernel facts'],
  ['SyclKernel.localMemSize', 'kernel facts'],
  ['SyclKernel.compileWorkGroupSize', 'kernel facts'],
  ['SyclKernel.args', 'kernel facts'],
  ['SyclKernel.program', 'kept from getKernel'],
  ['KernelArg.type', 'kept from kernelArg'],
  ['KernelArg.value', 'kept from kernelArg'],
  ['SyclEvent.syclQueue', 'kept from the submission'],
  ['IPCMemoryHandle.nbytes', 'kept from construction'],
  ['IPCMemoryHandle.toBytes', 'a copy of bytes kept from construction'],
  ['UcxListener.close', 'idempotent'],
  ['UcxRemoteKey.destroy', 'idempotent; the binding\'s destroy has no error path'],
  ['UcxMemoryMap.unmap', 'idempotent; the binding\'s unmap has no error path'],
  ['getRuntimeDiagnostics', 'lists what did not load; never fails'],
  ['poolStats', 'the binding\'s stats return a string, with no error path'],
  ['poolTrim', 'the binding\'s trim returns a count, with no error path'],
  ['memorySnapshot', 'the binding\'s snapshot returns a string, with no error path'],
  ['ucx.available', 'reports, never throws, whether UCX loads'],
]);

/** The `ERR_` codes of the error table, as index.d.ts lists them. */
function errorCodes(source) {
  const alias = source.statements.find((s) => ts.isTypeAliasDeclaration(s) && s.name.text === 'ErrorCodeValue');
  return new Set(alias.type.types.map((t) => t.literal.text));
}

const isExported = (node) => (ts.getCombinedModifierFlags(node) & ts.ModifierFlags.Export) !== 0;
const isHidden = (node) =>
  (ts.getCombinedModifierFlags(node) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0 ||
  (node.name !== undefined && ts.isIdentifier(node.name) && node.name.text.startsWith('_'));
const commentText = (comment) => (typeof comment === 'string' ? comment : (comment ?? []).map((c) => c.text ?? '').join(''));

/** The doc comment of `node`: its description, its tags. */
function docOf(node) {
  const docs = (node.jsDoc ?? []).filter((d) => ts.isJSDoc(d));
  const doc = docs.at(-1);
  return { description: commentText(doc?.comment).trim(), tags: doc?.tags ?? [] };
}

function memberName(node, source) {
  if (ts.isConstructorDeclaration(node) || ts.isConstructSignatureDeclaration(node)) return 'constructor';
  return node.name.getText(source);
}

/**
 * Every public declaration of index.d.ts to check: `{ where, node, callable, params }`,
 * `callable` true for functions, constructors, methods and getters (what may throw).
 */
function declarations(source) {
  const out = [];
  const classNames = new Set(source.statements.filter((s) => ts.isClassDeclaration(s)).map((s) => s.name.text));
  const callableMember = (owner, member, params) => ({ where: `${owner}.${memberName(member, source)}`, node: member, callable: true, params });
  const visitMembers = (owner, members) => {
    for (const member of members) {
      if (isHidden(member) || member.name?.getText(source) === '__dpctlMemoryCloneGuard__') continue;
      if (ts.isMethodDeclaration(member) || ts.isMethodSignature(member) || ts.isConstructorDeclaration(member)) {
        out.push(callableMember(owner, member, member.parameters));
      } else if (ts.isGetAccessorDeclaration(member)) {
        out.push(callableMember(owner, member, []));
      } else if ((ts.isPropertySignature(member) || ts.isPropertyDeclaration(member)) && member.type && ts.isFunctionTypeNode(member.type)) {
        out.push(callableMember(owner, member, member.type.parameters));
      } else if (ts.isPropertyDeclaration(member)) {
        out.push({ where: `${owner}.${memberName(member, source)}`, node: member, callable: false, params: [] });
      }
    }
  };
  for (const statement of source.statements) {
    if (!isExported(statement)) continue;
    if (ts.isFunctionDeclaration(statement)) {
      out.push({ where: statement.name.text, node: statement, callable: true, params: statement.parameters });
    } else if (ts.isClassDeclaration(statement)) {
      out.push({ where: statement.name.text, node: statement, callable: false, params: [] });
      visitMembers(statement.name.text, statement.members);
    } else if (ts.isInterfaceDeclaration(statement)) {
      // An interface that adds methods to a class (SyclQueue's kernel operations) is the
      // class: its methods are checked, the class carries the description.
      if (classNames.has(statement.name.text)) visitMembers(statement.name.text, statement.members);
      else out.push({ where: statement.name.text, node: statement, callable: false, params: [] });
    } else if (ts.isTypeAliasDeclaration(statement)) {
      out.push({ where: statement.name.text, node: statement, callable: false, params: [] });
    } else if (ts.isVariableStatement(statement)) {
      for (const variable of statement.declarationList.declarations) {
        out.push({ where: variable.name.text, node: statement, callable: false, params: [] });
        // A namespace object (`ucx`, `kernelArg`): its functions are checked as methods.
        if (variable.type && ts.isTypeLiteralNode(variable.type)) {
          visitMembers(
            variable.name.text,
            variable.type.members.filter((m) => ts.isMethodSignature(m) || (ts.isPropertySignature(m) && m.type && ts.isFunctionTypeNode(m.type))),
          );
        }
      }
    }
  }
  return out;
}

function allowed(where) {
  const member = where.slice(where.indexOf('.') + 1);
  return CANNOT_THROW.has(where) || (where.includes('.') && CANNOT_THROW.has(`*.${member}`));
}

/** What the reference lacks, one line per gap. */
function gaps(text) {
  const source = ts.createSourceFile('index.d.ts', text, ts.ScriptTarget.Latest, true);
  const codes = errorCodes(source);
  const out = [];
  for (const { where, node, callable, params } of declarations(source)) {
    const { description, tags } = docOf(node);
    if (description === '') out.push(`${where}: no description`);
    for (const param of params) {
      const name = param.name.getText(source);
      const tag = tags.find((t) => ts.isJSDocParameterTag(t) && t.name.getText(source) === name);
      if (tag === undefined || commentText(tag.comment).replace(/^[\s-]+/, '') === '') out.push(`${where}: no @param description of ${name}`);
    }
    const throws = tags.filter((t) => t.tagName.text === 'throws');
    if (callable && !allowed(where) && throws.length === 0) out.push(`${where}: no @throws`);
    for (const tag of throws) {
      const named = commentText(tag.comment).match(/ERR_[A-Z0-9_]+\*?/g) ?? [];
      if (named.length === 0) out.push(`${where}: an @throws names no ERR_ code`);
      for (const code of named) {
        if (code.endsWith('*') ? ![...codes].some((c) => c.startsWith(code.slice(0, -1))) : !codes.has(code)) {
          out.push(`${where}: @throws names ${code}, which is not in ErrorCodeValue`);
        }
      }
    }
  }
  for (const where of CANNOT_THROW.keys()) {
    if (!where.startsWith('*.') && !declarations(source).some((d) => d.where === where)) out.push(`the allow-list names ${where}, which index.d.ts does not declare`);
  }
  return out;
}

typed('every public declaration of index.d.ts has a description, @param descriptions and @throws with ERR_ codes', (t) => {
  t.deepEqual(gaps(readFileSync(DTS, 'utf8')), []);
});

typed('the reference check finds what is missing', (t) => {
  const text = [
    'export type ErrorCodeValue = \'ERR_A\' | \'ERR_B\'',
    '/** Fine. @param x The x. @throws `ERR_A` when bad. */',
    'export declare function fine(x: number): void',
    'export declare function bare(x: number): void',
    '/** Says nothing of x, throws a code that does not exist.\n * @throws `ERR_NOPE` never. */',
    'export declare function wrong(x: number): void',
    '/** A class. */',
    'export declare class C {',
    '  private constructor()',
    '  /** Described, no throws. */',
    '  get g(): number',
    '  /** Hidden. */',
    '  _internal(): number',
    '}',
  ].join('\n');
  t.deepEqual(gaps(text).filter((line) => !line.startsWith('the allow-list')), [
    'ErrorCodeValue: no description',
    'bare: no description',
    'bare: no @param description of x',
    'bare: no @throws',
    'wrong: no @param description of x',
    'wrong: @throws names ERR_NOPE, which is not in ErrorCodeValue',
    'C.g: no @throws',
  ]);
});
