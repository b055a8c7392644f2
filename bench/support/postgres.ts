import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from './paths.js';
import { onCleanup } from './cleanup.js';
import { fmt } from './table.js';

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

/** A new empty database on this server, named `<prefix>_<random>`; gives its URL. */
export async function createDatabase(serverUrl: string, prefix: string): Promise<string> {
  const name = `${prefix}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Starts one throwaway PostgreSQL and measures each fleet size on it in turn, saying which on stderr. */
export async function perSize<R>(sizes: readonly number[], measure: (serverUrl: string, nodes: number) => Promise<R>): Promise<R[]> {
  process.stderr.write('starting a throwaway PostgreSQL\n');
  const postgres = await startThrowawayPostgres();
  const results: R[] = [];
  for (const n of sizes) {
    process.stderr.write(`${fmt(n)} nodes …\n`);
    results.push(await measure(postgres.url, n));
  }
  return results;
}
