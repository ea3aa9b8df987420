// @ts-check
'use strict';
// The error classes and the one translation of the binding's errors: every error this
// package throws is made here, in the realm that loaded the package, with a `code`.
const { native } = require('./native.js');

const { Error, TypeError, RangeError, Object, Set, String, Reflect } = globalThis;
const defineProperty = Object.defineProperty;
const apply = Reflect.apply;
const setHas = Set.prototype.has;

/**
 * The binding's table of error codes (src/error.rs), `[{ name, code, classes }, ...]`,
 * and from it `ErrorCode`: `{ SuaiMalformed: 'ERR_SUAI_MALFORMED', ... }`, frozen.
 */
const ERROR_TABLE = JSON.parse(native.errorCodes());
const ErrorCode = {};
for (let i = 0; i < ERROR_TABLE.length; i++) {
  // Defined, not assigned: no setter on Object.prototype sees the names.
  defineProperty(ErrorCode, ERROR_TABLE[i].name, { value: ERROR_TABLE[i].code, enumerable: true });
}
Object.freeze(ErrorCode);
const CODES = new Set(Object.values(ErrorCode));

/**
 * The rules and messages this layer applies before it calls the binding, from their one
 * source in the binding (beside the error table): `{ maxList, advice, messages: { freed,
 * profilingNotEnabled, positiveSize, alignment, bufferTooLarge } }`, frozen. Templates
 * name their fields `{alignment}`, `{nbytes}`, `{max_len}`: fill them with `fillMessage`.
 * @type {{ maxList: number, advice: readonly string[], messages: Readonly<Record<'freed' | 'profilingNotEnabled' | 'positiveSize' | 'alignment' | 'bufferTooLarge', string>> }}
 */
const BINDING = (() => {
  const constants = JSON.parse(native.bindingConstants());
  Object.freeze(constants.advice);
  Object.freeze(constants.messages);
  return Object.freeze(constants);
})();

const stringReplaceAll = String.prototype.replaceAll;
const objectKeys = Object.keys;

/** `template` with each `{name}` of `fields` written as its value. */
function fillMessage(template, fields) {
  let message = template;
  const names = objectKeys(fields);
  for (let i = 0; i < names.length; i++) {
    message = apply(stringReplaceAll, message, [`{${names[i]}}`, String(fields[names[i]])]);
  }
  return message;
}

function withCode(error, code) {
  defineProperty(error, 'code', { value: code, writable: true, enumerable: true, configurable: true });
  return error;
}

/** A dpctl error class whose instances carry `defaultCode` unless given another. */
function errorClass(name, defaultCode) {
  const Class = {
    [name]: class extends Error {
      constructor(message, options) {
        super(message, options);
        withCode(this, options?.code ?? defaultCode);
      }
      get name() {
        return name;
      }
    },
  }[name];
  return Class;
}

const USMAllocationError = errorClass('USMAllocationError', ErrorCode.UsmAllocation);
const SyclQueueCreationError = errorClass('SyclQueueCreationError', ErrorCode.QueueCreation);
const SyclDeviceCreationError = errorClass('SyclDeviceCreationError', ErrorCode.DeviceNotFound);

const CLASSES = { Error, TypeError, RangeError, USMAllocationError, SyclQueueCreationError, SyclDeviceCreationError };

/** An error of class `className` (one of `CLASSES`) with `code`. */
function makeError(className, message, code) {
  // No options object: the Error constructor would read `cause` from it, and so from a
  // polluted Object.prototype.
  const Class = CLASSES[className] ?? Error;
  return withCode(new Class(message), code);
}

const typeError = (message, code = ErrorCode.InvalidArgType) => makeError('TypeError', message, code);
const rangeError = (message, code) => makeError('RangeError', message, code);

/**
 * The error to throw for what the binding threw: the class it names, made here. Anything
 * else (a failure of Node-API itself) keeps its message under `ERR_INTERNAL`.
 */
function fromNative(error) {
  if (error !== null && typeof error === 'object' && apply(setHas, CODES, [error.code]) && typeof error.errorClass === 'string') {
    return makeError(error.errorClass, error.message, error.code);
  }
  const message = error !== null && typeof error === 'object' ? String(error.message) : String(error);
  return withCode(new Error(`dpctl-memory internal error: ${message}`), 'ERR_INTERNAL');
}

/** `f()`, a call of the binding, with what it throws made in this realm (`fromNative`). */
function callNative(f) {
  try {
    return f();
  } catch (error) {
    throw fromNative(error);
  }
}

/**
 * The value of every public object's `__dpctlMemoryCloneGuard__` field: structured
 * clone (`structuredClone`, `postMessage`) copies own enumerable string-keyed fields and
 * so reads this getter, which throws a coded error instead of letting the object arrive
 * as an empty `{}` (its private fields are never cloned).
 */
const cloneGuard = (message) =>
  Object.freeze(
    Object.defineProperty({}, 'cloneable', {
      enumerable: true,
      get() {
        throw typeError(message, ErrorCode.NotCloneable);
      },
    }),
  );
const CLONE_GUARD = cloneGuard(
  'dpctl-memory objects cannot be cloned or posted to another thread: pass the data (copyToHost()) or an interface dictionary instead',
);
/** The guard of memory objects, whose message says how to share them instead. */
const MEMORY_CLONE_GUARD = cloneGuard(
  'dpctl-memory memory objects cannot be cloned or posted to another thread: post the token of mem.share() instead, and open it there with openShared(token)',
);
/** The guard of IPC handles, whose message says what to send instead. */
const IPC_CLONE_GUARD = cloneGuard(
  'an IPCMemoryHandle cannot be cloned or posted: send handle.toBytes() and handle.nbytes, and open them with IPCMemoryHandle.open(bytes, { device, nbytes })',
);

/**
 * The one way a binding task becomes a Promise of this realm: `start()` begins it, and
 * the Promise resolves to `map(value)` when it settles, or rejects with the binding's
 * error made here. `keepAlive` (the memory object, the host buffer) stays reachable
 * until then, so nothing is collected under the task. An error `start` throws (an
 * argument the binding checks before any work) rejects the Promise, with the
 * synchronous method's code and message; with `throwAtStart` it is thrown instead.
 */
function settle(start, map, keepAlive, throwAtStart = false) {
  let promise;
  try {
    promise = start();
  } catch (error) {
    if (throwAtStart) throw fromNative(error);
    return rejected(fromNative(error));
  }
  return finish(promise, map, keepAlive);
}

/** A Promise of this realm, rejected with `error`. */
async function rejected(error) {
  throw error;
}

async function finish(promise, map, keepAlive) {
  let value;
  try {
    value = await promise;
  } catch (error) {
    throw fromNative(error);
  } finally {
    keepAlive = undefined;
  }
  return map(value);
}

const invalidThis = (className, member) =>
  typeError(`${className}.prototype.${member} called on an object that is not a ${className}`, ErrorCode.InvalidThis);

module.exports = {
  callNative,
  ErrorCode,
  USMAllocationError,
  SyclQueueCreationError,
  SyclDeviceCreationError,
  makeError,
  typeError,
  rangeError,
  fromNative,
  settle,
  BINDING,
  fillMessage,
  invalidThis,
  CLONE_GUARD,
  MEMORY_CLONE_GUARD,
  IPC_CLONE_GUARD,
};
