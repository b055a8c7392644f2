import { Migrator } from 'kysely/migration';
import { createPostgresDatabase, hasPostgres } from '../test/support/databases.js';
import { openDatabase, openMemoryDatabase, type Db } from '../apps/coordinator/src/db/connect.js';
import { loadMigrations } from './index.js';

const kinds = hasPostgres ? ['pglite', 'postgres'] : ['pglite'];

describe.each(kinds)('0019-token-scopes on %s', (kind) => {
  let db: Db;
  beforeEach(async () => {
    db = kind === 'postgres' ? await openDatabase({ databaseUrl: await createPostgresDatabase(), dataDir: '/nonexistent' }) : await openMemoryDatabase();
  });
  afterEach(() => db.close());

  const migrator = () => new Migrator({ db: db.kysely, provider: { getMigrations: () => loadMigrations() } });

  it('leaves every existing token unscoped, lets an older build keep inserting, and keeps labels per node', async () => {
    expect((await migrator().migrateTo('0018-node-owned')).error).toBeUndefined();
    const token = (id: string) => ({ id, name: id, role: 'publisher', secret_hash: 'x' });
    await db.kysely.insertInto('api_tokens').values(token('before')).execute();
    expect((await migrator().migrateToLatest()).error).toBeUndefined();
    // A replica of the build before, still serving during a rolling upgrade, inserts as it always did.
    await db.kysely.insertInto('api_tokens').values(token('old-build')).execute();
    await db.kysely
      .insertInto('api_tokens')
      .values({ ...token('scoped'), scope: JSON.stringify(['tag:edge']) })
      .execute();
    const rows = await db.kysely.selectFrom('api_tokens').select(['id', 'scope']).orderBy('id').execute();
    expect(rows).toEqual([
      { id: 'before', scope: null },
      { id: 'old-build', scope: null },
      { id: 'scoped', scope: ['tag:edge'] },
    ]);
    await db.kysely
      .insertInto('node_labels')
      .values({ node: 'web-1', tags: JSON.stringify(['edge']), groups: JSON.stringify([]), updated_at: new Date() })
      .execute();
    await expect(db.kysely.insertInto('node_labels').values({ node: 'web-1', tags: '[]', groups: '[]', updated_at: new Date() }).execute()).rejects.toThrow();
    expect(await db.kysely.selectFrom('node_labels').select(['node', 'tags', 'groups']).execute()).toEqual([{ node: 'web-1', tags: ['edge'], groups: [] }]);
  });
});
