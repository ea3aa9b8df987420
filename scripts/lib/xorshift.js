'use strict';
// xorshift32: a small deterministic generator, for test contents and seeded choices
// (the ava helpers, the fuzz model and the soak use the same one).

/** A function returning the next 32-bit value of the sequence that `seed` starts. */
function xorshift32(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/** `n` bytes of the sequence `seed` starts (never constant, so shifted copies show). */
function xorshiftBytes(n, seed) {
  const next = xorshift32(seed);
  const bytes = new Uint8Array(n);
  for (let i = 0; i < n; i++) bytes[i] = next() & 0xff;
  return bytes;
}

module.exports = { xorshift32, xorshiftBytes };
