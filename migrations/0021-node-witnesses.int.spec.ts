import { Migrator } from 'kysely/migration';
import { createPostgresDatabase, hasPostgres } from '../test/support/databases.js';
import { openDatabase, openMemoryDatabase, type Db } from '../apps/coordinator/src/db/connect.js';
import { loadMigrations } from './index.js';

const kinds = hasPostgres ? ['pglite', 'postgres'] : ['pglite'];

describe.each(kinds)('0021-node-witnesses on %s', (kind) => {
  let db: Db;
  beforeEach(async () => {
    db = kind === 'postgres' ? await openDatabase({ databaseUrl: await createPostgresDatabase(), dataDir: '/nonexistent' }) : await openMemoryDatabase();
  });
  afterEach(() => db.close());

  const migrator = () => new Migrator({ db: db.kysely, provider: { getMigrations: () => loadMigrations() } });

  it('keeps status rows as they were, lets an older build write them, and holds one witness key a node', async () => {
    expect((await migrator().migrateTo('0020-ledger-tree')).error).toBeUndefined();
    await db.kysely.insertInto('node_status').values({ node: 'before', checkpoint: 'note' }).execute();
    expect((await migrator().migrateToLatest()).error).toBeUndefined();
    // A replica of the build before writes the columns it knows; the new ones stay null.
    await db.kysely.insertInto('node_status').values({ node: 'old-build', checkpoint: 'note' }).execute();
    const rows = await db.kysely.selectFrom('node_status').select(['node', 'checkpoint', 'cosigned_checkpoint', 'cosignature']).orderBy('node').execute();
    expect(rows).toEqual([
      { node: 'before', checkpoint: 'note', cosigned_checkpoint: null, cosignature: null },
      { node: 'old-build', checkpoint: 'note', cosigned_checkpoint: null, cosignature: null },
    ]);
    const key = { node: 'web-1', public_key: 'k1', credential_id: 'c1', registered_at: new Date(), position: 7 };
    await db.kysely.insertInto('node_witness_keys').values(key).execute();
    await expect(
      db.kysely
        .insertInto('node_witness_keys')
        .values({ ...key, public_key: 'k2' })
        .execute(),
    ).rejects.toThrow();
    expect(await db.kysely.selectFrom('node_witness_keys').select(['node', 'public_key', 'position']).execute()).toEqual([
      { node: 'web-1', public_key: 'k1', position: 7 },
    ]);
  });
});
