// @ts-check
'use strict';
// The native hand-off (include/dpctl_memory.h): every memory object's
// `__dpctl_memory_handoff__` getter gives another addon a type-tagged external value from
// which the header reads the pointer, size, kind, device and queue, and takes references
// that hold the allocation until that addon releases them. A freed object gives a value
// that says so. The first read brands the object (a type tag JS cannot set): the value
// names that brand, so it is memory only on the object it was read from.
const { native } = require('./native.js');
const { fromNative, invalidThis, ErrorCode } = require('./errors.js');
const memory = require('./memory.js');

const { Object, WeakMap, Reflect } = globalThis;
const apply = Reflect.apply;
// Called through `apply`: a replaced prototype method changes nothing.
const weakMapGet = WeakMap.prototype.get;
const weakMapSet = WeakMap.prototype.set;

const FREED = -1;

/** The brand (a serial) of each memory object whose hand-off value was read. */
const brands = new WeakMap();

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
    let brand = apply(weakMapGet, brands, [this]);
    if (brand === undefined) {
      brand = native.memHandoffBrand(this);
      apply(weakMapSet, brands, [this, brand]);
    }
    return native.memHandoff(handle, brand);
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
