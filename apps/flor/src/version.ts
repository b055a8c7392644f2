import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Set by the packaging bundler (scripts/package-agent.mjs) to the version it packages. */
declare const __FLORETE_AGENT_VERSION__: string | undefined;

/** Run from this repository (dist/ or the sources): the version in its package.json. */
function repositoryVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'florete' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      /* no package.json here: look further up */
    }
    const up = dirname(dir);
    if (up === dir) return '0.0.0-unknown';
    dir = up;
  }
}

/** The agent's version: sent in the enrolment profile and every report, printed by --version and self-check. */
export const AGENT_VERSION: string = typeof __FLORETE_AGENT_VERSION__ === 'string' ? __FLORETE_AGENT_VERSION__ : repositoryVersion();
