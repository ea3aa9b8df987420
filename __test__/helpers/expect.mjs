// Error assertions: the exact class and the stable `code` of every thrown error.

/**
 * Asserts that `fn` throws an error whose constructor is exactly `Class` (so a TypeError
 * where an Error is expected, or the reverse, fails) and whose `code` is `code`.
 * Returns the error.
 */
export function throwsExactly(t, fn, Class, code, note) {
  const err = t.throws(fn, { instanceOf: Class, code }, note);
  if (err) {
    t.is(err.constructor, Class, `${note ? `${note}: ` : ''}class ${err.constructor?.name}, expected ${Class.name}`);
    t.is(typeof err.message, 'string');
    t.true(err.message.length > 0, 'the error has a message');
  }
  return err;
}
