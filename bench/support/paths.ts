import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: the nearest folder above this file holding a package.json (works from bench/ and dist/bench/). */
function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

export const REPO_ROOT = findRoot();
/** The built coordinator: run `npm run build` first (the bench:* scripts do). */
export const COORDINATOR_MAIN = join(REPO_ROOT, 'dist/apps/coordinator/src/main.js');
/** The compiled baseline server, next to this file in dist/bench/support. */
export const BASELINE_SERVER = join(dirname(fileURLToPath(import.meta.url)), 'baseline-server.js');
