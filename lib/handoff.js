// @ts-check
'use strict';
// The native hand-off (include/dpctl_memory.h): every memory object's
// `__dpctl_memory_handoff__` getter gives another addon a type-tagged external value from
// which the header reads the pointer, size, kind, device and queue, and takes references
// that hold the allocation until that addon releases them. A freed object gives a value
// that says so.
const { native } = require('./native.js');
const { fromNative, invalidThis, ErrorCode } = require('./errors.js');
const memory = require('./memory.js');

const { Object } = globalThis;

const FREED = -1;

function handoff() {
  if (!memory.isMemory(this)) throw invalidThis('_Memory', '__dpctl_memory_handoff__');
  let handle;
  try {
    handle = memory.memorySource(this).handle;
  } catch (error) {
    if (error?.code !== ErrorCode.UsmFreed) throw error;
    handle = FREED;
  }
  try {
    return native.memHandoff(handle);
  } catch (error) {
    throw fromNative(error);
  }
}

Object.defineProperty(memory._Memory.prototype, '__dpctl_memory_handoff__', {
  get: handoff,
  enumerable: false,
  configurable: false,
});

module.exports = {};
