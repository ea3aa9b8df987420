// The other process of the IPC rows of bench/gpu.js, kept alive for the whole run. It
// reads requests from one FIFO and answers on another (bench/ipc-pipe.js), with blocking
// reads and writes, so a cycle across the two processes is measured like any other case
// (the CuPy peer's child does the same over its pipes). 'cycle' opens the handle and
// closes it, answering one byte; 'ping' answers one byte and opens nothing (the messages
// alone); 'loop' measures open + close here, with no messages, and 'bench' copies into the
// opened memory against the same copies into memory of its own, each answering a
// length-prefixed JSON; 'quit' ends.
'use strict';
const fs = require('node:fs');
const { REQUEST, OPS, readExact } = require('./ipc-pipe');

const [requests, answers, filter, timingJson] = process.argv.slice(2);
// Opened first: should anything below fail, the parent reads the end of its input.
const input = fs.openSync(requests, 'r');
const output = fs.openSync(answers, 'w');

const { measure, sizeLabel } = require('./lib');
const { IPCMemoryHandle, MemoryUSMDevice, SyclQueue } = require('..');

const timing = JSON.parse(timingJson);
const queue = new SyclQueue(filter);
const ACK = Buffer.from('k');

function copyRows(opened, nbytes) {
  const plain = new MemoryUSMDevice(nbytes, { queue });
  const other = new MemoryUSMDevice(nbytes, { queue });
  const src = new Uint8Array(nbytes).fill(3);
  other.copyFromHost(src);
  const lab = sizeLabel(nbytes);
  const results = {
    [`ipc.h2d.opened.${lab}`]: measure(() => opened.copyFromHost(src), timing),
    [`ipc.h2d.plain.${lab}`]: measure(() => plain.copyFromHost(src), timing),
    [`ipc.d2d.opened.${lab}`]: measure(() => opened.copyFromDevice(other), timing),
    [`ipc.d2d.plain.${lab}`]: measure(() => plain.copyFromDevice(other), timing),
  };
  const back = opened.copyToHost();
  plain.free();
  other.free();
  return { results, check: back[0] === 3 && back[nbytes - 1] === 3 };
}

/** Sends `value` as a length-prefixed JSON. */
function answer(value) {
  const text = Buffer.from(JSON.stringify(value));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(text.length);
  fs.writeSync(output, Buffer.concat([length, text]));
}

for (;;) {
  const request = readExact(input, REQUEST);
  if (request === null || request[0] === OPS.quit) break;
  if (request[0] === OPS.ping) {
    fs.writeSync(output, ACK);
    continue;
  }
  const handle = new Uint8Array(request.buffer, request.byteOffset + 1, 64);
  const nbytes = request.readDoubleLE(65);
  if (request[0] === OPS.loop) {
    answer(measure(() => IPCMemoryHandle.open(handle, { queue, nbytes }).free(), timing));
    continue;
  }
  const opened = IPCMemoryHandle.open(handle, { queue, nbytes });
  if (request[0] === OPS.cycle) {
    opened.free();
    fs.writeSync(output, ACK);
    continue;
  }
  const rows = copyRows(opened, nbytes);
  opened.free();
  answer(rows);
}
fs.closeSync(output);
