import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Kysely, sql } from 'kysely';
import { Migrator, type Migration } from 'kysely/migration';
import { migrations } from '../../../../migrations/index.js';
import { copyingEmbedded } from './copy-in.js';
import type { Database } from './database.js';
import { lockDataDir } from './data-dir-lock.js';
import { InstallationBundle, type InstallationFs } from './installation-files.js';

export type DatabaseKind = 'postgres' | 'pglite';

export interface Db {
  readonly kysely: Kysely<Database>;
  readonly kind: DatabaseKind;
  /** The embedded instance, when kind is pglite. */
  readonly pglite?: import('@electric-sql/pglite').PGlite;
  /** The connection string, when kind is postgres: the change feed opens its own listening session with it. */
  readonly databaseUrl?: string;
  close(): Promise<void>;
}

/**
 * PostgreSQL when a URL is given, otherwise the embedded PGlite database under dataDir/db. PGlite is
 * one process's memory over files: a second process opening the same files writes into a copy the
 * first never sees, and the first overwrites it later. So the data dir is locked first, and a second
 * process fails before opening anything. `command` names this process in the lock for the refusal.
 */
export async function openDatabase(options: { databaseUrl?: string; dataDir: string; poolSize?: number; command?: string }): Promise<Db> {
  if (options.databaseUrl) {
    // Loaded only here: a coordinator on the embedded database never holds the PostgreSQL client.
    const { openPostgres } = await import('./postgres-client.js');
    const kysely = openPostgres(options.databaseUrl, options.poolSize ?? 10);
    return { kysely, kind: 'postgres', databaseUrl: options.databaseUrl, close: () => kysely.destroy() };
  }
  const lock = lockDataDir(options.dataDir, options.command ?? 'coordinator');
  try {
    compileDatabaseLightly();
    const { PGlite } = await import('@electric-sql/pglite');
    const { PGliteDialect } = await import('kysely-pglite-dialect');
    const dir = join(options.dataDir, 'db');
    mkdirSync(dir, { recursive: true });
    if (!existsSync(join(dir, 'PG_VERSION'))) await createDataDirApart(dir);
    const installation = await InstallationBundle.open();
    const pglite = await PGlite.create(dir, { startParams: [...PGlite.defaultStartParams, ...pgliteSettings()], fsBundle: installation });
    installation.keepServingFiles(pglite.Module.FS as unknown as InstallationFs);
    const kysely = new Kysely<Database>({ dialect: new PGliteDialect(copyingEmbedded(pglite)) });
    const close = async () => {
      try {
        await kysely.destroy();
      } finally {
        lock.release();
      }
    };
    return { kysely, kind: 'pglite', pglite, close };
  } catch (err) {
    lock.release();
    throw err;
  }
}

/**
 * The embedded database is PostgreSQL compiled to WebAssembly. V8 first compiles it with its fast
 * baseline compiler, then again with its optimising one for the functions that run hot; the second
 * compilation held memory an idle coordinator otherwise does not (bench:rss, in bench/README.md)
 * for no speed a coordinator's queries showed. So this process keeps to the baseline compiler. Set before the module is compiled; it changes
 * nothing for JavaScript.
 */
function compileDatabaseLightly(): void {
  setFlagsFromString('--liftoff-only');
}

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
 * Once the coordinator serves: the embedded database writes back every page its start-up changed
 * (migrations, the first admin token, the reads that set a row's commit hint), which its small buffer
 * pool (`pgliteSettings`) would otherwise write back whenever an idle coordinator's own reads needed the
 * room. After it, nothing start-up changed is left to write back while the coordinator idles (a
 * first read of a row whose commit hint was never set still dirties its page). PostgreSQL's own
 * checkpointer sees to its pages.
 */
export async function writeBackStartUp(db: Db): Promise<void> {
  if (db.kind === 'pglite') await sql`CHECKPOINT`.execute(db.kysely);
}

/**
 * Creating a data dir runs initdb in a second, temporary database instance whose memory (more than
 * the coordinator's own, bench:rss) the JavaScript runtime gives back only when it next collects garbage, which an idle
 * coordinator may not do for hours. So a new data dir is created by a short-lived child process:
 * everything initdb touched goes back to the system when it exits, and this process then opens the
 * finished files like any later start.
 */
async function createDataDirApart(dir: string): Promise<void> {
  // Run from this file's folder, so the child finds the same @electric-sql/pglite this process uses.
  const script = `const { PGlite } = await import('@electric-sql/pglite'); const db = await PGlite.create(${JSON.stringify(dir)}, { startParams: [...PGlite.defaultStartParams, ...${JSON.stringify(pgliteSettings())}] }); await db.close();`;
  await new Promise<void>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', script],
      { cwd: dirname(fileURLToPath(import.meta.url)), env: { ...process.env, NODE_OPTIONS: '' }, maxBuffer: 4 * 1024 * 1024 },
      (err, _stdout, stderr) => {
        if (err) reject(new Error(`creating the embedded database in ${dir} failed: ${stderr.trim() || err.message}`, { cause: err }));
        else resolve();
      },
    );
  });
}

/** In-memory PGlite, for tests that need a real database but no files; optionally from a dumped data dir. */
export async function openMemoryDatabase(loadDataDir?: File | Blob): Promise<Db> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGliteDialect } = await import('kysely-pglite-dialect');
  const pglite = await PGlite.create(loadDataDir ? { loadDataDir } : {});
  const kysely = new Kysely<Database>({ dialect: new PGliteDialect(copyingEmbedded(pglite)) });
  return { kysely, kind: 'pglite', pglite, close: () => kysely.destroy() };
}

/** The database was migrated by a newer build: this one refuses it, having written nothing. */
export class SchemaTooNewError extends Error {
  constructor(
    readonly unknown: readonly string[],
    readonly newestKnown: string,
  ) {
    super(
      `the database schema is newer than this coordinator build: it has ${unknown.length === 1 ? 'migration' : 'migrations'} ${unknown.join(', ')}, which this build (newest migration ${newestKnown}) does not know, ` +
        'so a newer build migrated it. Run the newer build (upgrade this replica), or restore a backup taken before the upgrade; this build changed nothing',
    );
    this.name = 'SchemaTooNewError';
  }
}

/**
 * Applies the migrations this build has and the database lacks. A database that records a migration
 * this build does not have was migrated by a newer build, whose schema this one cannot vouch for: it
 * is refused before the migrator runs, so nothing is written (the migrator would take its lock and
 * fail with a message about corruption). `known` is this build's list; tests pass a shorter one to
 * stand for an older build.
 */
export async function migrateToLatest(db: Kysely<Database>, known: Record<string, Migration> = migrations): Promise<string[]> {
  await refuseNewerSchema(db, known);
  const migrator = new Migrator({ db, provider: { getMigrations: async () => known } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw new Error(`database migration failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

async function refuseNewerSchema(db: Kysely<Database>, known: Record<string, Migration>): Promise<void> {
  const table = await sql<{ t: string | null }>`SELECT to_regclass('kysely_migration')::text AS t`.execute(db);
  if (!table.rows[0]?.t) return;
  const applied = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(db);
  const unknown = applied.rows.map((r) => r.name).filter((name) => !Object.hasOwn(known, name));
  if (unknown.length) throw new SchemaTooNewError(unknown, Object.keys(known).sort().at(-1) ?? '(none)');
}
