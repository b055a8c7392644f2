import { Migrator } from 'kysely/migration';
import { createPostgresDatabase, hasPostgres } from '../test/support/databases.js';
import { openDatabase, openMemoryDatabase, type Db } from '../apps/coordinator/src/db/connect.js';
import { appendEvents } from '../apps/coordinator/src/ledger/store/append.js';
import { nextRecordedAt, readLedgerHead, readStreamRevision } from '../apps/coordinator/src/ledger/store/read-head.js';
import { loadMigrations } from './index.js';

const kinds = hasPostgres ? ['pglite', 'postgres'] : ['pglite'];

describe.each(kinds)('0016-api-token-lifecycle on %s', (kind) => {
  let db: Db;
  beforeEach(async () => {
    db = kind === 'postgres' ? await openDatabase({ databaseUrl: await createPostgresDatabase(), dataDir: '/nonexistent' }) : await openMemoryDatabase();
  });
  afterEach(() => db.close());

  const migrator = () => new Migrator({ db: db.kysely, provider: { getMigrations: () => loadMigrations() } });

  it('takes each existing token creator from its ledger event, gives none an expiry, and lets an older build keep inserting', async () => {
    expect((await migrator().migrateTo('0015-rollouts')).error).toBeUndefined();
    const token = (id: string, name: string, role: string) => ({ id, name, role, secret_hash: 'x' });
    // Before 0016 the table has none of the new columns: the older ones only.
    await db.kysely
      .insertInto('api_tokens')
      .values([token('first', 'admin', 'admin'), token('ci', 'ci', 'publisher'), token('orphan', 'orphan', 'reader')])
      .execute();
    const created = async (data: Record<string, unknown>, actor: string) =>
      db.kysely.transaction().execute(async (trx) => {
        const stream = 'identity:api' as const;
        const event = { type: 'api_token_created' as const, stream, revision: (await readStreamRevision(trx, stream)) + 1, data };
        await appendEvents(trx, await readLedgerHead(trx), [{ event, meta: { actor } }], await nextRecordedAt(trx));
      });
    await created({ id: 'first', name: 'admin', role: 'admin' }, 'coordinator');
    await created({ id: 'ci', name: 'ci', role: 'publisher' }, 'admin');
    expect((await migrator().migrateToLatest()).error).toBeUndefined();
    const rows = await db.kysely.selectFrom('api_tokens').select(['id', 'created_by', 'expires_at', 'last_used_at', 'revoked_by']).orderBy('id').execute();
    expect(rows).toEqual([
      { id: 'ci', created_by: 'admin', expires_at: null, last_used_at: null, revoked_by: null },
      { id: 'first', created_by: 'coordinator', expires_at: null, last_used_at: null, revoked_by: null },
      { id: 'orphan', created_by: 'unknown', expires_at: null, last_used_at: null, revoked_by: null },
    ]);
    // A replica of the build before, still serving during a rolling upgrade, inserts as it always did.
    await db.kysely
      .insertInto('api_tokens')
      .values(token('old-build', 'late', 'reader'))
      .execute();
    expect(await db.kysely.selectFrom('api_tokens').select(['created_by', 'expires_at']).where('id', '=', 'old-build').executeTakeFirst()).toEqual({
      created_by: 'unknown',
      expires_at: null,
    });
  });
});
