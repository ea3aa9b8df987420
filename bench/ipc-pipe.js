// The requests of the IPC bench rows between bench/gpu.js and its child (bench/ipc-child.js),
// over FIFOs with blocking reads and writes: an op byte, the 64 handle bytes, nbytes (float64).
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const REQUEST = 1 + 64 + 8;
// cycle: open and close, answer one byte; ping: answer one byte, no open; loop: time open +
// close in the child, answer JSON; bench: the copy rows, answer JSON; quit: end.
const OPS = { cycle: 0x63, ping: 0x70, loop: 0x6c, bench: 0x62, quit: 0x71 };

/** Two FIFOs, `requests` and `answers`, in a fresh folder under the temporary one whose name
 * starts with `prefix`: [folder, requests, answers] (the caller removes the folder). */
function fifos(prefix) {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const [requests, answers] = [path.join(folder, 'requests'), path.join(folder, 'answers')];
  execFileSync('mkfifo', [requests, answers]);
  return [folder, requests, answers];
}

/** Reads exactly `n` bytes from `fd` (a FIFO may return fewer per read); null at end of input. */
function readExact(fd, n) {
  const bytes = Buffer.alloc(n);
  let got = 0;
  while (got < n) {
    const read = fs.readSync(fd, bytes, got, n - got, null);
    if (read === 0) return null;
    got += read;
  }
  return bytes;
}

/** Writes one request into `buffer` (REQUEST bytes) and sends it. */
function sendRequest(fd, buffer, op, handle, nbytes) {
  buffer[0] = op;
  buffer.set(handle, 1);
  buffer.writeDoubleLE(nbytes, 65);
  fs.writeSync(fd, buffer);
}

/** One cycle: `handle` sent to the child for `nbytes` (in `buffer`, REQUEST bytes), opened
 * and closed there; returns once the child answered, throws if it ended. */
function cycle(output, input, buffer, handle, nbytes) {
  sendRequest(output, buffer, OPS.cycle, handle, nbytes);
  if (readExact(input, 1) === null) throw new Error('the IPC child ended');
}

module.exports = { REQUEST, OPS, fifos, cycle, readExact, sendRequest };
