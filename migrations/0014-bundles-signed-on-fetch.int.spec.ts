import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { sha256Hex, signBundle } from '#bundle';
import { createPostgresDatabase, hasPostgres } from '../test/support/databases.js';
import { openDatabase, openMemoryDatabase, type Db } from '../apps/coordinator/src/db/connect.js';
import { SigningKeyStore } from '../apps/coordinator/src/core/signing-keys.js';
import { putBlob } from '../apps/coordinator/src/bundles/blobs.repository.js';
import { bundlePayloadBytes } from '../apps/coordinator/src/ledger/domain/bundle-payload.js';
import { signHeadBundle } from '../apps/coordinator/src/bundles/head-bundle.js';
import { appendEvents } from '../apps/coordinator/src/ledger/store/append.js';
import { nextRecordedAt, readLedgerHead } from '../apps/coordinator/src/ledger/store/read-head.js';
import { loadMigrations } from './index.js';

const kinds = hasPostgres ? ['pglite', 'postgres'] : ['pglite'];

describe.each(kinds)('0014-bundles-signed-on-fetch on %s', (kind) => {
  let db: Db;
  let dir: string;
  beforeEach(async () => {
    db = kind === 'postgres' ? await openDatabase({ databaseUrl: await createPostgresDatabase(), dataDir: '/nonexistent' }) : await openMemoryDatabase();
    dir = mkdtempSync(join(tmpdir(), 'florete-0014-'));
  });
  afterEach(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const migrator = () => new Migrator({ db: db.kysely, provider: { getMigrations: () => loadMigrations() } });

  it('keeps each head signed by the key of its stored JWS, under the same ETag, and signs on fetch the very bytes that were stored', async () => {
    expect((await migrator().migrateTo('0013-poll-notify')).error).toBeUndefined();
    const keys = await SigningKeyStore.open(join(dir, 'signing-keys.json'));
    const first = keys.activeKid();
    const second = await keys.addKey();
    // Heads as a coordinator of that time stored them: the stamp, and its JWS signed at publish; beta's
    // was re-signed by a key rotation, so its JWS names another key than its stamp.
    const stored: Record<string, { jws: string; etag: string }> = {};
    for (const [node, signer] of [
      ['alpha', first],
      ['beta', second],
    ] as const) {
      const content = Buffer.from(`{"node":"${node}"}\n`);
      const sha256 = sha256Hex(content);
      await putBlob(db.kysely, sha256, content);
      const data = {
        node,
        version: 1,
        set_digest: sha256Hex(node),
        retired: false,
        artifacts: [{ name: 'flor.json', sha256, size: content.byteLength }],
        publish_id: `p-${node}`,
      };
      const [event] = await db.kysely
        .transaction()
        .execute(async (trx) =>
          appendEvents(
            trx,
            await readLedgerHead(trx),
            [{ event: { type: 'node_set_stamped', stream: `node:${node}`, revision: 1, data }, meta: { actor: 'admin', kid: first } }],
            await nextRecordedAt(trx),
          ),
        );
      const jws = await signBundle(
        bundlePayloadBytes(data, event.position, event.recorded_at, () => content),
        keys.byKid(signer),
      );
      const etag = `"${sha256Hex(jws).slice(0, 40)}"`;
      stored[node] = { jws, etag };
      await sql`INSERT INTO node_heads (node, version, set_digest, retired, artifacts, jws, etag, position, publish_id, updated_at)
        VALUES (${node}, 1, ${data.set_digest}, false, ${JSON.stringify(data.artifacts)}, ${jws}, ${etag}, ${event.position}, ${data.publish_id}, ${event.recorded_at})`.execute(
        db.kysely,
      );
    }

    expect((await migrator().migrateToLatest()).error).toBeUndefined();

    const heads = await db.kysely.selectFrom('node_heads').selectAll().orderBy('node').execute();
    expect(heads.map((h) => ({ node: h.node, kid: h.kid, etag: h.etag }))).toEqual([
      { node: 'alpha', kid: first, etag: stored.alpha.etag },
      { node: 'beta', kid: second, etag: stored.beta.etag },
    ]);
    for (const head of heads) expect(await signHeadBundle(db.kysely, keys, head)).toBe(stored[head.node].jws);
    expect(Object.keys(heads[0])).not.toContain('jws');
  });
});
