import { Kysely } from 'kysely';
import { runAsScript } from '#runtime';
import type { Database } from './database.js';
import { migrateToLatest } from './migrate.js';

/**
 * The embedded database's memory. PostgreSQL's shared memory sits in the process's own memory here
 * and is touched whole at start, so all of it stays resident in an idle coordinator. These settings
 * size it:
 * - `shared_buffers`, the buffer pool: 1 MB keeps 128 pages of table and index. What does not fit is
 *   read again from the files, which the system's page cache keeps in memory anyway; 10,000-node
 *   publishes took no longer with it than with 2 or 4 MB (bench/README.md). A pool this small needs
 *   room for what an idle coordinator reads now and then, and a page start-up left dirty would then
 *   be written back at any moment; `writeBackStartUp` writes them all once it serves.
 * - `max_connections`: the embedded database serves this one process over one session, but its lock
 *   table and per-session slots are sized for PostgreSQL's default of 100. At 10 the lock table still
 *   holds well over a thousand locks for one transaction.
 * - Slots for what never runs here, each with its own share of the lock table: autovacuum's workers
 *   (the database runs as one process, without them), and replication's senders and slots.
 * Together 4 MB of shared memory instead of 24 (`SHOW shared_memory_size`). The embedded database
 * serves one coordinator and a small fleet; a large fleet runs on PostgreSQL.
 */
export function pgliteSettings(): string[] {
  return [
    ...['-c', 'shared_buffers=1MB', '-c', 'max_connections=10'],
    ...['-c', 'autovacuum_worker_slots=1', '-c', 'max_wal_senders=0', '-c', 'max_replication_slots=0'],
  ];
}

/**
 * Creates the embedded database in `dir` (initdb) and applies every migration; the names applied.
 * The coordinator runs it in a process of its own (this file as a script), whose memory goes back
 * to the system when it exits; `dir` must not exist yet as a database.
 */
export async function createDataDir(dir: string): Promise<string[]> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGliteDialect } = await import('kysely-pglite-dialect');
  const pglite = await PGlite.create(dir, { startParams: [...PGlite.defaultStartParams, ...pgliteSettings()] });
  const kysely = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  try {
    return await migrateToLatest(kysely);
  } finally {
    await kysely.destroy();
  }
}

// `node new-data-dir.js <dir>` prints the names applied as a JSON array.
runAsScript(import.meta.url, createDataDir);
