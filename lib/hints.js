// @ts-check
'use strict';
// The arguments of `MemoryUSMShared`'s `prefetch()` and `memAdvise()`, read into plain
// values before the binding is called, and their result.
const { ErrorCode, typeError, settle, BINDING } = require('./errors.js');
const { display, typeName, onlyOption } = require('./values.js');

const { Object, Reflect, Array } = globalThis;
const freeze = Object.freeze;
const apply = Reflect.apply;
const arrayIncludes = Array.prototype.includes;

/** The names `memAdvise` takes (the binding's `Advice::NAMES`). */
const ADVICE = BINDING.advice;

const ADVICE_LIST = ADVICE.join(', ');

const invalidValue = (message) => typeError(message, ErrorCode.InvalidArgValue);

/** `'device'` → false, `'host'` → true (whether the target is the host). */
function locationArg(value, what) {
  if (value === undefined) return false;
  if (value === 'device') return false;
  if (value === 'host') return true;
  if (typeof value !== 'string') throw typeError(`${what} must be 'device' or 'host', not ${typeName(value)}`);
  throw invalidValue(`${what} must be 'device' or 'host', not ${display(value)}`);
}

/** `prefetch({ to })`: whether the target is the host. */
function prefetchArgs(options) {
  return locationArg(onlyOption(options, 'to', 'prefetch'), 'to');
}

/**
 * `memAdvise(advice, { location })`: `[advice, locationIsHost]`.
 * @returns {[string, boolean]}
 */
function adviseArgs(advice, options) {
  if (typeof advice !== 'string') throw typeError(`advice must be a string, not ${typeName(advice)}`);
  if (!apply(arrayIncludes, ADVICE, [advice])) throw invalidValue(`advice must be one of ${ADVICE_LIST}, not ${display(advice)}`);
  return [advice, locationArg(onlyOption(options, 'location', 'memAdvise'), 'location')];
}

/** The result of a hint: whether the runtime applied it. */
const applied = (value) => freeze({ applied: value === true });

/**
 * Runs a hint's binding call: resolves to `{ applied }`; the memory object stays
 * reachable until it settles. An error of the call itself is thrown, not a rejection.
 */
const runHint = (start, memory) => settle(start, applied, [memory], true);

module.exports = { ADVICE, prefetchArgs, adviseArgs, runHint };
