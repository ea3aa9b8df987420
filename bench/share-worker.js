// The two workers of bench/share.js. The sender shares one allocation again and again
// over a MessagePort; the receiver opens each token and frees what it opened, and
// answers. `mode` 'plain' posts a number instead of a token: message passing alone.
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const addon = require('../index.js');

const { role } = workerData;

function sender({ port, mode, rounds, window, nbytes }) {
  const m = new addon.MemoryUSMHost(nbytes);
  const post = mode === 'plain' ? () => port.postMessage(0) : () => port.postMessage(m.share());
  let sent = 0;
  let acked = 0;
  const start = process.hrtime.bigint();
  return new Promise((resolve) => {
    port.on('message', () => {
      acked++;
      if (acked === rounds) {
        const ns = Number(process.hrtime.bigint() - start);
        m.free();
        port.close();
        resolve(ns / rounds);
      } else if (sent < rounds) {
        sent++;
        post();
      }
    });
    for (; sent < Math.min(window, rounds); sent++) post();
  });
}

function receiver({ port, mode }) {
  port.on('message', (token) => {
    if (mode !== 'plain') addon.openShared(token).free();
    port.postMessage(0);
  });
  return new Promise(() => {});
}

/** Seconds per copyFromHost of `nbytes` into memory opened from `token`, and into memory allocated here. */
function copyRates({ token, rounds }) {
  const shared = addon.openShared(token);
  const own = new addon.MemoryUSMHost(shared.nbytes);
  const src = new Uint8Array(shared.nbytes).fill(7);
  const time = (target) => {
    const start = process.hrtime.bigint();
    target.copyFromHost(src);
    return Number(process.hrtime.bigint() - start) / 1e9;
  };
  time(shared);
  time(own);
  const result = { shared: [], ordinary: [] };
  for (let i = 0; i < rounds; i++) {
    // Alternating, so drift in the machine's load falls on both alike.
    result.shared.push(time(shared));
    result.ordinary.push(time(own));
  }
  shared.free();
  own.free();
  return result;
}

parentPort.on('message', async (message) => {
  if (message.op === 'copyRates') parentPort.postMessage(copyRates(message));
  else if (role === 'sender') parentPort.postMessage(await sender(message));
  else receiver(message);
});
