import * as jose from 'jose';
import { sql } from 'kysely';
import { BundlePayload } from '#contracts';
import { EMPTY_SET_DIGEST, verifyBundleSignature } from '#bundle';
import { testDatabases, hasPostgres } from '../../../../test/support/databases.js';
import { ledgerHarness, writerOf, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import { openDatabase } from '../db/index.js';
import { PublishTreeHandler } from './commands/publish-tree.handler.js';
import { PublishTreeCommand } from './commands/publish-tree.command.js';
import { verifyLedger } from './store/verify.js';
import { appendEvents } from './store/append.js';
import { lockLedger } from './store/lock.js';
import { readLedgerHead } from './store/read-head.js';
import { readEvents } from './store/read-events.js';
import { chainHash, GENESIS_HASH } from './domain/hash-chain.js';
import { rebuildProjections } from '../projections/index.js';
import { SigningKeyStore } from '../core/index.js';
import { DomainError } from '../common/index.js';
import { changeKeys } from '../trust/index.js';
import { signHeadBundle } from '../bundles/head-bundle.js';
import { bundleEtag } from './domain/bundle-payload.js';

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'no error';
  } catch (e) {
    if (e instanceof DomainError) return e.code;
    throw e;
  }
}

describe.each(testDatabases)('ledger on $name', (database) => {
  let h: LedgerHarness;
  beforeEach(async () => {
    h = await ledgerHarness(database);
  });
  afterEach(async () => {
    await h.close();
  });

  const versionsOf = async (node: string) =>
    (await h.db.kysely.selectFrom('node_versions').select('version').where('node', '=', node).orderBy('version').execute()).map((r) => r.version);
  const headOf = (node: string) => h.db.kysely.selectFrom('node_heads').selectAll().where('node', '=', node).executeTakeFirstOrThrow();
  const payloadOf = async (node: string) => {
    const jws = await signHeadBundle(h.db.kysely, h.keys, await headOf(node));
    const { payload } = await verifyBundleSignature(jws, h.keys.jwks());
    return BundlePayload.parse(JSON.parse(Buffer.from(payload).toString('utf8')));
  };

  it('numbers each node 1, 2, 3 without gaps, across retire and re-add', async () => {
    await h.publish({ alpha: { 'flor.json': '1' } });
    await h.publish({ alpha: { 'flor.json': '2' } });
    await h.retire('alpha');
    await h.publish({ alpha: { 'flor.json': '2' } });
    expect(await versionsOf('alpha')).toEqual([1, 2, 3, 4]);
    const events = await readEvents(h.db.kysely, 0, 100);
    expect(events.map((e) => e.position)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.stream === 'node:alpha').map((e) => e.revision)).toEqual([1, 2, 3, 4]);
  });

  it('stamps only nodes whose set changed, leaving the others and their bundles as they were', async () => {
    await h.publish({ alpha: { 'flor.json': 'a1' }, beta: { 'flor.json': 'b1' } });
    const betaBefore = await headOf('beta');
    const r = await h.publish({ alpha: { 'flor.json': 'a2' }, beta: { 'flor.json': 'b1' } });
    expect(r.changed).toEqual([{ node: 'alpha', from: 1, to: 2 }]);
    expect(r.unchanged).toBe(1);
    const betaAfter = await headOf('beta');
    expect(betaAfter.etag).toBe(betaBefore.etag);
    expect(betaAfter.version).toBe(1);
  });

  it('records nothing for an identical tree and leaves the head where it was', async () => {
    await h.publish({ alpha: { 'flor.json': 'same' } });
    const before = await h.head();
    const r = await h.publish({ alpha: { 'flor.json': 'same' } });
    expect(r).toEqual({ publish_id: null, position: before.position, changed: [], unchanged: 1 });
    expect(await h.head()).toEqual(before);
  });

  it('refuses a tree naming a blob that was never uploaded and writes nothing', async () => {
    await h.publish({ alpha: { 'flor.json': 'x' } });
    const before = await h.head();
    const missing = 'f'.repeat(64);
    const code = await codeOf(h.publishRequest({ message: 'm', nodes: { alpha: { artifacts: { 'flor.json': missing } }, beta: { artifacts: {} } } }));
    expect(code).toBe('missing_blobs');
    expect(await h.head()).toEqual(before);
    expect(await h.db.kysely.selectFrom('node_heads').select('node').execute()).toEqual([{ node: 'alpha' }]);
  });

  it('rolls back every event and projection row when projecting fails part-way', async () => {
    await h.publish({ alpha: { f: '1' }, beta: { f: '1' } });
    const before = await h.head();
    const headsBefore = await h.db.kysely.selectFrom('node_heads').selectAll().orderBy('node').execute();
    // The database refuses gamma's head: by then the events are appended and alpha's and beta's heads moved.
    await sql`CREATE FUNCTION test_refuse_gamma() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.node = 'gamma' THEN RAISE EXCEPTION 'projecting gamma failed'; END IF; RETURN NEW; END $$`.execute(h.db.kysely);
    await sql`CREATE TRIGGER test_refuse_gamma BEFORE INSERT ON node_heads FOR EACH ROW EXECUTE FUNCTION test_refuse_gamma()`.execute(h.db.kysely);
    await expect(h.publish({ alpha: { f: '2' }, beta: { f: '3' }, gamma: { f: '4' } })).rejects.toThrow('projecting gamma failed');
    expect(await h.head()).toEqual(before);
    expect(await h.db.kysely.selectFrom('node_heads').selectAll().orderBy('node').execute()).toEqual(headsBefore);
    expect(await versionsOf('alpha')).toEqual([1]);
    expect(await h.db.kysely.selectFrom('publishes').select('position').where('position', '>', before.position).execute()).toEqual([]);
  });

  it('refuses a stale expected_position and writes nothing', async () => {
    const first = await h.publish({ alpha: { f: '1' } });
    await h.publish({ alpha: { f: '2' } });
    const before = await h.head();
    expect(await codeOf(h.publish({ alpha: { f: '3' } }, { expected_position: first.position }))).toBe('stale_position');
    expect(await h.head()).toEqual(before);
    const ok = await h.publish({ alpha: { f: '3' } }, { expected_position: before.position });
    expect(ok.changed).toEqual([{ node: 'alpha', from: 2, to: 3 }]);
  });

  it('never records an event earlier than the one before it, even when the clock steps back', async () => {
    await h.publish({ alpha: { f: '1' } });
    // An event recorded an hour ahead of this host's clock, as after a clock correction.
    const ahead = new Date(Date.now() + 3_600_000);
    await h.db.kysely.transaction().execute(async (trx) => {
      await lockLedger(trx);
      await appendEvents(
        trx,
        await readLedgerHead(trx),
        [{ event: { type: 'signing_key_rotated', stream: 'identity:keys', revision: 1, data: { kid: 'k' } }, meta: { actor: 'tester' } }],
        ahead,
      );
    });
    await h.publish({ alpha: { f: '2' } });
    const times = (await readEvents(h.db.kysely, 0, 100)).map((e) => Date.parse(e.recorded_at));
    expect(times.slice(2)).toEqual([ahead.getTime(), ahead.getTime(), ahead.getTime()]);
    expect((await verifyLedger(h.db.kysely)).ok).toBe(true);
  });

  it('chains every event to the one before it', async () => {
    await h.publish({ alpha: { f: '1' }, beta: { f: '1' } });
    await h.publish({ alpha: { f: '2' } });
    const events = await readEvents(h.db.kysely, 0, 100);
    let prev = GENESIS_HASH;
    for (const e of events) {
      expect(e.prev_hash).toBe(prev);
      expect(e.hash).toBe(chainHash(prev, e));
      prev = e.hash;
    }
    expect(await h.head()).toEqual({ position: events.length, hash: prev });
    expect(await verifyLedger(h.db.kysely)).toEqual({ ok: true, position: events.length, hash: prev });
  });

  it('rejects UPDATE, DELETE and TRUNCATE on the ledger in the database itself', async () => {
    await h.publish({ alpha: { f: '1' } });
    await expect(sql`UPDATE ledger SET type = 'x' WHERE position = 1`.execute(h.db.kysely)).rejects.toThrow(/append-only/);
    await expect(sql`DELETE FROM ledger WHERE position = 1`.execute(h.db.kysely)).rejects.toThrow(/append-only/);
    await expect(sql`TRUNCATE ledger`.execute(h.db.kysely)).rejects.toThrow(/append-only/);
    expect((await verifyLedger(h.db.kysely)).ok).toBe(true);
  });

  it('locates a row a superuser edited behind the trigger', async () => {
    await h.publish({ alpha: { f: '1' } });
    await h.publish({ alpha: { f: '2' } });
    await h.publish({ alpha: { f: '3' } });
    await h.db.kysely.transaction().execute(async (trx) => {
      await sql`SET LOCAL session_replication_role = replica`.execute(trx);
      await sql`UPDATE ledger SET meta = jsonb_set(meta, '{actor}', '"mallory"') WHERE position = 3`.execute(trx);
    });
    expect(await verifyLedger(h.db.kysely)).toEqual({ ok: false, position: 3, reason: expect.stringContaining('altered') });
  });

  it('rebuilds projections from the ledger identical to the incremental ones', async () => {
    await h.publish({ alpha: { f: '1', g: 'x' }, beta: { f: '1' } });
    await h.publish({ alpha: { f: '2', g: 'x' }, gamma: { f: 'g' } });
    await changeKeys(h.db.kysely, h.keys, { kind: 'rotate' }, 'tester');
    await h.rollback('alpha', 1);
    await h.retire('beta');
    await h.publish({ gamma: { f: 'g2' } }, { prune: true });
    const snapshot = async () => ({
      heads: await h.db.kysely.selectFrom('node_heads').selectAll().orderBy('node').execute(),
      versions: await h.db.kysely.selectFrom('node_versions').selectAll().orderBy('node').orderBy('version').execute(),
      publishes: await h.db.kysely.selectFrom('publishes').selectAll().orderBy('position').execute(),
    });
    const incremental = await snapshot();
    expect(incremental.heads.length).toBe(3);
    await rebuildProjections(h.db.kysely);
    expect(await snapshot()).toEqual(incremental);
  });

  it('rolls back by stamping a new version that carries the old content', async () => {
    await h.publish({ alpha: { 'flor.json': 'old' } });
    await h.publish({ alpha: { 'flor.json': 'new' } });
    const r = await h.rollback('alpha', 1);
    expect(r.changed).toEqual([{ node: 'alpha', from: 2, to: 3 }]);
    const p = await payloadOf('alpha');
    expect(p.version).toBe(3);
    expect(Buffer.from(p.artifacts[0].content, 'base64').toString()).toBe('old');
    const v1 = await h.db.kysely
      .selectFrom('node_versions')
      .select('set_digest')
      .where('node', '=', 'alpha')
      .where('version', '=', 1)
      .executeTakeFirstOrThrow();
    expect(p.set_digest).toBe(v1.set_digest);
  });

  it('retires with a final empty set that the bundle says is retired', async () => {
    await h.publish({ alpha: { f: '1' } });
    await h.retire('alpha');
    const p = await payloadOf('alpha');
    expect(p).toMatchObject({ node: 'alpha', version: 2, retired: true, artifacts: [], set_digest: EMPTY_SET_DIGEST });
    expect(await codeOf(h.retire('alpha'))).toBe('node_retired');
  });

  it('signs on fetch with a key another process made the signer after this one read the key file', async () => {
    await h.publish({ alpha: { f: '1' } });
    const stale = await SigningKeyStore.open(h.keys.path);
    const { kid } = await changeKeys(h.db.kysely, h.keys, { kind: 'rotate' }, 'tester');
    expect(stale.has(kid)).toBe(false);
    const head = await headOf('alpha');
    const jws = await signHeadBundle(h.db.kysely, stale, head);
    expect(jose.decodeProtectedHeader(jws).kid).toBe(kid);
    expect(jws).toBe(await signHeadBundle(h.db.kysely, h.keys, head));
  });

  it('signs nothing when stamping: the head names the key that signs its bundle when fetched, and an ETag that stands for those bytes', async () => {
    const r = await h.publish({ alpha: { 'flor.json': '{"a":1}\n' } });
    const p = await payloadOf('alpha');
    expect(p).toMatchObject({ node: 'alpha', version: 1, position: r.position - 1, publish_id: r.publish_id, retired: false });
    expect(p.artifacts).toEqual([
      { name: 'flor.json', sha256: expect.stringMatching(/^[0-9a-f]{64}$/), size: 8, content: Buffer.from('{"a":1}\n').toString('base64') },
    ]);
    const first = await headOf('alpha');
    const [stamp] = (await readEvents(h.db.kysely, 0, 100)).filter((e) => e.stream === 'node:alpha');
    expect(first.kid).toBe(h.keys.activeKid());
    expect(first.etag).toBe(bundleEtag(first.kid, stamp.hash));
    // Signed twice, the same bytes: what one ETag stands for on every replica.
    expect(await signHeadBundle(h.db.kysely, h.keys, first)).toBe(await signHeadBundle(h.db.kysely, h.keys, await headOf('alpha')));
    // A rotation moves the head to the new signer: same payload, new signature, new ETag.
    const { kid } = await changeKeys(h.db.kysely, h.keys, { kind: 'rotate' }, 'tester');
    const moved = await headOf('alpha');
    expect(moved).toMatchObject({ kid, version: 1, etag: bundleEtag(kid, stamp.hash) });
    expect(moved.etag).not.toBe(first.etag);
    const jws = await signHeadBundle(h.db.kysely, h.keys, moved);
    expect(jose.decodeProtectedHeader(jws).kid).toBe(kid);
    expect(jws.split('.')[1]).toBe((await signHeadBundle(h.db.kysely, h.keys, first)).split('.')[1]);
    await h.publish({ alpha: { 'flor.json': '{"a":2}\n' } });
    expect((await headOf('alpha')).kid).toBe(kid);
  });
});

(hasPostgres ? describe : describe.skip)('ledger concurrency on PostgreSQL', () => {
  it('serialises 50 concurrent publishes from two connection pools with no gap, no duplicate and a valid chain', async () => {
    const postgres = testDatabases.find((d) => d.name === 'postgres')!;
    const h = await ledgerHarness(postgres);
    const other = await openDatabase({ databaseUrl: h.db.url!, dataDir: '/nonexistent', poolSize: 10 });
    try {
      // Blobs first, so the race is purely between appends.
      const contents = Array.from({ length: 50 }, (_, i) => `content ${i}`);
      const trees: Record<string, string>[] = [];
      for (const c of contents) {
        await h.publish({ warm: { f: c } });
        trees.push({ f: c });
      }
      const base = await h.head();
      const warmHeads = (await h.db.kysely.selectFrom('node_heads').select(['node', 'artifacts']).where('node', '=', 'warm').execute()).length;
      expect(warmHeads).toBe(1);
      const shaOf = async (c: string) => (await import('#bundle')).sha256Hex(Buffer.from(c));
      const writers = [new PublishTreeHandler(writerOf(h.db, h.keys)), new PublishTreeHandler(writerOf(other, h.keys))];
      const results = await Promise.all(
        contents.map(async (c, i) =>
          writers[i % 2].execute(
            new PublishTreeCommand(
              { message: `race ${i}`, nodes: { alpha: { artifacts: { f: await shaOf(c) } }, beta: { artifacts: { f: await shaOf(`${c}`) } } } },
              'racer',
            ),
          ),
        ),
      );
      const stamped = results.filter((r) => r.publish_id !== null);
      // Consecutive publishes of the same content are no-ops; every other one stamps both nodes.
      const versions = (await h.db.kysely.selectFrom('node_versions').select('version').where('node', '=', 'alpha').orderBy('version').execute()).map(
        (r) => r.version,
      );
      expect(versions).toEqual(Array.from({ length: versions.length }, (_, i) => i + 1));
      expect(versions.length).toBe(stamped.length);
      expect(stamped.length).toBeGreaterThan(1);
      const events = await readEvents(h.db.kysely, base.position, 10_000);
      expect(events.map((e) => e.position)).toEqual(events.map((_, i) => base.position + i + 1));
      expect(events.length).toBe(stamped.length * 3);
      const positions = stamped.map((r) => r.position).sort((a, b) => a - b);
      expect(new Set(positions).size).toBe(positions.length);
      expect((await verifyLedger(h.db.kysely)).ok).toBe(true);
    } finally {
      await other.close();
      await h.close();
    }
  });
});
