import { sql } from 'kysely';
import { decodeTrustDocument, openCheckpoint, pinOf, walkTrustChain } from '#bundle';
import { testDatabases } from '../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import { rebuildProjections } from '../projections/index.js';
import { readEvents } from '../ledger/index.js';
import { changeKeys } from './key-change.js';
import { signHeadBundle } from '../bundles/head-bundle.js';
import { readTrustChain } from './trust.repository.js';

describe.each(testDatabases)('trust versions and checkpoints on $name', (database) => {
  let h: LedgerHarness;
  beforeEach(async () => {
    h = await ledgerHarness(database);
  });
  afterEach(async () => {
    await h.close();
  });

  // Each head with the JWS its node would fetch now: signed on fetch with the key the head names.
  const heads = async () =>
    Promise.all(
      (await h.db.kysely.selectFrom('node_heads').selectAll().orderBy('node').execute()).map(async (head) => ({
        node: head.node,
        kid: head.kid,
        etag: head.etag,
        jws: await signHeadBundle(h.db.kysely, h.keys, head),
      })),
    );
  const kidOf = (jws: string) => JSON.parse(Buffer.from(jws.split('.')[0], 'base64url').toString()).kid as string;
  const checkpoint = async () => (await h.db.kysely.selectFrom('ledger_checkpoint').select('note').executeTakeFirstOrThrow()).note;

  it('writes version 1 on first use and signs a checkpoint of the head with every publish', async () => {
    const r = await h.publish({ alpha: { f: '1' }, beta: { f: '1' } });
    const chain = await readTrustChain(h.db.kysely, 0);
    expect(chain.map((v) => v.version)).toEqual([1]);
    const v1 = decodeTrustDocument(chain[0].document);
    expect(v1.kid).toBe(h.keys.activeKid());
    const opened = openCheckpoint(await checkpoint(), v1.doc.keys);
    expect(opened.checkpoint).toMatchObject({ position: r.position, hash: (await h.head()).hash, trustVersion: 1 });
  });

  it('rotates: the next version is signed by the old key, every head re-signed with the new one, recorded in the ledger', async () => {
    await h.publish({ alpha: { f: '1' }, beta: { f: '1' } });
    const before = await heads();
    const rotated = await changeKeys(h.db.kysely, h.keys, { kind: 'rotate' }, 'tester');
    expect(rotated).toMatchObject({ trust_version: 2, resigned: 2, revoked: [] });
    const after = await heads();
    expect(after.map((x) => kidOf(x.jws))).toEqual([rotated.kid, rotated.kid]);
    expect(after.map((x) => x.kid)).toEqual([rotated.kid, rotated.kid]);
    // Same payload bytes, a new signature and ETag.
    expect(after.map((x) => x.jws.split('.')[1])).toEqual(before.map((x) => x.jws.split('.')[1]));
    expect(after.map((x) => x.etag)).not.toEqual(before.map((x) => x.etag));
    const chain = await readTrustChain(h.db.kysely, 0);
    const walked = walkTrustChain(
      { ...pinOf(decodeTrustDocument(chain[0].document)) },
      chain.map((v) => v.document),
    );
    expect(walked.keys.map((k) => k.kid)).toEqual([rotated.kid]);
    expect(openCheckpoint(await checkpoint(), walked.keys).checkpoint.trustVersion).toBe(2);
    const last = (await readEvents(h.db.kysely, 0, 100)).at(-1)!;
    expect(last).toMatchObject({ type: 'signing_key_rotated', stream: 'identity:keys', data: { kid: rotated.kid, trust_version: 2, resigned: 2 } });
    // New content is signed by the new key.
    await h.publish({ alpha: { f: '2' } });
    expect(kidOf((await heads())[0].jws)).toBe(rotated.kid);
  });

  it('revokes the signer by rotating, an older key by listing it, and replays both to identical heads', async () => {
    await h.publish({ alpha: { f: '1' } });
    const first = h.keys.activeKid();
    const second = (await changeKeys(h.db.kysely, h.keys, { kind: 'rotate' }, 'tester')).kid;
    await h.publish({ beta: { f: '1' } });
    const revokedSigner = await changeKeys(h.db.kysely, h.keys, { kind: 'revoke', kid: second }, 'tester');
    expect(revokedSigner).toMatchObject({ trust_version: 3, revoked: [second], resigned: 2 });
    expect(revokedSigner.kid).not.toBe(second);
    const revokedOld = await changeKeys(h.db.kysely, h.keys, { kind: 'revoke', kid: first }, 'tester');
    expect(revokedOld).toMatchObject({ kid: revokedSigner.kid, trust_version: 4, revoked: [second, first], resigned: 0 });
    expect(h.keys.jwks().keys.map((k) => k.kid)).toEqual([revokedSigner.kid]);
    await expect(changeKeys(h.db.kysely, h.keys, { kind: 'revoke', kid: first }, 'tester')).rejects.toMatchObject({ code: 'already_revoked' });
    await expect(changeKeys(h.db.kysely, h.keys, { kind: 'revoke', kid: 'nope' }, 'tester')).rejects.toMatchObject({ code: 'unknown_key' });
    expect((await readTrustChain(h.db.kysely, 0)).length).toBe(4);
    const incremental = await heads();
    await rebuildProjections(h.db.kysely);
    expect(await heads()).toEqual(incremental);
  });

  it('keeps trust versions append-only in the database itself', async () => {
    await h.publish({ alpha: { f: '1' } });
    await expect(sql`UPDATE trust_versions SET signing_kid = 'x'`.execute(h.db.kysely)).rejects.toThrow(/append-only/);
    await expect(sql`DELETE FROM trust_versions`.execute(h.db.kysely)).rejects.toThrow(/append-only/);
  });
});
