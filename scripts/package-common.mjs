// What the package scripts (package-agent.mjs, package-coordinator.mjs) share: their options, and
// the small file and process helpers every build step uses.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Bad flags: the script's main maps it to exit 2 and prints its message alone. */
export class UsageError extends Error {}

/** A Debian version (policy 5.6.12): what dpkg accepts, without an epoch. */
const DEBIAN_VERSION = /^[0-9][A-Za-z0-9.+~]*(-[A-Za-z0-9.+~]+)?$/;

/**
 * `--version V` (else `fallbackVersion`, else package.json's), `--out DIR` (default dist/package),
 * `--help`, and the script's own boolean flags in `flags`. Returns the parsed values with `version`
 * checked and `out` absolute.
 */
export function packageOptions({ usage, flags = [], fallbackVersion }) {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        version: { type: 'string' },
        out: { type: 'string', default: join(ROOT, 'dist/package') },
        help: { type: 'boolean', default: false },
        ...Object.fromEntries(flags.map((f) => [f, { type: 'boolean', default: false }])),
      },
      strict: true,
    }));
  } catch (err) {
    throw new UsageError(`${err.message}; ${usage}`);
  }
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  const version = values.version ?? fallbackVersion ?? JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
  if (!DEBIAN_VERSION.test(version)) throw new UsageError(`--version ${JSON.stringify(version)} is not a Debian version (e.g. 0.1.1)`);
  return { ...values, version, out: resolve(values.out) };
}

/** Runs a build step; a non-zero exit throws with the command and what it printed. */
export function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...opts });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status}: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}

/** Writes a file of the package tree with its mode, making its folders 0755. */
export function write(path, content, mode) {
  mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
  writeFileSync(path, content);
  chmodSync(path, mode);
}

/** The regular files under `dir`, sorted: md5sums and sizes leave symlinks (node_modules/.bin) out. */
export function filesUnder(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** A script's main: a UsageError exits 2 with its message, anything else 1 with its stack. */
export function runMain(name, main) {
  main().catch((err) => {
    process.stderr.write(`${name}: ${err instanceof UsageError ? err.message : (err.stack ?? err.message)}\n`);
    process.exit(err instanceof UsageError ? 2 : 1);
  });
}
