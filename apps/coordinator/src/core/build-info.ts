import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The coordinator's version: the `florete` package.json above this file, which is the checkout's
 * when run from one and the installed tree's when packaged with it.
 */
function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'florete' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      /* no package.json here: look further up */
    }
    const up = dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
}

export const COORDINATOR_VERSION: string = packageVersion();
