// @ts-check
'use strict';
// Kernels (dpctl's `dpctl.program` and `SyclQueue.submit`): programs built from OpenCL C,
// SPIR-V, PTX or CUDA C, their kernels, typed kernel arguments, submissions and their
// events, and the queue's own asynchronous operations (memcpy, fill, barrier). A
// submission holds the memory of its arguments until the runtime says it finished: the
// binding's model does that; this file keeps the JS values (the memory objects, the
// kernel) reachable until a submission's Promise settles.
const { native } = require('./native.js');
const { ErrorCode, BINDING, makeError, typeError, rangeError, fromNative, callNative, invalidThis, CLONE_GUARD } = require('./errors.js');
const { display, typeName, stringArg, hostArg, isArray, isRevoked, listOf, arrayState, readOptions } = require('./values.js');
const devices = require('./device.js');
const memory = require('./memory.js');

const { SyclQueue, isQueue, queueHandle, sameContext, INTERNAL } = devices;
const { Error, Object, Number, BigInt, Float64Array, Uint32Array, Uint16Array, Uint8Array, DataView, ArrayBuffer, FinalizationRegistry, WeakMap, Promise, Symbol, Reflect, JSON, String, Math } = globalThis;
const { isSafeInteger, isInteger } = Number;
const freeze = Object.freeze;
const defineProperty = Object.defineProperty;
const keys = Object.keys;
const apply = Reflect.apply;
const arrayJoin = Array.prototype.join;
const register = FinalizationRegistry.prototype.register;
const promiseThen = Promise.prototype.then;
const inspect = Symbol.for('nodejs.util.inspect.custom');

const PROGRAM_HANDLE = 0;
const KERNEL_HANDLE = 1;
const EVENT_HANDLE = 2;
const registries = [PROGRAM_HANDLE, KERNEL_HANDLE, EVENT_HANDLE].map(
  (kind) => new FinalizationRegistry((id) => native.kernelsRelease(kind, id)),
);
function own(owner, kind, id) {
  if (id !== COMPLETED_WITHOUT_EVENT) apply(register, registries[kind], [owner, id]);
  return id;
}

/** The binding's id of a finished synchronous operation whose queue records no profiling
 * times: its SyclEvent is complete and holds no native event. */
const COMPLETED_WITHOUT_EVENT = -1;

// ---------------------------------------------------------------------------------------
// The binding's array arguments
// ---------------------------------------------------------------------------------------

// Views of one off-heap buffer for the typed arrays a submission hands the binding. A typed
// array small enough for V8 to keep on its heap gets a backing store made for it whenever
// native code reads it: a few such allocations a call were much of a sync submit's cost.
// A call made while another is encoding (a memory argument's interface getter, or an
// array's, can run user code that submits again) gets fresh arrays instead.
/** An arena of one typed array, handed out in views from `used` on. */
const arena = (array) => ({ array, used: 0 });
const marshalScratch = { f64: arena(new Float64Array(1024)), u32: arena(new Uint32Array(512)), busy: false };

/** `run(taken)` with the scratch reset for it, or with `null` while a call in progress
 * holds it; the scratch is free again however `run` ends. */
function withScratch(run) {
  if (marshalScratch.busy) return run(null);
  marshalScratch.busy = true;
  marshalScratch.f64.used = 0;
  marshalScratch.u32.used = 0;
  try {
    return run(marshalScratch);
  } finally {
    marshalScratch.busy = false;
  }
}

/** `n` zeros of the arena's type, a view of it where it has room, else a new array. */
function arenaView(from, n, Type) {
  if (from === null || from.used + n > from.array.length) return new Type(n);
  const view = from.array.subarray(from.used, from.used + n);
  view.fill(0);
  from.used += n;
  return view;
}

const f64Array = (taken, n) => arenaView(taken === null ? null : taken.f64, n, Float64Array);
const u32Array = (taken, n) => arenaView(taken === null ? null : taken.u32, n, Uint32Array);

const call = callNative;

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

/** A program that did not build: `log` is the compiler's log (also in the message). */
class SyclProgramCompilationError extends Error {
  constructor(message, log = '') {
    super(log ? `${message}\n${log}` : message);
    defineProperty(this, 'code', { value: ErrorCode.ProgramCompilation, writable: true, enumerable: true, configurable: true });
    defineProperty(this, 'log', { value: String(log), writable: true, enumerable: true, configurable: true });
  }
  get name() {
    return 'SyclProgramCompilationError';
  }
}

// ---------------------------------------------------------------------------------------
// Typed kernel arguments
// ---------------------------------------------------------------------------------------

/** Scalar types in the order of the binding's `ScalarType::ALL`. */
const SCALAR_TYPES = ['int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64', 'float32', 'float64', 'float16'];
/** Bytes of each scalar type, by index. */
const SCALAR_SIZES = [1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 2];
const INT_LIMITS = {
  int8: [-128, 127],
  uint8: [0, 255],
  int16: [-32768, 32767],
  uint16: [0, 65535],
  int32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
};

let argFacts;
let isKernelArg;

/** The kind code of a KernelArg (`KernelArg`'s `#kind`) and of a memory argument, as the
 * binding's `spec` takes them; 0 is no argument (an unfilled slot), which it refuses. */
const SPEC_SCALAR = 1;
const SPEC_LOCAL = 2;
const SPEC_MEMORY = 3;

/** One typed kernel argument: a scalar of a given type, or work-group local memory. */
class KernelArg {
  __dpctlMemoryCloneGuard__ = CLONE_GUARD;
  #kind; // 1 scalar, 2 local
  #type;
  #lo;
  #hi;
  #value;

  constructor(token, kind, type, lo, hi, value) {
    if (token !== INTERNAL) throw typeError('KernelArg objects are made by kernelArg.int32(5), kernelArg.local(256), ...', ErrorCode.ConstructCallRequired);
    this.#kind = kind;
    this.#type = type;
    this.#lo = lo;
    this.#hi = hi;
    this.#value = value;
    freeze(this);
  }
  /** `'int8'` ... `'float64'`, or `'local'`. */
  get type() {
    if (!isKernelArg(this)) throw invalidThis('KernelArg', 'type');
    return this.#kind === 2 ? 'local' : SCALAR_TYPES[this.#type];
  }
  /** The value (a number or bigint), or the bytes of local memory. */
  get value() {
    if (!isKernelArg(this)) throw invalidThis('KernelArg', 'value');
    return this.#value;
  }
  /** `[type, value]` as text, read from the private fields (no public getter runs). */
  static #shown(self, member) {
    if (!isKernelArg(self)) throw invalidThis('KernelArg', member);
    const type = self.#kind === SPEC_LOCAL ? 'local' : SCALAR_TYPES[self.#type];
    return [type, typeof self.#value === 'bigint' ? `${self.#value}n` : `${self.#value}`];
  }
  toString() {
    const [type, value] = KernelArg.#shown(this, 'toString');
    return `<KernelArg ${type} ${value}>`;
  }
  [inspect]() {
    const [type, value] = KernelArg.#shown(this, 'inspect');
    return `KernelArg { type: '${type}', value: ${value} }`;
  }
  static {
    isKernelArg = (value) => typeof value === 'object' && value !== null && #kind in value;
    // The validated private value: what a replaced `value` getter returns never reaches the binding.
    argFacts = (arg) => [arg.#kind, arg.#type, arg.#lo, arg.#hi, arg.#value];
  }
}

const scratch = new DataView(new ArrayBuffer(8));
const U64 = 2n ** 64n;

function integerScalar(type, value) {
  const [min, max] = INT_LIMITS[type];
  if (typeof value === 'bigint') {
    if (value < BigInt(min) || value > BigInt(max)) throw rangeError(`kernelArg.${type}: ${value}n is outside ${min}..${max}`, ErrorCode.KernelArgType);
    value = Number(value);
  } else if (typeof value !== 'number') {
    throw typeError(`kernelArg.${type} takes a number, not ${typeName(value)}`, ErrorCode.KernelArgType);
  } else if (!isInteger(value) || value < min || value > max) {
    throw rangeError(`kernelArg.${type}: ${display(value)} is not an integer in ${min}..${max}`, ErrorCode.KernelArgType);
  }
  const index = SCALAR_TYPES.indexOf(type);
  const lo = value < 0 ? (value + 2 ** (8 * [1, 1, 2, 2, 4, 4][index])) >>> 0 : value >>> 0;
  return new KernelArg(INTERNAL, 1, index, lo, 0, value);
}

function wideScalar(type, value) {
  const signed = type === 'int64';
  let big;
  if (typeof value === 'bigint') big = value;
  else if (typeof value === 'number' && isSafeInteger(value)) big = BigInt(value);
  else if (typeof value === 'number') throw rangeError(`kernelArg.${type}: ${display(value)} is not a safe integer (pass a bigint)`, ErrorCode.KernelArgType);
  else throw typeError(`kernelArg.${type} takes a bigint or a safe integer, not ${typeName(value)}`, ErrorCode.KernelArgType);
  const [min, max] = signed ? [-(2n ** 63n), 2n ** 63n - 1n] : [0n, U64 - 1n];
  if (big < min || big > max) throw rangeError(`kernelArg.${type}: ${big}n is outside ${min}..${max}`, ErrorCode.KernelArgType);
  const bits = big < 0n ? big + U64 : big;
  return new KernelArg(INTERNAL, 1, SCALAR_TYPES.indexOf(type), Number(bits & 0xffffffffn), Number(bits >> 32n), big);
}

function floatScalar(type, value) {
  if (typeof value !== 'number') throw typeError(`kernelArg.${type} takes a number, not ${typeName(value)}`, ErrorCode.KernelArgType);
  if (type === 'float32') {
    scratch.setFloat32(0, value, true);
    return new KernelArg(INTERNAL, 1, 8, scratch.getUint32(0, true), 0, value);
  }
  scratch.setFloat64(0, value, true);
  return new KernelArg(INTERNAL, 1, 9, scratch.getUint32(0, true), scratch.getUint32(4, true), value);
}

// Halves are rounded by Float16Array where this Node has one (feature-detected, at load).
const half = typeof globalThis.Float16Array === 'function' ? new globalThis.Float16Array(1) : undefined;
const halfBits = half === undefined ? undefined : new Uint16Array(half.buffer);

/** A `half` (OpenCL C, with the device's cl_khr_fp16): the value rounded as a Float16Array
 * element rounds it. */
function halfScalar(value) {
  if (half === undefined || halfBits === undefined) {
    throw typeError(`kernelArg.float16 needs Float16Array, which Node ${process.version} lacks (Node 24 and later have it)`, ErrorCode.KernelArgType);
  }
  if (typeof value !== 'number') throw typeError(`kernelArg.float16 takes a number, not ${typeName(value)}`, ErrorCode.KernelArgType);
  half[0] = value;
  return new KernelArg(INTERNAL, 1, 10, halfBits[0], 0, value);
}

/**
 * Typed kernel arguments: a JS number does not say whether a kernel takes `int` or
 * `float`, so each scalar says it here (checked against the kernel's declared parameter
 * types where the runtime reports them).
 */
const kernelArg = freeze({
  int8: (value) => integerScalar('int8', value),
  uint8: (value) => integerScalar('uint8', value),
  int16: (value) => integerScalar('int16', value),
  uint16: (value) => integerScalar('uint16', value),
  int32: (value) => integerScalar('int32', value),
  uint32: (value) => integerScalar('uint32', value),
  int64: (value) => wideScalar('int64', value),
  uint64: (value) => wideScalar('uint64', value),
  float32: (value) => floatScalar('float32', value),
  float64: (value) => floatScalar('float64', value),
  /** A `half`, rounded as a Float16Array element (Node 24+; a coded error elsewhere); a
   * kernel parameter of that type needs a device with half precision (cl_khr_fp16). */
  float16: (value) => halfScalar(value),
  /** `nbytes` of work-group local memory: an OpenCL `__local` parameter; on CUDA, after the
   * kernel's parameters, the launch's dynamic shared memory. */
  local(nbytes) {
    if (typeof nbytes !== 'number' || !isSafeInteger(nbytes) || nbytes <= 0) {
      throw rangeError(`kernelArg.local takes a positive integer number of bytes, not ${display(nbytes)}`, ErrorCode.KernelArgType);
    }
    // Checked against the device's local memory at submission (ERR_INVALID_SIZE).
    return new KernelArg(INTERNAL, SPEC_LOCAL, 0, 0, 0, nbytes);
  },
});

// ---------------------------------------------------------------------------------------
// Programs and kernels
// ---------------------------------------------------------------------------------------

let programHandle;
let isProgram;
let kernelHandle;
let isKernel;
let kernelFacts;

/** A built program (dpctl's `SyclProgram`): its kernels by name. */
class SyclProgram {
  __dpctlMemoryCloneGuard__ = CLONE_GUARD;
  #handle;
  #queue;
  #names;
  #log;

  constructor(token, handle, queue, names, log) {
    if (token !== INTERNAL) {
      throw typeError('SyclProgram objects are made by createProgramFromSource() or createProgramFromSpirv()', ErrorCode.ConstructCallRequired);
    }
    this.#handle = own(this, PROGRAM_HANDLE, handle);
    this.#queue = queue;
    this.#names = freeze(names);
    this.#log = log;
  }
  static #of(self, member) {
    if (!isProgram(self)) throw invalidThis('SyclProgram', member);
    return self;
  }
  /** The kernel `name` (`ERR_KERNEL_NOT_FOUND` when the program has none). */
  getKernel(name) {
    const self = SyclProgram.#of(this, 'getKernel');
    const text = stringArg(name, 'kernel name');
    // No kernel's name holds a NUL (C would read the name only up to it).
    if (text.includes('\0')) throw makeError('Error', `the program has no kernel named ${JSON.stringify(text.slice(0, 64))}`, ErrorCode.KernelNotFound);
    const id = call(() => native.programKernel(self.#handle, text));
    return new SyclKernel(INTERNAL, id, self);
  }
  hasKernel(name) {
    const self = SyclProgram.#of(this, 'hasKernel');
    const text = stringArg(name, 'kernel name');
    return !text.includes('\0') && call(() => native.programHasKernel(self.#handle, text));
  }
  /** The names of its kernels (a new array on every read). */
  get kernelNames() {
    return [...SyclProgram.#of(this, 'kernelNames').#names];
  }
  /** The compiler's log of a successful build (warnings; often empty). */
  get buildLog() {
    return SyclProgram.#of(this, 'buildLog').#log;
  }
  /** The queue the program was built with (its context and device). */
  get syclQueue() {
    return SyclProgram.#of(this, 'syclQueue').#queue;
  }
  toString() {
    return `<SyclProgram [${SyclProgram.#of(this, 'toString').#names.join(', ')}]>`;
  }
  [inspect]() {
    return `SyclProgram { kernels: [${SyclProgram.#of(this, 'inspect').#names.map((n) => `'${n}'`).join(', ')}] }`;
  }
  static {
    isProgram = (value) => typeof value === 'object' && value !== null && #handle in value;
    programHandle = (program) => program.#handle;
  }
}

/** A kernel of a program (dpctl's `SyclKernel`), with the facts the runtime reports. */
class SyclKernel {
  __dpctlMemoryCloneGuard__ = CLONE_GUARD;
  #handle;
  #program;
  #facts;

  constructor(token, handle, program) {
    if (token !== INTERNAL) throw typeError('SyclKernel objects are made by program.getKernel(name)', ErrorCode.ConstructCallRequired);
    this.#handle = own(this, KERNEL_HANDLE, handle);
    this.#program = program;
    const facts = JSON.parse(native.kernelFacts(handle));
    for (const arg of facts.args) freeze(arg);
    freeze(facts.args);
    freeze(facts.compileWorkGroupSize);
    this.#facts = freeze(facts);
  }
  static #factsOf(self, member) {
    if (!isKernel(self)) throw invalidThis('SyclKernel', member);
    return self.#facts;
  }
  get functionName() {
    return SyclKernel.#factsOf(this, 'functionName').functionName;
  }
  get numArgs() {
    return SyclKernel.#factsOf(this, 'numArgs').numArgs;
  }
  /** The largest work-group the kernel can run with on its device. */
  get workGroupSize() {
    return SyclKernel.#factsOf(this, 'workGroupSize').workGroupSize;
  }
  get preferredWorkGroupSizeMultiple() {
    return SyclKernel.#factsOf(this, 'preferredWorkGroupSizeMultiple').preferredWorkGroupSizeMultiple;
  }
  /** Bytes of private memory per work item. */
  get privateMemSize() {
    return SyclKernel.#factsOf(this, 'privateMemSize').privateMemSize;
  }
  /** Bytes of local memory the kernel itself uses. */
  get localMemSize() {
    return SyclKernel.#factsOf(this, 'localMemSize').localMemSize;
  }
  /** `reqd_work_group_size` of the kernel, or `[0, 0, 0]`. */
  get compileWorkGroupSize() {
    return SyclKernel.#factsOf(this, 'compileWorkGroupSize').compileWorkGroupSize;
  }
  /** Each parameter as the runtime reports it: `{ kind, typeName }`, `kind` one of
   * `'global'`, `'local'`, `'value'`, `'unknown'`. */
  get args() {
    return SyclKernel.#factsOf(this, 'args').args;
  }
  get program() {
    SyclKernel.#factsOf(this, 'program');
    return this.#program;
  }
  toString() {
    return `<SyclKernel ${SyclKernel.#factsOf(this, 'toString').functionName}(${this.#facts.numArgs} args)>`;
  }
  [inspect]() {
    const facts = SyclKernel.#factsOf(this, 'inspect');
    return `SyclKernel { functionName: '${facts.functionName}', numArgs: ${facts.numArgs} }`;
  }
  static {
    isKernel = (value) => typeof value === 'object' && value !== null && #handle in value;
    kernelHandle = (kernel) => kernel.#handle;
    kernelFacts = (kernel) => kernel.#facts;
  }
}

const FORMATS = { source: 1, spirv: 2, ptx: 3, cuda: 4 };

/**
 * The `options` build option of `{ options }` (and of `extra` keys, read by the caller):
 * `text`, one string (an array's elements joined by spaces), and `list`, one compiler
 * argument each (an array's elements as given, a string's words).
 */
function readBuildOptions(options, method, extra = []) {
  if (options === undefined || options === null) return { text: '', list: [] };
  if (typeof options !== 'object' || isRevoked(options) || isArray(options)) throw typeError(`${method} options must be a plain object such as { options: '-cl-fast-relaxed-math' }, not ${typeName(options)}`);
  const names = keys(options);
  for (let i = 0; i < names.length; i++) {
    if (names[i] !== 'options' && !extra.includes(names[i])) throw typeError(`unknown option '${names[i].slice(0, 64)}': ${method} takes { ${['options', ...extra].join(', ')} }`);
  }
  const value = options.options;
  if (value === undefined) return { text: '', list: [] };
  if (typeof value === 'string') {
    compilerString(value, method, 'the build options');
    return { text: value, list: value.split(/\s+/).filter((word) => word !== '') };
  }
  if (isArray(value)) {
    // Each option read once: the strings checked are the strings joined.
    const list = stringList(value, method, 'the build options');
    return { text: apply(arrayJoin, list, [' ']), list };
  }
  throw typeError(`${method}: options must be a string or an array of strings, not ${typeName(value)}`);
}

/** The build options of `{ options }` as one string. */
const buildOptions = (options, method) => readBuildOptions(options, method).text;

function build(queue, format, source, options, method) {
  return built(queue, method, (handle) => native.programBuild(handle, format, source, options));
}

/** The program `make(queueHandle)` builds (the binding's JSON), or its build failure thrown. */
function built(queue, method, make) {
  if (!isQueue(queue)) throw typeError(`${method}: the first argument must be a SyclQueue, not ${display(queue)}`);
  const handle = queueHandle(queue);
  const result = JSON.parse(call(() => make(handle)));
  if (result.failed !== undefined) throw new SyclProgramCompilationError(result.failed, result.log);
  return new SyclProgram(INTERNAL, result.id, queue, result.names, result.log);
}

/** dpctl's `create_program_from_source`: OpenCL C for a SYCL device of the OpenCL backend. */
function createProgramFromSource(queue, source, options) {
  const flags = buildOptions(options, 'createProgramFromSource');
  if (typeof source !== 'string') throw typeError(`createProgramFromSource: the source must be a string, not ${typeName(source)}`);
  return build(queue, FORMATS.source, source, flags, 'createProgramFromSource');
}

/** dpctl's `create_program_from_spirv`: a SPIR-V module (bytes) for a SYCL device. */
function createProgramFromSpirv(queue, bytes, options) {
  const flags = buildOptions(options, 'createProgramFromSpirv');
  return build(queue, FORMATS.spirv, hostArg(bytes, 'createProgramFromSpirv: the SPIR-V module'), flags, 'createProgramFromSpirv');
}

/** PTX text for a CUDA device (the driver compiles it for the GPU it has). */
function createProgramFromPtx(queue, ptx, options) {
  const flags = buildOptions(options, 'createProgramFromPtx');
  if (typeof ptx !== 'string') throw typeError(`createProgramFromPtx: the PTX must be a string, not ${typeName(ptx)}`);
  return build(queue, FORMATS.ptx, ptx, flags, 'createProgramFromPtx');
}

/** CUDA C++ source for a CUDA device, compiled with NVRTC (loaded at run time). */
function createProgramFromCuda(queue, source, options) {
  const flags = buildOptions(options, 'createProgramFromCuda');
  if (typeof source !== 'string') throw typeError(`createProgramFromCuda: the source must be a string, not ${typeName(source)}`);
  return build(queue, FORMATS.cuda, source, flags, 'createProgramFromCuda');
}

/** The most strings a list of build inputs holds (names, headers, options). */
const MAX_BUILD_LIST = 1 << 16;

/** Refuses a list longer than MAX_BUILD_LIST before any element is read. */
const boundedLength = (method, what) => (length) => {
  if (length > MAX_BUILD_LIST) throw rangeError(`${method}: ${what} may hold at most ${MAX_BUILD_LIST} entries, not ${length}`, ErrorCode.InvalidArgValue);
};

/** A string that reaches the compiler: no NUL (C would read it only up to one). */
function compilerString(value, method, what) {
  if (typeof value !== 'string') throw typeError(`${method}: every element of ${what} must be a string, not ${typeName(value)}`);
  if (value.includes('\0')) throw rangeError(`${method}: ${what} may not hold a NUL character`, ErrorCode.InvalidArgValue);
  return value;
}

/** A list of strings (each read once), or [] when not given; `what` names it in errors. */
function stringList(value, method, what) {
  if (value === undefined) return [];
  if (!isArray(value)) throw typeError(`${method}: ${what} must be an array of strings, not ${typeName(value)}`);
  const list = snapshot(value, () => typeError(`${method}: ${what} was revoked while it was read`), boundedLength(method, what));
  for (let i = 0; i < list.length; i++) compilerString(list[i], method, what);
  return list;
}

/**
 * Virtual include files as `[names, contents]`: an object of name to content, or an array
 * of `[name, content]` pairs (dpctl's `headers`); names non-empty and each once.
 */
function headerLists(headers, method) {
  if (headers === undefined) return [[], []];
  const bad = () => typeError(`${method}: headers must be an object of name to content, or an array of [name, content] string pairs`);
  let pairs;
  if (isArray(headers)) {
    pairs = snapshot(headers, bad, boundedLength(method, 'headers')).map((pair) => {
      if (!isArray(pair)) throw bad();
      const both = snapshot(pair, bad);
      if (both.length !== 2) throw bad();
      return both;
    });
  } else if (typeof headers === 'object' && headers !== null && !isRevoked(headers)) {
    try {
      const names = keys(headers);
      boundedLength(method, 'headers')(names.length);
      pairs = names.map((name) => [name, headers[name]]);
    } catch (error) {
      // A Proxy revoked while it is read: coded, as the array's snapshot is.
      if (isRevoked(headers)) throw bad();
      throw error;
    }
  } else {
    throw bad();
  }
  const names = [];
  const contents = [];
  const seen = new Set();
  for (const [name, content] of pairs) {
    if (typeof name !== 'string' || typeof content !== 'string') throw typeError(`${method}: header names and contents must be strings, not (${typeName(name)}, ${typeName(content)})`);
    if (name === '' || seen.has(name)) throw typeError(`${method}: header ${name === '' ? 'names must not be empty' : `'${name.slice(0, 64)}' is given twice`}`);
    seen.add(name);
    names.push(compilerString(name, method, 'a header name'));
    contents.push(compilerString(content, method, 'a header'));
  }
  return [names, contents];
}

/**
 * dpctl's `create_kernel_bundle_from_sycl_source`: SYCL C++ with free-function kernels,
 * compiled at run time (the kernel_compiler extension of the DPC++ 2026 runtime). Options:
 * `options` (compiler flags), `headers` (virtual include files), `registeredNames` (name
 * expressions to instantiate, e.g. 'vector_add<int>').
 */
function createProgramFromSycl(queue, source, options) {
  const method = 'createProgramFromSycl';
  const flags = readBuildOptions(options, method, ['headers', 'registeredNames']).list;
  const [names, contents] = headerLists(options?.headers, method);
  const registered = stringList(options?.registeredNames, method, 'registeredNames');
  if (typeof source !== 'string') throw typeError(`${method}: the source must be a string, not ${typeName(source)}`);
  return built(queue, method, (handle) => native.programBuildSycl(handle, source, flags, names, contents, registered));
}

// ---------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------

let eventHandle;
let isEvent;
let eventQueue;
/** The event of each Promise `submitAsync`/`memcpyAsync`/`fillAsync` returned. */
const eventOfPromise = new WeakMap();

/** A submission's event (dpctl's `SyclEvent`). */
class SyclEvent {
  __dpctlMemoryCloneGuard__ = CLONE_GUARD;
  #handle;
  #queue;

  constructor(token, handle, queue) {
    if (token !== INTERNAL) throw typeError('SyclEvent objects are made by queue.submit() and the queue\'s other operations', ErrorCode.ConstructCallRequired);
    this.#handle = own(this, EVENT_HANDLE, handle);
    this.#queue = queue;
  }
  static #handleOf(self, member) {
    if (!isEvent(self)) throw invalidThis('SyclEvent', member);
    return self.#handle;
  }
  /** Waits for the work (blocking this thread). */
  wait() {
    const handle = SyclEvent.#handleOf(this, 'wait');
    if (handle !== COMPLETED_WITHOUT_EVENT) call(() => native.eventWait(handle));
  }
  /** `'submitted'`, `'running'` or `'complete'`. */
  get executionStatus() {
    return SyclEvent.#status(SyclEvent.#handleOf(this, 'executionStatus'));
  }
  /** The status of an event's handle (no public getter runs). */
  static #status(handle) {
    return handle === COMPLETED_WITHOUT_EVENT ? 'complete' : call(() => native.eventStatus(handle));
  }
  static #profile(self, member) {
    const handle = SyclEvent.#handleOf(self, member);
    // Only a queue without profiling gives events completed without a native event.
    if (handle === COMPLETED_WITHOUT_EVENT) throw makeError('Error', BINDING.messages.profilingNotEnabled, ErrorCode.ProfilingNotEnabled);
    return call(() => native.eventProfile(handle));
  }
  /** Nanoseconds (bigint) when the work was submitted, started and ended, on a queue made
   * with `property: 'enable_profiling'` (`ERR_PROFILING_NOT_ENABLED` otherwise). */
  get profilingInfoSubmit() {
    return BigInt(SyclEvent.#profile(this, 'profilingInfoSubmit')[0]);
  }
  get profilingInfoStart() {
    return BigInt(SyclEvent.#profile(this, 'profilingInfoStart')[1]);
  }
  get profilingInfoEnd() {
    return BigInt(SyclEvent.#profile(this, 'profilingInfoEnd')[2]);
  }
  get syclQueue() {
    SyclEvent.#handleOf(this, 'syclQueue');
    return this.#queue;
  }
  toString() {
    return `<SyclEvent ${SyclEvent.#status(SyclEvent.#handleOf(this, 'toString'))}>`;
  }
  [inspect]() {
    return `SyclEvent { executionStatus: '${SyclEvent.#status(SyclEvent.#handleOf(this, 'inspect'))}' }`;
  }
  static {
    isEvent = (value) => typeof value === 'object' && value !== null && #handle in value;
    eventHandle = (event) => event.#handle;
    eventQueue = (event) => event.#queue;
  }
}

/** Dependencies of work on `queue`: an array of SyclEvents or Promises of this module's
 * async operations (each of the queue's context: `ERR_KERNEL_QUEUE_MISMATCH` otherwise),
 * as the ids of their native events (an event completed without one needs no waiting). */
function dependencies(deps, method, taken, queue) {
  if (deps === undefined || deps === null) return f64Array(taken, 0);
  const notArray = () => typeError(`${method}: dependencies must be an array of SyclEvent (or of Promises of submitAsync), not ${typeName(deps)}`);
  if (!isArray(deps)) throw notArray();
  const list = snapshot(deps, notArray);
  const handles = [];
  for (let i = 0; i < list.length; i++) {
    let dep = list[i];
    if (!isEvent(dep) && typeof dep === 'object' && dep !== null) dep = eventOfPromise.get(dep);
    if (!isEvent(dep)) throw typeError(`${method}: dependency ${i} is not a SyclEvent nor a Promise of submitAsync/memcpyAsync/fillAsync: ${display(list[i])}`, ErrorCode.InvalidArgType);
    const of = eventQueue(dep);
    if (of !== queue && !sameContext(of, queue)) {
      throw makeError('Error', `${method}: dependency ${i} is an event of another context than the queue's`, ErrorCode.KernelQueueMismatch);
    }
    const handle = eventHandle(dep);
    if (handle !== COMPLETED_WITHOUT_EVENT) handles.push(handle);
  }
  const ids = f64Array(taken, handles.length);
  for (let i = 0; i < handles.length; i++) ids[i] = handles[i];
  return ids;
}

/** The JS side of an asynchronous operation: a Promise of its SyclEvent that keeps every
 * JS operand reachable until it settles. */
function asyncEvent(queue, id, keepAlive) {
  const event = new SyclEvent(INTERNAL, id, queue);
  const settled = native.eventTakePromise(id);
  const promise = apply(promiseThen, settled, [
    () => {
      keepAlive.fill(undefined);
      return event;
    },
    (error) => {
      keepAlive.fill(undefined);
      throw fromNative(error);
    },
  ]);
  eventOfPromise.set(promise, event);
  return promise;
}

// ---------------------------------------------------------------------------------------
// Submissions
// ---------------------------------------------------------------------------------------

/**
 * The elements of an array as they are now: its length and each element read once, so a
 * getter or Proxy trap that changes the array later changes nothing a call encodes. An
 * array revoked while it is read is `revoked()`, the caller's coded error; any other
 * error (the user's own, from a trap or getter) is thrown as it is.
 */
function snapshot(list, revoked, checkLength = undefined) {
  let length;
  try {
    length = list.length;
  } catch (error) {
    if (isRevoked(list)) throw revoked();
    throw error;
  }
  // Before any element is read (a Proxy may claim any length).
  if (checkLength !== undefined) checkLength(length);
  try {
    return listOf(length, (i) => list[i]);
  } catch (error) {
    if (isRevoked(list)) throw revoked();
    throw error;
  }
}

/** A range: a positive integer, or an array of 1 to 3 of them. */
function rangeArg(value, what, taken) {
  const notRange = () => typeError(`${what} must be a positive integer or an array of 1 to 3 of them, not ${typeName(value)}`, ErrorCode.InvalidRange);
  if (typeof value !== 'number' && !isArray(value)) throw notRange();
  const dimensions = (length) => {
    if (length < 1 || length > 3) throw rangeError(`${what} has 1, 2 or 3 dimensions, not ${length}`, ErrorCode.InvalidRange);
  };
  const list = typeof value === 'number' ? [value] : snapshot(value, notRange, dimensions);
  const out = f64Array(taken, list.length);
  for (let i = 0; i < list.length; i++) {
    const n = list[i];
    if (typeof n !== 'number' || !isSafeInteger(n) || n < 1) throw rangeError(`${what}[${i}] must be a positive integer, not ${display(n)}`, ErrorCode.InvalidRange);
    out[i] = n;
  }
  return out;
}

/**
 * A memory argument's source: a memory object, or an object exposing the interface
 * (`undefined` for anything else, a revoked Proxy included: the caller refuses it with its
 * code). What the exporter's getter throws is thrown as it is, as the constructors do.
 */
function memoryArg(value) {
  if (typeof value !== 'object' || value === null || isRevoked(value)) return undefined;
  if (!memory.isMemory(value) && !('__sycl_usm_array_interface__' in value)) return undefined;
  return memory.memorySource(value);
}

/** The binding's `spec`/`bits` arrays of `args`, and the temporary handles to give back. */
function encodeArgs(args, kernel, taken) {
  const { functionName, numArgs } = kernelFacts(kernel);
  const notArray = () => typeError(`submit: args must be an array (of memory objects and kernelArg values), not ${typeName(args)}`, ErrorCode.KernelArgType);
  if (!isArray(args)) throw notArray();
  // The arguments as they are now: an exporter's getter that changes `args` changes nothing
  // here. At most one argument past the parameters (CUDA's dynamic shared memory): a
  // longer list is refused before any element is read.
  const list = snapshot(args, notArray, (length) => {
    if (length > numArgs + 1) throw typeError(`kernel '${functionName}' takes ${numArgs} arguments, ${length} were given`, ErrorCode.KernelArgCount);
  });
  const spec = f64Array(taken, list.length * 3);
  const bits = u32Array(taken, list.length * 2);
  const temporary = [];
  try {
    for (let i = 0; i < list.length; i++) {
      const arg = list[i];
      if (isKernelArg(arg)) {
        const [kind, type, lo, hi, value] = argFacts(arg);
        spec[3 * i] = kind;
        spec[3 * i + 1] = kind === SPEC_LOCAL ? value : 0;
        spec[3 * i + 2] = type;
        bits[2 * i] = lo;
        bits[2 * i + 1] = hi;
        continue;
      }
      const source = memoryArg(arg);
      if (source === undefined) {
        const hint = typeof arg === 'number' ? ` (a number does not say its type: pass kernelArg.int32(${arg}), kernelArg.float32(${arg}), ...)` : '';
        throw typeError(`argument ${i} of kernel '${functionName}' must be a memory object or a kernelArg value, not ${display(arg)}${hint}`, ErrorCode.KernelArgType);
      }
      if (source.temporary) temporary.push(source.handle);
      spec[3 * i] = SPEC_MEMORY;
      spec[3 * i + 1] = source.handle;
    }
  } catch (error) {
    // The handles made for the arguments before the one that threw.
    giveBack(temporary);
    throw error;
  }
  return { spec, bits, temporary };
}

function giveBack(temporary) {
  for (let i = 0; i < temporary.length; i++) native.memFree(temporary[i]);
}

function submitOn(queue, method, kernel, args, globalRange, localRange, deps, asynchronous) {
  if (!isQueue(queue)) throw invalidThis('SyclQueue', method);
  if (!isKernel(kernel)) throw typeError(`${method}: the kernel must be a SyclKernel (program.getKernel(name)), not ${display(kernel)}`, ErrorCode.InvalidArgType);
  const id = withScratch((taken) => {
    const global = rangeArg(globalRange, 'the global range', taken);
    const local = localRange === undefined || localRange === null ? undefined : rangeArg(localRange, 'the local range', taken);
    const depIds = dependencies(deps, method, taken, queue);
    const { spec, bits, temporary } = encodeArgs(args, kernel, taken);
    try {
      return call(() => native.queueSubmit(queueHandle(queue), kernelHandle(kernel), spec, bits, global, local, depIds, asynchronous));
    } finally {
      giveBack(temporary);
    }
  });
  if (!asynchronous) return new SyclEvent(INTERNAL, id, queue);
  return asyncEvent(queue, id, [kernel, args, deps]);
}

function memoryOperand(value, method, what) {
  const source = memoryArg(value);
  if (source === undefined) throw typeError(`${method}: ${what} must be a memory object, not ${display(value)}`, ErrorCode.NotUsm);
  return source;
}

function byteCount(value, method) {
  if (typeof value !== 'number' || !isSafeInteger(value) || value < 0) throw rangeError(`${method}: the byte count must be a non-negative integer, not ${display(value)}`, ErrorCode.InvalidSize);
  return value;
}

function memcpyOn(queue, method, dst, src, nbytes, deps, asynchronous) {
  if (!isQueue(queue)) throw invalidThis('SyclQueue', method);
  const count = byteCount(nbytes, method);
  const id = withScratch((taken) => {
    const depIds = dependencies(deps, method, taken, queue);
    const to = memoryOperand(dst, method, 'the destination');
    let from;
    try {
      from = memoryOperand(src, method, 'the source');
    } catch (error) {
      if (to.temporary) native.memFree(to.handle);
      throw error;
    }
    try {
      return call(() => native.queueMemcpy(queueHandle(queue), to.handle, from.handle, count, depIds, asynchronous));
    } finally {
      giveBack([to, from].filter((s) => s.temporary).map((s) => s.handle));
    }
  });
  if (!asynchronous) return new SyclEvent(INTERNAL, id, queue);
  return asyncEvent(queue, id, [dst, src, deps]);
}

/** `[buffer, byteOffset, byteLength]` getters of TypedArrays and of DataViews, as built in. */
const getterOf = (proto, name) => Object.getOwnPropertyDescriptor(proto, name).get;
const TYPED_ARRAY_PROTO = Object.getPrototypeOf(Uint8Array.prototype);
const TYPED_ARRAY_GETTERS = ['buffer', 'byteOffset', 'byteLength'].map((name) => getterOf(TYPED_ARRAY_PROTO, name));
const DATA_VIEW_GETTERS = ['buffer', 'byteOffset', 'byteLength'].map((name) => getterOf(DataView.prototype, name));
const { isDataView } = require('node:util').types;

/** The sizes of a fill's element: dpctl's typed fills (complex128 is 16 bytes). */
const PATTERN_SIZES = [1, 2, 4, 8, 16];

/**
 * A fill pattern: a kernelArg scalar (its bytes), or a TypedArray or DataView whose bytes
 * are one element of 1, 2, 4, 8 or 16 bytes (`new Float64Array([re, im])`: complex128),
 * copied at the call.
 */
function patternBytes(pattern, method) {
  if (ArrayBuffer.isView(pattern)) {
    // The view's own getters, not properties it (or a subclass) may shadow.
    const getters = isDataView(pattern) ? DATA_VIEW_GETTERS : TYPED_ARRAY_GETTERS;
    const [buffer, offset, size] = getters.map((get) => apply(get, pattern, []));
    if (!PATTERN_SIZES.includes(size)) {
      throw rangeError(`${method}: a pattern given as bytes is one element of 1, 2, 4, 8 or 16 bytes (new Float64Array([re, im]) for complex128); this one has ${size}`, ErrorCode.InvalidArgValue);
    }
    return new Uint8Array(buffer, offset, size).slice();
  }
  if (isKernelArg(pattern) && argFacts(pattern)[0] === 1) {
    const [, type, lo, hi] = argFacts(pattern);
    const size = SCALAR_SIZES[type];
    const bytes = new Uint8Array(size);
    const view = new DataView(bytes.buffer);
    if (size === 8) {
      view.setUint32(0, lo, true);
      view.setUint32(4, hi, true);
    } else if (size === 4) view.setUint32(0, lo, true);
    else if (size === 2) view.setUint16(0, lo, true);
    else view.setUint8(0, lo);
    return bytes;
  }
  throw typeError(`${method}: the pattern must be a kernelArg scalar (e.g. kernelArg.float32(1.5)) or one element's bytes (a TypedArray or DataView of 1, 2, 4, 8 or 16 bytes), not ${display(pattern)}`, ErrorCode.InvalidArgType);
}

function fillOn(queue, method, dst, bytes, count, deps, asynchronous) {
  if (!isQueue(queue)) throw invalidThis('SyclQueue', method);
  const id = withScratch((taken) => {
    const depIds = dependencies(deps, method, taken, queue);
    const to = memoryOperand(dst, method, 'the destination');
    try {
      return call(() => native.queueFill(queueHandle(queue), to.handle, bytes, count, depIds, asynchronous));
    } finally {
      if (to.temporary) native.memFree(to.handle);
    }
  });
  if (!asynchronous) return new SyclEvent(INTERNAL, id, queue);
  return asyncEvent(queue, id, [dst, deps]);
}

function elementCount(value, method, dst, size) {
  if (value === undefined) {
    const nbytes = memory.isMemory(dst) ? dst.nbytes : undefined;
    if (nbytes === undefined) throw typeError(`${method}: give the element count`, ErrorCode.InvalidArgType);
    return Math.floor(nbytes / size);
  }
  if (typeof value !== 'number' || !isSafeInteger(value) || value < 0) throw rangeError(`${method}: the count must be a non-negative integer, not ${display(value)}`, ErrorCode.InvalidSize);
  return value;
}

function byteValue(value, method) {
  if (typeof value !== 'number' || !isInteger(value) || value < 0 || value > 255) {
    throw rangeError(`${method}: the value must be an integer in 0..255, not ${display(value)}`, ErrorCode.InvalidFillValue);
  }
  return new Uint8Array([value]);
}

/** The words of a `writeValue` value and whether it is 64 bits: a number is 32 bits (an
 * integer that an Int32Array or a Uint32Array holds), a bigint 64 (one a BigInt64Array or
 * a BigUint64Array holds); negative ones are written in two's complement.
 * @returns {[number, number, boolean]} */
function progressValue(value) {
  if (typeof value === 'number') {
    if (!isInteger(value) || value < -2147483648 || value > 4294967295) {
      throw rangeError(`writeValue: a number is written as 32 bits: an integer in -2147483648..4294967295, not ${display(value)} (give a bigint for 64 bits)`, ErrorCode.InvalidFillValue);
    }
    return [value >>> 0, 0, false];
  }
  if (typeof value === 'bigint') {
    if (value < -(2n ** 63n) || value >= U64) throw rangeError(`writeValue: a bigint is written as 64 bits: one in -(2n**63n)..2n**64n-1n, not ${value}n`, ErrorCode.InvalidFillValue);
    const bits = value < 0n ? value + U64 : value;
    return [Number(bits & 0xffffffffn), Number(bits >> 32n), true];
  }
  throw typeError(`writeValue: the value must be a number (written as 32 bits) or a bigint (64 bits), not ${typeName(value)}`, ErrorCode.InvalidArgType);
}

const WRITE_VALUE_OPTIONS = {
  offset: (value) => {
    if (value === undefined) return 0;
    if (typeof value !== 'number' || !isSafeInteger(value) || value < 0) throw rangeError(`writeValue: the offset must be a non-negative integer (bytes), not ${display(value)}`, ErrorCode.InvalidRange);
    return value;
  },
  dependsOn: (value) => value,
};

/** `{ offset, dependsOn }` of `writeValue`: own enumerable properties only, unknown names refused. */
function writeValueOptions(options) {
  if (options === undefined || options === null) return { offset: 0, dependsOn: undefined };
  if (typeof options !== 'object' || arrayState(options) !== false) {
    throw typeError(`writeValue options must be a plain object such as { offset, dependsOn }, not ${typeName(options)}`, ErrorCode.InvalidArgType);
  }
  const read = readOptions(options, WRITE_VALUE_OPTIONS, (name) => `unknown option '${name}': writeValue takes { offset, dependsOn }`);
  return { offset: read.offset ?? 0, dependsOn: read.dependsOn };
}

/** The queue's own operations and submissions, as dpctl's `SyclQueue` has them. */
const queueMethods = {
  /** Runs `kernel` over `globalRange` (work-groups of `localRange`) after `dependsOn`, and
   * waits: dpctl's `submit`. Returns the completed SyclEvent. */
  submit(kernel, args, globalRange, localRange, dependsOn) {
    return submitOn(this, 'submit', kernel, args, globalRange, localRange, dependsOn, false);
  },
  /** As `submit`, without waiting: a Promise of the SyclEvent, settled once the kernel has
   * finished and let go of its operands (and usable at once as a dependency). */
  submitAsync(kernel, args, globalRange, localRange, dependsOn) {
    return submitOn(this, 'submitAsync', kernel, args, globalRange, localRange, dependsOn, true);
  },
  /** Copies `nbytes` between memory objects on this queue, and waits. */
  memcpy(dst, src, nbytes, dependsOn) {
    return memcpyOn(this, 'memcpy', dst, src, nbytes, dependsOn, false);
  },
  memcpyAsync(dst, src, nbytes, dependsOn) {
    return memcpyOn(this, 'memcpyAsync', dst, src, nbytes, dependsOn, true);
  },
  /** Sets `nbytes` (all of `dst` when not given) to `value` (0..255), and waits. */
  memset(dst, value, nbytes, dependsOn) {
    if (!isQueue(this)) throw invalidThis('SyclQueue', 'memset');
    const bytes = byteValue(value, 'memset');
    return fillOn(this, 'memset', dst, bytes, elementCount(nbytes, 'memset', dst, 1), dependsOn, false);
  },
  memsetAsync(dst, value, nbytes, dependsOn) {
    if (!isQueue(this)) throw invalidThis('SyclQueue', 'memsetAsync');
    const bytes = byteValue(value, 'memsetAsync');
    return fillOn(this, 'memsetAsync', dst, bytes, elementCount(nbytes, 'memsetAsync', dst, 1), dependsOn, true);
  },
  /** Fills `count` elements (all of `dst` when not given) with a typed scalar, and waits. */
  fill(dst, pattern, count, dependsOn) {
    if (!isQueue(this)) throw invalidThis('SyclQueue', 'fill');
    const bytes = patternBytes(pattern, 'fill');
    return fillOn(this, 'fill', dst, bytes, elementCount(count, 'fill', dst, bytes.length), dependsOn, false);
  },
  fillAsync(dst, pattern, count, dependsOn) {
    if (!isQueue(this)) throw invalidThis('SyclQueue', 'fillAsync');
    const bytes = patternBytes(pattern, 'fillAsync');
    return fillOn(this, 'fillAsync', dst, bytes, elementCount(count, 'fillAsync', dst, bytes.length), dependsOn, true);
  },
  /** Writes `value` (a number: 32 bits; a bigint: 64) at byte `offset` of host or shared
   * memory once everything submitted to this queue before it, and `dependsOn`, are done,
   * for `Atomics` on `dst.sharedBuffer` (README "Waiting on GPU progress"). Returns its
   * event at once: no Promise, no JS callback. */
  writeValue(dst, value, options) {
    if (!isQueue(this)) throw invalidThis('SyclQueue', 'writeValue');
    const [lo, hi, wide] = progressValue(value);
    const { offset, dependsOn } = writeValueOptions(options);
    const handle = queueHandle(this);
    const id = withScratch((taken) => {
      const depIds = dependencies(dependsOn, 'writeValue', taken, this);
      const to = memoryOperand(dst, 'writeValue', 'the destination');
      try {
        return call(() => native.queueWriteValue(handle, to.handle, offset, lo, hi, wide, depIds));
      } finally {
        // The binding's model holds the memory until the write landed.
        if (to.temporary) native.memFree(to.handle);
      }
    });
    return new SyclEvent(INTERNAL, id, this);
  },
  /** An event after `dependsOn` (after everything submitted so far when not given). */
  submitBarrier(dependsOn) {
    if (!isQueue(this)) throw invalidThis('SyclQueue', 'submitBarrier');
    const handle = queueHandle(this);
    const id = withScratch((taken) => {
      const depIds = dependencies(dependsOn, 'submitBarrier', taken, this);
      return call(() => native.queueBarrier(handle, depIds));
    });
    return new SyclEvent(INTERNAL, id, this);
  },
};

const queueGetters = {
  /** Whether the queue runs its work in submission order (`property: 'in_order'`). */
  isInOrder() {
    if (!isQueue(this)) throw invalidThis('SyclQueue', 'isInOrder');
    return (native.queuePropertyFlags(queueHandle(this)) & 1) !== 0;
  },
  /** Whether the queue's events carry timestamps (`property: 'enable_profiling'`). */
  hasEnableProfiling() {
    if (!isQueue(this)) throw invalidThis('SyclQueue', 'hasEnableProfiling');
    return (native.queuePropertyFlags(queueHandle(this)) & 2) !== 0;
  },
};

for (const name of keys(queueMethods)) {
  defineProperty(SyclQueue.prototype, name, { value: queueMethods[name], writable: true, enumerable: false, configurable: true });
}
for (const name of keys(queueGetters)) {
  defineProperty(SyclQueue.prototype, name, { get: queueGetters[name], enumerable: false, configurable: true });
}

module.exports = {
  SyclProgram,
  SyclKernel,
  SyclEvent,
  KernelArg,
  SyclProgramCompilationError,
  kernelArg,
  createProgramFromSource,
  createProgramFromSpirv,
  createProgramFromPtx,
  createProgramFromCuda,
  createProgramFromSycl,
  isProgram: (value) => isProgram(value),
  programHandle: (value) => programHandle(value),
};
