// @ts-check
'use strict';
// Sharing memory with other threads of this process: `mem.share()` makes a token (a
// frozen plain object that `postMessage` carries), `openShared` opens it into a memory
// object of that thread, `revokeShared` gives back what a pending token holds. The
// policy (single open, timeout, forged tokens) lives in the binding's model
// (src/memory/share.rs); this file reads the arguments and tokens. The memory classes
// themselves are `memory.js`'s, which calls in here.
const { native, KIND } = require('./native.js');
const { ErrorCode, typeError, fromNative, MEMORY_CLONE_GUARD } = require('./errors.js');
const { display, typeName, onlyOption, isArray, isRevoked } = require('./values.js');
const { INTERNAL, SyclQueue, cachedQueueObject } = require('./device.js');

const { Object, Map, Number, Reflect } = globalThis;
const { freeze, getOwnPropertyDescriptor } = Object;
const isSafeInteger = Number.isSafeInteger;
const apply = Reflect.apply;
// Called through `apply`: a replaced Map.prototype.get/set changes nothing.
const mapGet = Map.prototype.get;
const mapSet = Map.prototype.set;
const { DEVICE, SHARED, HOST } = KIND;

/** Whether a token is a memory object instead (its own clone guard says so: no getter runs). */
const isMemory = (value) => getOwnPropertyDescriptor(value, '__dpctlMemoryCloneGuard__')?.value === MEMORY_CLONE_GUARD;

/** A token of the memory `handle` (live) of `kind` (its name) and `nbytes`, for `mem.share(options)`. */
function shareToken(handle, kind, nbytes, options) {
  const timeout = readShareOptions(options);
  let text;
  try {
    text = native.memShare(handle, timeout);
  } catch (error) {
    throw fromNative(error);
  }
  return freeze({ dpctlMemoryShare: 1, kind, nbytes, handle: text });
}

/** `{ timeout? }` of `share()`: own enumerable properties only, unknown names refused. */
function readShareOptions(options) {
  const timeout = onlyOption(options, 'timeout', 'share');
  if (timeout === undefined || timeout === null) return undefined;
  // The range (1 ms ..= 2^31 - 1 ms, an integer) is the model's to check.
  if (typeof timeout !== 'number') throw typeError(`timeout must be a number of milliseconds, not ${typeName(timeout)}`);
  return timeout;
}

/** What `openShared`/`revokeShared` read of a token: own values, checked, before any native call. */
function readToken(token, member) {
  const invalid = (what) =>
    typeError(`${member} expects a token made by mem.share(), not ${what}`, ErrorCode.ShareTokenInvalid);
  if (typeof token !== 'object' || token === null || isArray(token) || isRevoked(token)) throw invalid(display(token));
  if (isMemory(token)) throw invalid('a memory object (post mem.share() and open that)');
  const version = token.dpctlMemoryShare;
  const handle = token.handle;
  const kindName = token.kind;
  const nbytes = token.nbytes;
  const kind = kindName === 'device' ? DEVICE : kindName === 'shared' ? SHARED : kindName === 'host' ? HOST : 0;
  if (version !== 1 || typeof handle !== 'string' || handle.length > 64 || kind === 0 || !isSafeInteger(nbytes) || nbytes <= 0) {
    throw invalid('an object without its fields (dpctlMemoryShare: 1, kind, nbytes, handle)');
  }
  return { handle, kind, nbytes };
}

/** This realm's `SyclQueue` of each cached queue a token brought, by the binding's key. */
const sharedCachedQueues = new Map();

/**
 * What `openShared` makes its memory object of: the handle of a token opened into this
 * environment, its queue object (this realm's one object for a cached queue) and facts.
 */
function openToken(token) {
  const { handle, kind, nbytes } = readToken(token, 'openShared');
  let id;
  let facts;
  try {
    id = native.memOpenShared(handle, kind, nbytes);
    facts = native.memSharedFacts(id);
  } catch (error) {
    throw fromNative(error);
  }
  const readOnly = facts % 2 === 1;
  const cachedKey = (facts - (readOnly ? 1 : 0)) / 2;
  let queue = cachedKey === 0 ? undefined : apply(mapGet, sharedCachedQueues, [cachedKey]);
  if (queue === undefined) {
    const queueId = native.memQueue(id);
    queue = cachedKey === 0 ? new SyclQueue(INTERNAL, queueId) : cachedQueueObject(queueId);
    if (cachedKey !== 0) apply(mapSet, sharedCachedQueues, [cachedKey, queue]);
  }
  return { kind, handle: id, queue, reference: null, facts: { nbytes, pointer: undefined, kind, readOnly } };
}

/**
 * Revokes a token of `mem.share()` that was not opened yet, giving back what it held:
 * `true`; `false` when it was already opened, revoked or expired.
 */
function revokeShared(token) {
  const { handle } = readToken(token, 'revokeShared');
  try {
    return native.memRevokeShared(handle);
  } catch (error) {
    throw fromNative(error);
  }
}

module.exports = {
  shareToken,
  openToken,
  revokeShared,
};
