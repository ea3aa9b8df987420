// The module's public surface as index.d.ts and the README name it.
import test from 'ava';
import { createRequire } from 'node:module';

const addon = createRequire(import.meta.url)('../index.js');

for (const name of ['MemoryUSMDevice', 'MemoryUSMHost', 'MemoryUSMShared']) {
  test(`exports the class ${name} under the contract's name`, (t) => {
    t.is(typeof addon[name], 'function', `${name} must be exported as a constructor`);
    t.is(addon[name]?.name, name, `the class's own name is ${name}`);
  });
}

for (const name of ['SyclDevice', 'SyclContext', 'SyclQueue', 'asUsmMemory', 'getDevices']) {
  test(`exports ${name}`, (t) => {
    t.is(typeof addon[name], 'function');
  });
}

for (const name of ['USMAllocationError', 'SyclQueueCreationError', 'SyclDeviceCreationError']) {
  test(`${name} is an exported Error subclass with its own name`, (t) => {
    const Class = addon[name];
    t.is(typeof Class, 'function');
    const err = new Class('boom');
    t.true(err instanceof Error);
    t.true(err instanceof Class);
    t.is(err.name, name);
    t.is(err.message, 'boom');
    t.true(String(err).startsWith(`${name}: boom`));
  });
}

test('the three error classes are distinct', (t) => {
  const { USMAllocationError, SyclQueueCreationError, SyclDeviceCreationError } = addon;
  t.false(new USMAllocationError('x') instanceof SyclQueueCreationError);
  t.false(new SyclQueueCreationError('x') instanceof SyclDeviceCreationError);
  t.false(new SyclDeviceCreationError('x') instanceof USMAllocationError);
});

test('getDevices() never throws and returns an array, even without a runtime', (t) => {
  const devices = addon.getDevices();
  t.true(Array.isArray(devices));
  for (const d of devices) t.true(d instanceof addon.SyclDevice);
  if (devices.length === 0) t.log('no device present: most suites will report skipped tests');
});
