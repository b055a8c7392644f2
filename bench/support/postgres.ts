import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from './paths.js';
import { onCleanup } from './cleanup.js';

export interface ThrowawayPostgres {
  readonly url: string;
  /** Synchronous: stops the server and removes its folder. */
  stop(): void;
}

/**
 * A throwaway PostgreSQL cluster from scripts/throwaway-postgres.mjs, stopped at cleanup. Imported by
 * URL at run time because the script lives outside the compiled tree (dist/bench vs scripts/).
 */
export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const script = pathToFileURL(join(REPO_ROOT, 'scripts/throwaway-postgres.mjs')).href;
  const mod = (await import(script)) as { startPostgres(): Promise<ThrowawayPostgres> };
  const pg = await mod.startPostgres();
  onCleanup(
    () => pg.stop(),
    () => pg.stop(),
  );
  return pg;
}
