// @ts-check
'use strict';
// Argument checks: JS values to checked primitives, each failure an error with its code.
// Intrinsics are taken at load, so later changes to globals change nothing here.
const { ErrorCode, typeError, rangeError, BINDING, fillMessage } = require('./errors.js');

const { Number, ArrayBuffer, Uint8Array, Reflect, Object, String, Array } = globalThis;
const apply = Reflect.apply;
const isView = ArrayBuffer.isView;
const { isSafeInteger, isInteger, isNaN } = Number;
const { isArray: arrayCheck, from: arrayFrom } = Array;
const keys = Object.keys;
const hasOwn = Object.hasOwn;
const stringSlice = String.prototype.slice;
const { BigInt } = globalThis;

// Brand checks: true only for a real buffer of any realm; no trap or getter runs, and
// nothing throws (a getter's brand check refusing a non-buffer would throw and catch an
// error, which costs more than the call the check guards).
const { isArrayBuffer, isSharedArrayBuffer } = require('node:util').types;

/**
 * `Array.isArray`, except that a revoked Proxy (for which V8's throws "Cannot perform
 * 'IsArray' on a proxy that has been revoked") is `REVOKED`, so that every caller can
 * refuse it with its own coded error.
 */
const REVOKED = 'revoked';
function arrayState(value) {
  try {
    return arrayCheck(value);
  } catch {
    return REVOKED;
  }
}
/** Whether `value` is an array (a revoked Proxy is not). */
const isArray = (value) => arrayState(value) === true;
/** Whether `value` is a revoked Proxy (no operation on it but `typeof` works). */
const isRevoked = (value) => ((typeof value === 'object' && value !== null) || typeof value === 'function') && arrayState(value) === REVOKED;

/**
 * A new array of `length` elements, `element(i)` each: defined, not assigned (no setter
 * of `Array.prototype` runs), read through no iterator and made by no species.
 */
function listOf(length, element) {
  return arrayFrom(/** @type {ArrayLike<unknown>} */ ({ __proto__: null, length }), (_, i) => element(i));
}

/** The first 64 characters of a name for a message (`String.prototype.slice` as at load). */
const shortName = (name) => apply(stringSlice, name, [0, 64]);

/** `typeof`, with `null`, arrays and revoked Proxies told apart. */
function typeName(value) {
  if (value === null) return 'null';
  const state = arrayState(value);
  if (state === REVOKED) return 'a revoked Proxy';
  if (state) return 'array';
  return typeof value;
}

/** A value for messages; objects by kind only (converting them would run user code). */
function display(value) {
  switch (typeof value) {
    case 'string':
      return `'${value}'`;
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(value);
    case 'bigint':
      return `${value}n`;
    case 'symbol':
      return 'a symbol';
    case 'function':
      return isRevoked(value) ? 'a revoked Proxy' : 'a function';
    default:
      if (value === null) return 'null';
      return isRevoked(value) ? 'a revoked Proxy' : isArray(value) ? 'an array' : 'an object';
  }
}

/** What is wrong with a number or bigint as an integer, or `null` when nothing is. */
function notInteger(value) {
  if (typeof value === 'bigint') return null;
  if (isNaN(value)) return 'NaN';
  if (value === Infinity) return 'Infinity';
  if (value === -Infinity) return '-Infinity';
  if (!isInteger(value)) return String(value);
  if (!isSafeInteger(value)) return `${value} (beyond Number.MAX_SAFE_INTEGER: pass a bigint)`;
  return null;
}

const POSITIVE = BINDING.messages.positiveSize;

/** A byte count: a positive safe integer number or a positive bigint below 2^64. */
function nbytesArg(value) {
  if (typeof value === 'number' && isSafeInteger(value) && value > 0) return value;
  if (typeof value !== 'number' && typeof value !== 'bigint') {
    throw typeError(`nbytes must be a number, a bigint, or an object exposing __sycl_usm_array_interface__, not ${typeName(value)}`);
  }
  const wrong = notInteger(value);
  if (wrong !== null) throw rangeError(`${POSITIVE} integer, got ${wrong}.`, ErrorCode.InvalidSize);
  if (value <= 0) throw rangeError(`${POSITIVE}, got ${value}.`, ErrorCode.InvalidSize);
  if (value >= 2n ** 64n) throw rangeError(`${value} bytes is beyond 64 bits`, ErrorCode.InvalidSize);
  // Beyond 2^53 bytes no runtime allocates anyway; the runtime refuses the rounded size.
  return Number(value);
}

/** An alignment: an integer number or bigint, 0 (the default) or a power of two. */
function alignmentArg(value) {
  if (typeof value !== 'number' && typeof value !== 'bigint') {
    throw typeError(`alignment must be a number, not ${typeName(value)}`);
  }
  const wrong = notInteger(value);
  if (wrong !== null) throw rangeError(`alignment must be an integer, got ${wrong}`, ErrorCode.InvalidAlignment);
  const big = BigInt(value);
  if (big < 0n || big >= 2n ** 64n || (big !== 0n && (big & (big - 1n)) !== 0n)) {
    throw rangeError(fillMessage(BINDING.messages.alignment, { alignment: value }), ErrorCode.InvalidAlignment);
  }
  return Number(big);
}

/** A memset value: an integer 0..255, 0 when not given. */
function fillValueArg(value) {
  if (value === undefined || value === null) return 0;
  if (typeof value === 'number' && value >= 0 && value <= 255 && isInteger(value)) return value;
  if (typeof value !== 'number' && typeof value !== 'bigint') {
    throw typeError(`memset value must be a number, not ${typeName(value)}`);
  }
  const wrong = notInteger(value);
  const shown = wrong ?? String(value);
  if (wrong === null && value >= 0 && value <= 255) return Number(value);
  throw rangeError(`memset value must be an integer in 0..255, got ${shown}`, ErrorCode.InvalidFillValue);
}

function boolArg(value, what) {
  if (typeof value !== 'boolean') throw typeError(`${what} must be a boolean, not ${typeName(value)}`);
  return value;
}

function stringArg(value, what) {
  if (typeof value !== 'string') throw typeError(`${what} must be a string, not ${typeName(value)}`);
  return value;
}

/**
 * The one reader of options objects: each own enumerable key of `options` (an object
 * the caller checked) is given to its reader in `readers`, with its value as it is
 * (`undefined` and `null` included), and the results are returned by name; a name with
 * no reader is refused with the message `unknown(name)` (the name shortened).
 */
function readOptions(options, readers, unknown) {
  const read = { __proto__: null };
  const names = keys(options);
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    if (!hasOwn(readers, name)) throw typeError(unknown(shortName(name)));
    read[name] = readers[name](options[name]);
  }
  return read;
}

const asGiven = (value) => value;

/**
 * The one option named `name` of a plain options object of `method` (own enumerable keys
 * only; any other name is refused); `undefined` without options.
 */
function onlyOption(options, name, method) {
  if (options === undefined || options === null) return undefined;
  if (typeof options !== 'object' || arrayState(options) !== false) {
    throw typeError(`${method} options must be a plain object such as { ${name} }, not ${typeName(options)}`);
  }
  return readOptions(options, { [name]: asGiven }, (unknown) => `unknown option '${unknown}': ${method} takes { ${name} }`)[name];
}

/**
 * A host buffer argument as the binding takes it: an ArrayBuffer or a view as is, a
 * SharedArrayBuffer as a Uint8Array over it (Node-API has no accessor for it before
 * Node 24). Anything else is refused at once: no array-like is read element by element.
 */
function hostArg(value, what) {
  if (isView(value) || isArrayBuffer(value)) return value;
  if (isSharedArrayBuffer(value)) return new Uint8Array(value);
  throw typeError(`${what} must be an ArrayBuffer, SharedArrayBuffer, TypedArray, DataView or Buffer, not ${display(value)}`);
}

/** Whether `value` is host memory JS owns: an ArrayBuffer, SharedArrayBuffer or a view. */
const isHostBuffer = (value) => isView(value) || isArrayBuffer(value) || isSharedArrayBuffer(value);

module.exports = {
  arrayState,
  isArray,
  isRevoked,
  listOf,
  shortName,
  isHostBuffer,
  typeName,
  display,
  nbytesArg,
  alignmentArg,
  fillValueArg,
  boolArg,
  stringArg,
  hostArg,
  readOptions,
  onlyOption,
};
