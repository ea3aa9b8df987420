#!/usr/bin/env node
// One round of our side of a bench section, in a Node process of its own: bench.js runs one
// per round, as it runs each round of a peer in a fresh Python process, so that where the
// operating system places a process (which moves a small copy's cost from one process to
// the next) falls on both sides alike. Prints the round's figures as one JSON line after
// the marker bench.js looks for. Usage: node bench/round.js cpu|gpu
'use strict';
const path = require('node:path');
const config = require('./config');
const { RESULT_MARKER } = require('./lib');

const sections = { cpu: () => require('./cpu'), gpu: () => require('./gpu') };

function main() {
  const name = process.argv[2];
  if (!Object.hasOwn(sections, name)) {
    console.error(`bench/round.js: no section ${JSON.stringify(name)} (cpu or gpu)`);
    process.exit(2);
  }
  const addon = require(path.resolve(__dirname, '..'));
  const round = sections[name]().runOurs(addon, config[name], config.timing);
  console.log(`${RESULT_MARKER}${JSON.stringify(round)}`);
}

main();
