#!/usr/bin/env node
// The README's quick start, run as a new user would, on the node first on PATH:
// `npm ci && npm start` in this checkout, on a fresh embedded data dir; passes once the coordinator
// says where it listens and answers /readyz with 200. `.ci/run` runs it on each supported line other
// than the one the whole suite runs on.
//
//   node scripts/quick-start-check.mjs [--skip-ci]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(import.meta.url), '../..');
const START_TIMEOUT_MS = 300_000;

function fail(message) {
  process.stderr.write(`quick-start-check: ${message}\n`);
  process.exit(1);
}

const node = spawnSync('node', ['--version'], { encoding: 'utf8' }).stdout.trim();
process.stdout.write(`quick start on node ${node}\n`);

if (!process.argv.includes('--skip-ci')) {
  const ci = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: ROOT, stdio: 'inherit' });
  if (ci.status !== 0) fail(`npm ci exited ${ci.status} on node ${node}`);
}

const data = mkdtempSync(join(tmpdir(), 'florete-quick-start-'));
// Its own process group, so stopping it stops npm, the build and the coordinator npm started.
const child = spawn('npm', ['start'], {
  cwd: ROOT,
  detached: true,
  stdio: ['ignore', 'pipe', 'pipe'],
  env: { ...process.env, FLORETE_DATA: join(data, 'florete'), PORT: '0' },
});
const output = [];
const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));

function stop() {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    return Promise.resolve();
  }
  const killer = setTimeout(() => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {}
  }, 15_000);
  return exited.finally(() => clearTimeout(killer));
}

try {
  const url = await new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening:" line within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
    createInterface({ input: child.stderr }).on('line', (line) => output.push(line));
    createInterface({ input: child.stdout }).on('line', (line) => {
      output.push(line);
      const m = /^listening: (\S+)$/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolvePromise(m[1]);
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited (${code ?? signal}) before listening`));
    });
  });
  const ready = await fetch(`${url}/readyz`);
  if (ready.status !== 200) throw new Error(`${url}/readyz answered ${ready.status}: ${await ready.text()}`);
  process.stdout.write(`quick start on node ${node}: listening at ${url}, /readyz 200\n`);
} catch (err) {
  await stop();
  rmSync(data, { recursive: true, force: true });
  fail(`${err.message} on node ${node}\n${output.join('\n')}`);
}
await stop();
rmSync(data, { recursive: true, force: true });
