// @ts-check
'use strict';
// `registerHost(buffer, { queue })` and `HostRegistration`: an ArrayBuffer or
// SharedArrayBuffer of the user's (or a view of one) registered with the runtime so that
// copies between it and device memory skip the staging path. This object holds the
// buffer (the binding holds it weakly, so a registration cached by its own buffer is
// collected with it); the binding checks at every copy that the buffer still holds the
// registered bytes, and the registration ends when this object is collected.
const { native } = require('./native.js');
const { ErrorCode, typeError, fromNative, invalidThis, CLONE_GUARD } = require('./errors.js');
const { display, hostArg, onlyOption } = require('./values.js');
const { cachedQueue, queueHandle, isQueue } = require('./device.js');

const { Symbol, Reflect, FinalizationRegistry } = globalThis;
const apply = Reflect.apply;
const dispose = Symbol.dispose ?? Symbol.for('nodejs.dispose');
const inspect = Symbol.for('nodejs.util.inspect.custom');

/** Ends the registration of a `HostRegistration` that is collected. */
const collected = new FinalizationRegistry((id) => native.hostUnregister(id));
const { register: track, unregister: untrack } = FinalizationRegistry.prototype;

const MAKE = Symbol('HostRegistration');

/** A registration of host memory with a device runtime; `unregister()` ends it. */
class HostRegistration {
  __dpctlMemoryCloneGuard__ = CLONE_GUARD;
  /** The binding's id, `null` once ended. */
  #id = null;
  #registered = false;
  #byteLength = 0;
  /** What was registered (a buffer or a view of one), held while the registration lasts. */
  #holds = null;

  constructor(token, id, registered, byteLength, holds) {
    if (token !== MAKE) {
      throw typeError('HostRegistration cannot be constructed: use registerHost(buffer, { queue })', ErrorCode.ConstructCallRequired);
    }
    this.#id = id;
    this.#registered = registered;
    this.#byteLength = byteLength;
    this.#holds = holds;
    apply(track, collected, [this, id, this]);
  }

  static #check(self, member) {
    if (typeof self !== 'object' || self === null || !(#id in self)) {
      throw invalidThis('HostRegistration', member);
    }
  }

  /** Whether the runtime pinned the memory (`false`: it needs no registration, e.g. a CPU device). */
  get registered() {
    HostRegistration.#check(this, 'registered');
    return this.#registered;
  }
  /** The registered bytes. */
  get byteLength() {
    HostRegistration.#check(this, 'byteLength');
    return this.#byteLength;
  }
  /** Ends the registration; a copy in flight that uses it finishes first. Idempotent. */
  unregister() {
    HostRegistration.#check(this, 'unregister');
    HostRegistration.#end(this);
  }
  /** `using registration = registerHost(...)`: `unregister()` at the end of the scope. */
  [dispose]() {
    HostRegistration.#check(this, '[Symbol.dispose]');
    HostRegistration.#end(this);
  }
  static #end(self) {
    const id = self.#id;
    if (id === null) return;
    self.#id = null;
    self.#holds = null;
    apply(untrack, collected, [self]);
    try {
      native.hostUnregister(id);
    } catch (error) {
      throw fromNative(error);
    }
  }
  [inspect]() {
    HostRegistration.#check(this, 'inspect');
    const state = this.#id === null ? 'ended' : this.#registered ? 'registered' : 'not needed';
    return `HostRegistration { byteLength: ${this.#byteLength}, ${state} }`;
  }
}

/** `{ queue }`: the queue whose runtime registers (the default queue when omitted). */
function queueOption(options) {
  const queue = onlyOption(options, 'queue', 'registerHost');
  if (queue === undefined || queue === null) return undefined;
  if (!isQueue(queue)) throw typeError(`queue must be a SyclQueue, not ${display(queue)}`);
  return queue;
}

/**
 * Registers the bytes of `buffer` (an ArrayBuffer, SharedArrayBuffer or a view of one)
 * with the runtime of `queue`'s device, so that copies between them and device memory go
 * straight to the DMA engine. Where the runtime needs no registration the result says
 * `registered: false` and copies are unchanged.
 */
function registerHost(buffer, options) {
  const bytes = hostArg(buffer, 'buffer');
  const queue = queueOption(options) ?? cachedQueue(undefined);
  let facts;
  try {
    facts = native.hostRegister(queueHandle(queue), bytes);
  } catch (error) {
    throw fromNative(error);
  }
  return new HostRegistration(MAKE, facts[0], facts[1] === 1, facts[2], bytes);
}

module.exports = { HostRegistration, registerHost };
