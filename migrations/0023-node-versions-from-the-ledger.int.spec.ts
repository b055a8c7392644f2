import { sql, type Kysely } from 'kysely';
import { Migrator } from 'kysely/migration';
import { createPostgresDatabase, hasPostgres } from '../test/support/databases.js';
import { openDatabase, openMemoryDatabase, type Db } from '../apps/coordinator/src/db/connect.js';
import { loadVersion, readVersionsPage } from '../apps/coordinator/src/ledger/index.js';
import { loadMigrations } from './index.js';

const kinds = hasPostgres ? ['pglite', 'postgres'] : ['pglite'];
const at = new Date('2026-12-05T10:00:00Z');

/** A stamp's ledger row and the version row the build before projected from it, as it did. */
function stamp(position: number, node: string, version: number, publishId: string, retired = false) {
  const artifacts = retired ? [] : [{ name: 'flor.json', sha256: `sha-${node}-${version}`, size: 10 + version }];
  const data = { artifacts, node, publish_id: publishId, retired, set_digest: `digest-${node}-${version}`, version };
  return {
    ledger: {
      position,
      stream: `node:${node}`,
      revision: version,
      type: 'node_set_stamped',
      data: JSON.stringify(data),
      meta: JSON.stringify({ actor: `actor-${publishId}`, kid: 'kid-1' }),
      recorded_at: at,
      prev_hash: 'p'.repeat(64),
      hash: String(position).padStart(64, '0'),
    },
    version: {
      node,
      version,
      set_digest: data.set_digest,
      retired,
      artifacts: JSON.stringify(artifacts),
      publish_id: publishId,
      actor: `actor-${publishId}`,
      message: `message of ${publishId}`,
      recorded_at: at,
      position,
    },
  };
}

function record(position: number, publishId: string) {
  return {
    publish_id: publishId,
    position,
    kind: 'publish',
    actor: `actor-${publishId}`,
    message: `message of ${publishId}`,
    changed: '[]',
    unchanged: 0,
    recorded_at: at,
  };
}

describe.each(kinds)('0023-node-versions-from-the-ledger on %s', (kind) => {
  let db: Db;
  beforeEach(async () => {
    db = kind === 'postgres' ? await openDatabase({ databaseUrl: await createPostgresDatabase(), dataDir: '/nonexistent' }) : await openMemoryDatabase();
  });
  afterEach(() => db.close());

  const migrator = () => new Migrator({ db: db.kysely, provider: { getMigrations: () => loadMigrations() } });
  const versions = () => sql`SELECT * FROM node_versions ORDER BY node, version`.execute(db.kysely).then((r) => r.rows);

  it('keeps every version the table held, read from the stamps, and refuses a row written to it', async () => {
    expect((await migrator().migrateTo('0022-node-heads-hot')).error).toBeUndefined();
    const p1 = [stamp(1, 'alpha', 1, 'p1'), stamp(2, 'beta', 1, 'p1')];
    const p2 = [stamp(4, 'alpha', 2, 'p2'), stamp(5, 'beta', 2, 'p2', true)];
    // The tables as the build before had them: node_versions among them.
    const k = db.kysely as never as Kysely<Record<string, Record<string, unknown>>>;
    await k
      .insertInto('ledger')
      .values([...p1, ...p2].map((s) => s.ledger))
      .execute();
    await k
      .insertInto('publishes')
      .values([record(3, 'p1'), record(6, 'p2')])
      .execute();
    await k
      .insertInto('node_versions')
      .values([...p1, ...p2].map((s) => s.version))
      .execute();
    const before = await versions();
    expect(before).toHaveLength(4);

    expect((await migrator().migrateToLatest()).error).toBeUndefined();
    expect(await versions()).toEqual(before);
    expect(await sql`SELECT table_type FROM information_schema.tables WHERE table_name = 'node_versions'`.execute(db.kysely).then((r) => r.rows)).toEqual([
      { table_type: 'VIEW' },
    ]);
    // The coordinator's own readers, by the ledger's key.
    expect(await loadVersion(db.kysely, 'beta', 2)).toEqual({ version: 2, setDigest: 'digest-beta-2', retired: true, artifacts: [] });
    expect(await loadVersion(db.kysely, 'beta', 3)).toBeUndefined();
    expect((await readVersionsPage(db.kysely, 'alpha', null, 1)).map((v) => [v.version, v.publish_id, v.actor, v.message, Number(v.position)])).toEqual([
      [2, 'p2', 'actor-p2', 'message of p2', 4],
      [1, 'p1', 'actor-p1', 'message of p1', 1],
    ]);
    expect((await readVersionsPage(db.kysely, 'alpha', 2, 5)).map((v) => v.version)).toEqual([1]);
    // A replica of the build before, still writing version rows, is refused: its publish rolls back whole.
    await expect(
      k
        .insertInto('node_versions')
        .values(stamp(7, 'gamma', 1, 'p3').version)
        .execute(),
    ).rejects.toThrow(/view/);
  });
});
