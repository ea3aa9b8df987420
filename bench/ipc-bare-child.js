// bench/ipc-child.js's cycle with the bare driver (peers/bare_ipc.node, built as its source
// says) instead of the addon: a Node child that opens and closes as a CuPy child does, so
// bench/ipc-pairs.js can tell the cost of a Node process from the cost of our calls. Its
// arguments are ipc-child.js's, then flags: `with-addon` loads the addon and makes a queue
// first (its threads and state present, its calls unused); `with-range` also asks the size
// of each mapping after the open (`cuMemGetAddressRange`, the one driver call our open
// makes beyond the bare driver's). Answers 'cycle' and 'quit' only.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { REQUEST, OPS, readExact } = require('./ipc-pipe');

const [requests, answers, filter, , ...flags] = process.argv.slice(2);
// Opened first: should anything below fail, the parent reads the end of its input.
const input = fs.openSync(requests, 'r');
const output = fs.openSync(answers, 'w');
if (flags.includes('with-addon')) {
  const { SyclQueue } = require('..');
  globalThis.dpctlMemoryQueue = new SyclQueue(filter);
}
const bare = require(path.join(__dirname, 'peers', 'bare_ipc.node'));
bare.init();

const withRange = flags.includes('with-range');
const ACK = Buffer.from('k');
for (;;) {
  const request = readExact(input, REQUEST);
  if (request === null || request[0] !== OPS.cycle) break;
  const address = bare.open(new Uint8Array(request.buffer, request.byteOffset + 1, 64));
  if (withRange) bare.range(address);
  bare.close(address);
  fs.writeSync(output, ACK);
}
fs.closeSync(output);
