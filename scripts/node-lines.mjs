#!/usr/bin/env node
// The Node.js lines this project supports, and the official binaries of each from the npm registry's
// `node-linux-<arch>` package, so a machine with one line can test the others with no other download
// source.
//
//   node scripts/node-lines.mjs             every line: "<major> <version> <path of its node>"
//   node scripts/node-lines.mjs path 26     the node binary of one line, fetched if missing
//   node scripts/node-lines.mjs active      the current Active LTS line's major
//   node scripts/node-lines.mjs others      the other supported lines' majors, oldest first
//   node scripts/node-lines.mjs server-min  the oldest line the coordinator and retectl run on
//
// Binaries are kept in $FLORETE_NODE_CACHE (default ~/.cache/florete/node/<version>).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { arch, homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Each supported line and the release of it that is tested. The agent runs on all of them (20 is
 * Debian 13's own nodejs, which Debian keeps patched); the coordinator and retectl need 22 or later.
 * The whole suite runs on ACTIVE_LTS; the others run the quick start and the agent's package tests.
 */
export const NODE_LINES = { 20: '20.20.2', 22: '22.23.5', 24: '24.22.3', 26: '26.12.1' };
export const ACTIVE_LTS = 26;
/** The oldest line the coordinator and retectl run on. */
export const SERVER_MIN_LINE = 22;

const cacheRoot = () => resolve(process.env.FLORETE_NODE_CACHE || join(homedir(), '.cache/florete/node'));

/** The node binary of `major`'s tested release: this process's own if it is that release, else fetched once into the cache. */
export function nodeBinary(major) {
  const version = NODE_LINES[major];
  if (!version) throw new Error(`Node.js ${major} is not a supported line (supported: ${Object.keys(NODE_LINES).join(', ')})`);
  if (process.versions.node === version) return process.execPath;
  const dir = join(cacheRoot(), version);
  const bin = join(dir, 'bin/node');
  if (existsSync(bin)) return bin;
  mkdirSync(cacheRoot(), { recursive: true });
  // Fetched into a folder of its own and renamed into place, so a second process fetching the same
  // line at the same time finds either nothing or a whole tree.
  const work = mkdtempSync(join(cacheRoot(), `.fetch-${version}-`));
  try {
    const pkg = `node-linux-${arch()}@${version}`;
    const packed = spawnSync('npm', ['pack', pkg, '--pack-destination', work, '--silent'], { encoding: 'utf8' });
    if (packed.status !== 0) throw new Error(`npm pack ${pkg} failed:\n${packed.stderr}`);
    const tgz = join(work, packed.stdout.trim().split('\n').pop());
    const untar = spawnSync('tar', ['-xzf', tgz, '-C', work], { encoding: 'utf8' });
    if (untar.status !== 0) throw new Error(`unpacking ${tgz} failed:\n${untar.stderr}`);
    try {
      renameSync(join(work, 'package'), dir);
    } catch (err) {
      if (!existsSync(bin)) throw err;
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const check = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  if (check.stdout.trim() !== `v${version}`) throw new Error(`${bin} says ${check.stdout.trim() || check.stderr.trim()}, expected v${version}`);
  return bin;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [verb, major] = process.argv.slice(2);
  try {
    if (verb === 'path' && major) process.stdout.write(`${nodeBinary(major)}\n`);
    else if (verb === 'active') process.stdout.write(`${ACTIVE_LTS}\n`);
    else if (verb === 'others')
      process.stdout.write(
        `${Object.keys(NODE_LINES)
          .filter((m) => Number(m) !== ACTIVE_LTS)
          .join(' ')}\n`,
      );
    else if (verb === 'server-min') process.stdout.write(`${SERVER_MIN_LINE}\n`);
    else if (!verb) for (const [m, v] of Object.entries(NODE_LINES)) process.stdout.write(`${m} ${v} ${nodeBinary(m)}\n`);
    else {
      process.stderr.write('usage: node scripts/node-lines.mjs [path MAJOR | active | others | server-min]\n');
      process.exit(2);
    }
  } catch (err) {
    process.stderr.write(`node-lines: ${err.message}\n`);
    process.exit(1);
  }
}
