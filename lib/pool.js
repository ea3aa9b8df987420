'use strict';
// `poolStats()` and `poolTrim()`: the caching pool's figures, as plain objects of this realm.
const native = require('./native.js');
const { fromNative } = require('./errors.js');

/** A deep copy of plain data (objects, arrays, primitives) made in this realm. */
function plainCopy(value) {
  if (Array.isArray(value)) return value.map(plainCopy);
  if (typeof value !== 'object' || value === null) return value;
  const copy = {};
  for (const key of Object.keys(value)) copy[key] = plainCopy(value[key]);
  return copy;
}

/** The caching pool's counters, per USM kind. */
function poolStats() {
  try {
    return plainCopy(native.poolStats());
  } catch (error) {
    throw fromNative(error);
  }
}

/** Frees every cached block and every idle scratch buffer now; returns the bytes given back. */
function poolTrim() {
  try {
    return native.poolTrim();
  } catch (error) {
    throw fromNative(error);
  }
}

module.exports = { poolStats, poolTrim };
