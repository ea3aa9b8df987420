// @ts-check
'use strict';
// `poolStats()` and `poolTrim()`: the caching pool's figures, as plain objects of this
// realm (parsed from the binding's JSON, so no prototype setter can intercept a field).
const { native } = require('./native.js');
const { fromNative } = require('./errors.js');

const { parse } = JSON;

/** The caching pool's counters, per USM kind. */
function poolStats() {
  try {
    return parse(native.poolStats());
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
