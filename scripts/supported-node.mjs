#!/usr/bin/env node
// Runs a command with a Node.js the coordinator supports first on PATH: this node when it is 22.12 or
// later, else the current Active LTS's official binary, fetched once from the npm registry
// (scripts/node-lines.mjs). `npm start` and `npm test` go through it, so the README's quick start
// works on a fresh machine whose own node is older (Debian 13's nodejs is 20).
//
//   node scripts/supported-node.mjs COMMAND [ARG ...]
import { spawn } from 'node:child_process';
import { dirname } from 'node:path';
import { ACTIVE_LTS, nodeBinary } from './node-lines.mjs';

const [command, ...args] = process.argv.slice(2);
if (!command) {
  process.stderr.write('usage: node scripts/supported-node.mjs COMMAND [ARG ...]\n');
  process.exit(2);
}

const [major, minor] = process.versions.node.split('.').map(Number);
const env = { ...process.env };
if (major < 22 || (major === 22 && minor < 12)) {
  let bin;
  try {
    bin = nodeBinary(ACTIVE_LTS);
  } catch (err) {
    process.stderr.write(
      `node ${process.version} is older than the coordinator supports (22.12), and Node.js ${ACTIVE_LTS} could not be fetched: ${err.message}\n`,
    );
    process.exit(1);
  }
  process.stderr.write(`node ${process.version} is older than the coordinator supports (22.12): running on Node.js ${ACTIVE_LTS} (${bin})\n`);
  env.PATH = `${dirname(bin)}:${env.PATH ?? ''}`;
}

const child = spawn(command, args, { stdio: 'inherit', env });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('error', (err) => {
  process.stderr.write(`${command}: ${err.message}\n`);
  process.exit(1);
});
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
