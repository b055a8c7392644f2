import { type Kysely, sql } from 'kysely';
import { loadMigrations, migrations, type MigrationLoader } from '../../../../migrations/index.js';
import type { Database } from './database.js';

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
 * fail with a message about corruption). A database that has them all is left to itself, and neither
 * the migrations nor the migrator are loaded. `known` is this build's list; tests pass a shorter one
 * to stand for an older build.
 */
export async function migrateToLatest(db: Kysely<Database>, known: Record<string, MigrationLoader> = migrations): Promise<string[]> {
  const applied = await appliedMigrations(db);
  const unknown = applied.filter((name) => !Object.hasOwn(known, name));
  if (unknown.length) throw new SchemaTooNewError(unknown, Object.keys(known).sort().at(-1) ?? '(none)');
  const have = new Set(applied);
  if (Object.keys(known).every((name) => have.has(name))) return [];
  const { Migrator } = await import('kysely/migration');
  const loaded = await loadMigrations(known);
  const migrator = new Migrator({ db, provider: { getMigrations: async () => loaded } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw new Error(`database migration failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** The migrations the database records, by name; none before its first. */
async function appliedMigrations(db: Kysely<Database>): Promise<string[]> {
  const table = await sql<{ t: string | null }>`SELECT to_regclass('kysely_migration')::text AS t`.execute(db);
  if (!table.rows[0]?.t) return [];
  const applied = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(db);
  return applied.rows.map((r) => r.name);
}
