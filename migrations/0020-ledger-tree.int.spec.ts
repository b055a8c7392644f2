import { Migrator } from 'kysely/migration';
import { createPostgresDatabase, hasPostgres } from '../test/support/databases.js';
import { openDatabase, openMemoryDatabase, type Db } from '../apps/coordinator/src/db/connect.js';
import { appendEvents } from '../apps/coordinator/src/ledger/store/append.js';
import { readLedgerHead } from '../apps/coordinator/src/ledger/store/read-head.js';
import { readTreeRoot, treeSize } from '../apps/coordinator/src/ledger/store/tree.js';
import { EMPTY_ROOT, leafHash, nodeHash, splitOf } from '#bundle';
import { loadMigrations } from './index.js';

const kinds = hasPostgres ? ['pglite', 'postgres'] : ['pglite'];

function mth(leaves: readonly Buffer[]): Buffer {
  if (leaves.length === 0) return EMPTY_ROOT;
  if (leaves.length === 1) return leaves[0];
  const k = splitOf(leaves.length);
  return nodeHash(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

describe.each(kinds)('0020-ledger-tree on %s', (kind) => {
  let db: Db;
  beforeEach(async () => {
    db = kind === 'postgres' ? await openDatabase({ databaseUrl: await createPostgresDatabase(), dataDir: '/nonexistent' }) : await openMemoryDatabase();
  });
  afterEach(() => db.close());

  const migrator = () => new Migrator({ db: db.kysely, provider: { getMigrations: () => loadMigrations() } });

  it('builds the tree of the events already in the ledger, across its batches, to the RFC 6962 root of their chain hashes', async () => {
    expect((await migrator().migrateTo('0019-token-scopes')).error).toBeUndefined();
    // Four batches of the migration and more, so a later batch needs a hash two batches old (the 16,384-leaf subtree).
    for (let i = 0, n = 0; n < 20_487; i++) {
      const count = Math.min(1 + ((i * 977) % 3000), 20_487 - n);
      const events = Array.from({ length: count }, (_, j) => ({
        event: { type: 'publish_confirmed', stream: `publish:p${n + j}`, revision: 2, data: { publish_id: `p${n + j}` } } as never,
        meta: { actor: 'tester' },
      }));
      await db.kysely.transaction().execute(async (trx) => appendEvents(trx, await readLedgerHead(trx), events, new Date()));
      n += count;
    }
    expect((await migrator().migrateToLatest()).error).toBeUndefined();
    const leaves = (await db.kysely.selectFrom('ledger').select('hash').orderBy('position').execute()).map((r) => leafHash(Buffer.from(r.hash, 'hex')));
    expect(leaves).toHaveLength(20_487);
    expect(await treeSize(db.kysely)).toBe(20_487);
    for (const size of [1, 4999, 5000, 5001, 10_000, 16_384, 20_487])
      expect((await readTreeRoot(db.kysely, size)).equals(mth(leaves.slice(0, size)))).toBe(true);
    // About two stored hashes an event, no more.
    const rows = Number(
      (
        await db.kysely
          .selectFrom('ledger_tree')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
    // 20,487 is 101000000000111 in binary: five 1 bits, so 2 × 20,487 − 5 stored hashes.
    expect(rows).toBe(2 * 20_487 - 5);
  });
});
