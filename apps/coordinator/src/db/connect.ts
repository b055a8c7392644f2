import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { Kysely, sql } from 'kysely';
import { runApart } from '#runtime';
import { copyingEmbedded } from './copy-in.js';
import type { Database } from './database.js';
import { DataDirError, lockDataDir } from './data-dir-lock.js';
import { InstallationBundle, type InstallationFs } from './installation-files.js';
import { migrateToLatest } from './migrate.js';
import { createDataDir, pgliteSettings } from './new-data-dir.js';

export type DatabaseKind = 'postgres' | 'pglite';

export interface Db {
  readonly kysely: Kysely<Database>;
  readonly kind: DatabaseKind;
  /** The embedded instance, when kind is pglite. */
  readonly pglite?: import('@electric-sql/pglite').PGlite;
  /** The connection string, when kind is postgres: the change feed opens its own listening session with it. */
  readonly databaseUrl?: string;
  /** The migrations applied as the database was opened: every one, for an embedded data dir created new (createDataDirApart). */
  readonly migrated: readonly string[];
  close(): Promise<void>;
}

/**
 * PostgreSQL when a URL is given, otherwise the embedded PGlite database under dataDir/db. PGlite is
 * one process's memory over files: a second process opening the same files writes into a copy the
 * first never sees, and the first overwrites it later. So the data dir is locked first, and a second
 * process fails before opening anything. `command` names this process in the lock for the refusal.
 * A data dir without a database gets a new one, unless `existing` asks for one already there: then
 * it is refused, and nothing is created (not even the lock file).
 */
export async function openDatabase(options: {
  databaseUrl?: string;
  dataDir: string;
  poolSize?: number;
  command?: string;
  /** Only a database that exists: for the commands that work on what a coordinator recorded (verify, backup, rebuild, the keys). */
  existing?: boolean;
}): Promise<Db> {
  if (options.databaseUrl) {
    // Loaded only here: a coordinator on the embedded database never holds the PostgreSQL client.
    const { openPostgres } = await import('./postgres-client.js');
    const kysely = openPostgres(options.databaseUrl, options.poolSize ?? 10);
    return { kysely, kind: 'postgres', databaseUrl: options.databaseUrl, migrated: [], close: () => kysely.destroy() };
  }
  const dir = join(options.dataDir, 'db');
  if (options.existing && !holdsDatabase(dir))
    throw new DataDirError(
      'no_database',
      `${options.dataDir} holds no coordinator database: \`${options.command ?? 'this command'}\` works on the data dir a coordinator serves ` +
        '(FLORETE_DATA); `coordinator serve` or `coordinator migrate` creates one',
      null,
    );
  const lock = lockDataDir(options.dataDir, options.command ?? 'coordinator');
  try {
    compileDatabaseLightly();
    const { PGlite } = await import('@electric-sql/pglite');
    const { PGliteDialect } = await import('kysely-pglite-dialect');
    mkdirSync(dir, { recursive: true });
    // Asked again under the lock: a process that held it may have created the database meanwhile.
    const migrated = holdsDatabase(dir) ? [] : await createDataDirApart(dir);
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
    return { kysely, kind: 'pglite', pglite, migrated, close };
  } catch (err) {
    lock.release();
    throw err;
  }
}

/** Whether `dir` holds an embedded database: initdb writes PG_VERSION into every one it creates. */
function holdsDatabase(dir: string): boolean {
  return existsSync(join(dir, 'PG_VERSION'));
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
 * Creating a data dir runs initdb and then every migration in a second, temporary database instance
 * whose memory (more than the coordinator's own, bench:rss) the JavaScript runtime gives back only
 * when it next collects garbage, which an idle coordinator may not do for hours; the migrations grow
 * the database's own memory, which never shrinks, and compile code a later start never runs. So a new
 * data dir is created and migrated by a short-lived child process (`new-data-dir.ts`): everything it
 * touched goes back to the system when it exits, and this process then opens the finished files like
 * any later start. Returns the names of the migrations applied, in order.
 */
function createDataDirApart(dir: string): Promise<string[]> {
  return runApart({
    from: import.meta.url,
    script: './new-data-dir.js',
    arg: dir,
    here: () => createDataDir(dir),
    failure: `creating the embedded database in ${dir} failed`,
  });
}

/**
 * Applies the migrations the database lacks: the names of every migration applied to it since it was
 * opened, those a new data dir was created with (`Db.migrated`) first.
 */
export async function migrateOpened(db: Db): Promise<string[]> {
  return [...db.migrated, ...(await migrateToLatest(db.kysely))];
}

/** In-memory PGlite, for tests that need a real database but no files; optionally from a dumped data dir. */
export async function openMemoryDatabase(loadDataDir?: File | Blob): Promise<Db> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGliteDialect } = await import('kysely-pglite-dialect');
  const pglite = await PGlite.create(loadDataDir ? { loadDataDir } : {});
  const kysely = new Kysely<Database>({ dialect: new PGliteDialect(copyingEmbedded(pglite)) });
  return { kysely, kind: 'pglite', pglite, migrated: [], close: () => kysely.destroy() };
}
