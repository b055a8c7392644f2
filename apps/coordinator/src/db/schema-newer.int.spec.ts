import { sql } from 'kysely';
import { migrations } from '../../../../migrations/index.js';
import { createPostgresDatabase, hasPostgres } from '../../../../test/support/databases.js';
import { openDatabase, openMemoryDatabase, type Db } from './connect.js';
import { migrateToLatest, SchemaTooNewError } from './migrate.js';

const kinds = hasPostgres ? ['pglite', 'postgres'] : ['pglite'];
const names = Object.keys(migrations);
/** An older build: every migration but the newest. */
const olderBuild = Object.fromEntries(names.slice(0, -1).map((n) => [n, migrations[n]]));

describe.each(kinds)('a database migrated by a newer build, on %s', (kind) => {
  let db: Db;
  beforeEach(async () => {
    db = kind === 'postgres' ? await openDatabase({ databaseUrl: await createPostgresDatabase(), dataDir: '/nonexistent' }) : await openMemoryDatabase();
  });
  afterEach(() => db.close());

  const applied = async () =>
    (await sql<{ name: string; timestamp: string }>`SELECT name, timestamp FROM kysely_migration ORDER BY name`.execute(db.kysely)).rows;
  const tables = async () =>
    (await sql<{ n: number }>`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'`.execute(db.kysely)).rows[0].n;

  it('is refused by an older build, naming both migrations and what to do, with nothing written', async () => {
    expect(await migrateToLatest(db.kysely)).toEqual(names);
    const before = { applied: await applied(), tables: await tables() };
    const refusal = migrateToLatest(db.kysely, olderBuild);
    await expect(refusal).rejects.toThrow(SchemaTooNewError);
    await expect(refusal).rejects.toThrow(
      `the database schema is newer than this coordinator build: it has migration ${names.at(-1)}, which this build (newest migration ${names.at(-2)}) does not know, so a newer build migrated it. Run the newer build (upgrade this replica), or restore a backup taken before the upgrade; this build changed nothing`,
    );
    expect({ applied: await applied(), tables: await tables() }).toEqual(before);
  });

  it('is refused even when the older build has migrations of its own still to apply', async () => {
    // A newer build's migration recorded on a database this build has not finished migrating: nothing of this build's is applied either.
    expect(await migrateToLatest(db.kysely, Object.fromEntries(names.slice(0, 3).map((n) => [n, migrations[n]])))).toEqual(names.slice(0, 3));
    await sql`INSERT INTO kysely_migration (name, timestamp) VALUES ('9999-from-the-future', now()::text)`.execute(db.kysely);
    const before = { applied: await applied(), tables: await tables() };
    await expect(migrateToLatest(db.kysely)).rejects.toThrow(
      /it has migration 9999-from-the-future, which this build \(newest migration 0\d{3}-[a-z-]+\) does not know/,
    );
    expect({ applied: await applied(), tables: await tables() }).toEqual(before);
  });

  it('is migrated as usual when it is older or current', async () => {
    expect(await migrateToLatest(db.kysely, olderBuild)).toEqual(names.slice(0, -1));
    expect(await migrateToLatest(db.kysely)).toEqual(names.slice(-1));
    expect(await migrateToLatest(db.kysely)).toEqual([]);
  });
});
