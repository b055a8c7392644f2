import { sql, type Kysely } from 'kysely';
import { Migrator } from 'kysely/migration';
import { createPostgresDatabase, hasPostgres } from '../test/support/databases.js';
import { openDatabase, openMemoryDatabase, type Db } from '../apps/coordinator/src/db/connect.js';
import type { Database } from '../apps/coordinator/src/db/index.js';
import { loadMigrations } from './index.js';

const kinds = hasPostgres ? ['pglite', 'postgres'] : ['pglite'];

const head = (node: string, version: number, publishId: string) => ({
  node,
  version,
  set_digest: `digest-${node}-${version}`,
  retired: false,
  artifacts: JSON.stringify([{ name: 'flor.json', sha256: `sha-${node}-${version}`, size: 10 }]),
  kid: 'kid-1',
  etag: `"etag-${node}-${version}"`,
  position: version,
  publish_id: publishId,
  updated_at: new Date('2026-12-02T10:00:00Z'),
  confirm_within: null,
  confirmed_by: null,
});

async function schema(db: Kysely<Database>) {
  const indexes = await sql<{ indexname: string }>`SELECT indexname FROM pg_indexes WHERE tablename = 'node_heads' ORDER BY indexname`.execute(db);
  const options = await sql<{ reloptions: string[] | null }>`SELECT reloptions FROM pg_class WHERE relname = 'node_heads'`.execute(db);
  return { indexes: indexes.rows.map((r) => r.indexname), reloptions: options.rows[0]?.reloptions };
}

/** Moves every head to a new version and publish in one statement, and counts the updates that were heap-only. */
async function moveAll(db: Kysely<Database>, publishId: string): Promise<{ updated: number; hot: number }> {
  return db.transaction().execute(async (trx) => {
    // The backend's counts not yet reported, so taken before and after.
    const counts = async () => {
      const { rows } = await sql<{ updated: string; hot: string }>`SELECT pg_stat_get_xact_tuples_updated('node_heads'::regclass) AS updated,
        pg_stat_get_xact_tuples_hot_updated('node_heads'::regclass) AS hot`.execute(trx);
      return { updated: Number(rows[0]!.updated), hot: Number(rows[0]!.hot) };
    };
    const before = await counts();
    await sql`UPDATE node_heads SET version = version + 1, publish_id = ${publishId}, etag = etag || 'x', position = position + 1`.execute(trx);
    const after = await counts();
    return { updated: after.updated - before.updated, hot: after.hot - before.hot };
  });
}

describe.each(kinds)('0022-node-heads-hot on %s', (kind) => {
  let db: Db;
  beforeEach(async () => {
    db = kind === 'postgres' ? await openDatabase({ databaseUrl: await createPostgresDatabase(), dataDir: '/nonexistent' }) : await openMemoryDatabase();
  });
  afterEach(() => db.close());

  const migrator = () => new Migrator({ db: db.kysely, provider: { getMigrations: () => loadMigrations() } });

  it('keeps the heads as they were, drops the publish index and leaves each row room to move in place', async () => {
    expect((await migrator().migrateTo('0021-node-witnesses')).error).toBeUndefined();
    expect(await schema(db.kysely)).toEqual({ indexes: ['node_heads_pkey', 'node_heads_publish_idx'], reloptions: null });
    const rows = Array.from({ length: 200 }, (_, i) => head(`node-${String(i).padStart(3, '0')}`, 1, 'p1'));
    await db.kysely.insertInto('node_heads').values(rows).execute();
    const before = await db.kysely.selectFrom('node_heads').selectAll().orderBy('node').execute();

    expect((await migrator().migrateToLatest()).error).toBeUndefined();
    expect(await schema(db.kysely)).toEqual({ indexes: ['node_heads_pkey'], reloptions: ['fillfactor=50'] });
    expect(await db.kysely.selectFrom('node_heads').selectAll().orderBy('node').execute()).toEqual(before);
    // Every head moved by a publish stays on its page: no index entry is written for it.
    expect(await moveAll(db.kysely, 'p2')).toEqual({ updated: 200, hot: 200 });
    // And again: the versions the last move left are pruned to make the room.
    expect(await moveAll(db.kysely, 'p3')).toEqual({ updated: 200, hot: 200 });
  });

  it('makes a new database the same way', async () => {
    expect((await migrator().migrateToLatest()).error).toBeUndefined();
    expect(await schema(db.kysely)).toEqual({ indexes: ['node_heads_pkey'], reloptions: ['fillfactor=50'] });
    await db.kysely
      .insertInto('node_heads')
      .values(Array.from({ length: 50 }, (_, i) => head(`n${i}`, 1, 'p1')))
      .execute();
    expect(await moveAll(db.kysely, 'p2')).toEqual({ updated: 50, hot: 50 });
  });
});
