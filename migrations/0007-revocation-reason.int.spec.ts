import { Migrator } from 'kysely/migration';
import { createPostgresDatabase, hasPostgres } from '../test/support/databases.js';
import { openDatabase, openMemoryDatabase, type Db } from '../apps/coordinator/src/db/connect.js';
import { appendEvents } from '../apps/coordinator/src/ledger/store/append.js';
import { nextRecordedAt, readLedgerHead, readStreamRevision } from '../apps/coordinator/src/ledger/store/read-head.js';
import { loadMigrations } from './index.js';

const kinds = hasPostgres ? ['pglite', 'postgres'] : ['pglite'];

describe.each(kinds)('0007-revocation-reason on %s', (kind) => {
  let db: Db;
  beforeEach(async () => {
    db = kind === 'postgres' ? await openDatabase({ databaseUrl: await createPostgresDatabase(), dataDir: '/nonexistent' }) : await openMemoryDatabase();
  });
  afterEach(() => db.close());

  const migrator = () => new Migrator({ db: db.kysely, provider: { getMigrations: () => loadMigrations() } });

  it('marks the credentials the ledger says were revoked at retirement, and no others', async () => {
    expect((await migrator().migrateTo('0006-activation')).error).toBeUndefined();
    const now = new Date('2026-11-29T08:00:00Z');
    const credential = (id: string, node: string, revoked: boolean) => ({ id, node, secret_hash: 'x', created_at: now, revoked_at: revoked ? now : null });
    // Before 0007 the table has no revoked_reason: insert only the older columns.
    await db.kysely
      .insertInto('node_credentials')
      .values([credential('retired1', 'gamma', true), credential('replaced', 'alpha', true), credential('live', 'alpha', false)])
      .execute();
    // The ledger as a coordinator of that time wrote it: the events alone, through the store (today's
    // writer also signs a checkpoint, whose table a later migration adds).
    const revoked = async (subject: string, data: Record<string, unknown>, actor: string) =>
      db.kysely.transaction().execute(async (trx) => {
        const stream = `identity:${subject}` as const;
        const event = { type: 'credential_revoked' as const, stream, revision: (await readStreamRevision(trx, stream)) + 1, data };
        await appendEvents(trx, await readLedgerHead(trx), [{ event, meta: { actor } }], await nextRecordedAt(trx));
      });
    await revoked('alpha', { node: 'alpha', credential_ids: ['replaced'] }, 'admin');
    await revoked('gamma', { node: 'gamma', credential_ids: ['retired1'], reason: 'retired' }, 'node:gamma');
    expect((await migrator().migrateToLatest()).error).toBeUndefined();
    const rows = await db.kysely.selectFrom('node_credentials').select(['id', 'revoked_reason']).orderBy('id').execute();
    expect(rows).toEqual([
      { id: 'live', revoked_reason: null },
      { id: 'replaced', revoked_reason: null },
      { id: 'retired1', revoked_reason: 'retired' },
    ]);
  });
});
