#!/usr/bin/env node
// The other process of bench/ucx.js. `sink SIZE WARMUP COUNT KIND AHEAD`: receive WARMUP,
// then COUNT messages of SIZE bytes (tag 1) into memory of KIND (host or device), with up
// to AHEAD receives posted, acknowledging each batch with an 8-byte message of tag 2.
// `pong COUNT`: answer COUNT 8-byte messages of tag 3 with tag 4.
'use strict';
const path = require('node:path');
const { ucx, MemoryUSMHost, MemoryUSMDevice } = require(path.resolve(__dirname, '..'));

async function main() {
  const [role, ...args] = process.argv.slice(2);
  const listener = ucx.listen({ host: '127.0.0.1', port: 0 });
  process.send({ port: listener.port });
  const endpoint = await listener.accept();
  listener.close();
  if (role === 'sink') {
    const [size, warmup, count] = args.slice(0, 3).map(Number);
    const dst = args[3] === 'device' ? new MemoryUSMDevice(size) : new MemoryUSMHost(size);
    const ahead = Number(args[4]);
    const ack = new Uint8Array(8);
    // Receives posted up to `ahead` before the messages, all into one buffer (as perftest).
    const batch = async (n) => {
      const inFlight = [];
      for (let i = 0; i < n; i++) {
        inFlight.push(endpoint.recv(dst, { tag: 1n }));
        if (inFlight.length >= ahead) await inFlight.shift();
      }
      await Promise.all(inFlight);
      await endpoint.send(ack, { tag: 2n });
    };
    await batch(warmup);
    await batch(count);
  } else {
    const count = Number(args[0]);
    const buffer = new Uint8Array(new SharedArrayBuffer(8));
    for (let i = 0; i < count; i++) {
      await endpoint.recv(buffer, { tag: 3n });
      await endpoint.send(buffer, { tag: 4n });
    }
  }
  await endpoint.flush().catch(() => {});
  setInterval(() => {}, 1000);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
