import { createRequire } from 'node:module';
import { sql } from 'kysely';
import {
  consistencyProof,
  inclusionProof,
  leafHash,
  nodeHash,
  openTreeCheckpoint,
  splitOf,
  EMPTY_ROOT,
  sha256Hex,
  verifyConsistency,
  verifyInclusion,
  inclusionCoords,
  consistencyCoords,
} from '#bundle';
import { testDatabases } from '../../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../../test/support/ledger-harness.js';
import { readTreeGrowth, readTreeHashes, readTreeRoot, treeGrower, treeSize } from './tree.js';

// An implementation that is not ours: Sigstore's verifier of transparency-log inclusion proofs and checkpoints.
const require = createRequire(import.meta.url);
const { verifyMerkleInclusion } = require('@sigstore/verify/dist/tlog/merkle') as { verifyMerkleInclusion: (entry: unknown, checkpoint: unknown) => void };
const { LogCheckpoint } = require('@sigstore/verify/dist/tlog/checkpoint') as { LogCheckpoint: { fromString(note: string): unknown } };

/** RFC 6962's definition, straight, over the leaves' hashes. */
function mth(leaves: readonly Buffer[]): Buffer {
  if (leaves.length === 0) return EMPTY_ROOT;
  if (leaves.length === 1) return leaves[0];
  const k = splitOf(leaves.length);
  return nodeHash(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

describe.each(testDatabases)('the ledger Merkle tree on $name', (database) => {
  let h: LedgerHarness;
  beforeEach(async () => {
    h = await ledgerHarness(database);
  });
  afterEach(() => h.close());

  const chain = async () =>
    (await h.db.kysely.selectFrom('ledger').select(['position', 'hash']).orderBy('position').execute()).map((r) => leafHash(Buffer.from(r.hash, 'hex')));
  const servedNote = async () =>
    (await h.db.kysely.selectFrom('ledger_checkpoint').select('tree_note').where('id', '=', 1).executeTakeFirstOrThrow()).tree_note!;

  it('grows with every append, in its transaction, to the RFC 6962 root of the events chain hashes; the signed tree checkpoint names it', async () => {
    const sizes: number[] = [];
    for (let round = 0; round < 6; round++) {
      await h.publish(Object.fromEntries(Array.from({ length: 1 + round * 3 }, (_, i) => [`n${i}`, { 'flor.json': `round ${round}` }])));
      sizes.push((await h.head()).position);
    }
    // A publish refused whole appends nothing to the chain, and nothing to the tree.
    await expect(h.publish({ n0: { 'flor.json': 'stale' } }, { expected_position: 1 })).rejects.toThrow(expect.objectContaining({ code: 'stale_position' }));
    const leaves = await chain();
    expect(await treeSize(h.db.kysely)).toBe(leaves.length);
    for (const size of [1, 2, 3, ...sizes]) expect((await readTreeRoot(h.db.kysely, size)).toString('hex')).toBe(mth(leaves.slice(0, size)).toString('hex'));

    const { checkpoint } = openTreeCheckpoint(await servedNote(), [h.keys.publicKey(h.keys.activeKid())]);
    const head = await h.head();
    expect(checkpoint).toMatchObject({ size: head.position, root: mth(leaves).toString('hex'), chain: head.hash });
    expect(checkpoint.origin).toMatch(/^florete\.ledger\/[0-9a-f]{16}\/tree$/);
  });

  it("proves each event in the signed tree and each older tree a prefix of it, as our verifier and Sigstore's both check", async () => {
    for (let round = 0; round < 4; round++) await h.publish({ a: { 'flor.json': `a ${round}` }, b: { 'flor.json': `b ${round}` } });
    const note = await servedNote();
    const { checkpoint } = openTreeCheckpoint(note, [h.keys.publicKey(h.keys.activeKid())]);
    const n = checkpoint.size;
    const root = Buffer.from(checkpoint.root, 'hex');
    const entries = (await h.db.kysely.selectFrom('ledger').select('hash').orderBy('position').execute()).map((r) => Buffer.from(r.hash, 'hex'));
    // Sigstore reads the checkpoint's body itself: origin, size and root, as C2SP defines them.
    const parsed = LogCheckpoint.fromString(note.slice(0, note.lastIndexOf('\n\n') + 1));
    for (let i = 0; i < n; i++) {
      const proof = inclusionProof(i, n, await readTreeHashes(h.db.kysely, inclusionCoords(i, n)));
      expect(verifyInclusion(leafHash(entries[i]), i, n, proof, root)).toBe(true);
      const entry = { canonicalizedBody: entries[i], inclusionProof: { logIndex: String(i), hashes: proof } };
      expect(() => verifyMerkleInclusion(entry, parsed)).not.toThrow();
      // Another entry at that index is not in the log.
      expect(() => verifyMerkleInclusion({ ...entry, canonicalizedBody: entries[(i + 1) % n] }, parsed)).toThrow(/root hash does not match/);
    }
    for (let m = 1; m < n; m++) {
      const old = await readTreeRoot(h.db.kysely, m);
      const proof = consistencyProof(m, n, await readTreeHashes(h.db.kysely, consistencyCoords(m, n)));
      expect(verifyConsistency(m, n, old, root, proof)).toBe(true);
    }
  });

  it('grows run by run, as an append sends its rows, to the tree it grows to in one piece', async () => {
    await h.publish({ a: { 'flor.json': 'one' }, b: { 'flor.json': 'one' } });
    const before = await chain();
    const hashes = Array.from({ length: 60 }, (_, i) => sha256Hex(`event ${i}`));
    // Runs that end on odd and even leaves alike, so a left sibling is often one a run before made.
    const runs = [1, 2, 3, 5, 8, 13, 1, 27];
    const grower = treeGrower(h.db.kysely, await readTreeGrowth(h.db.kysely, before.length, hashes.length));
    let at = 0;
    for (const n of runs) {
      await grower.run(hashes.slice(at, at + n));
      at += n;
    }
    expect(at).toBe(hashes.length);
    grower.done();
    expect(() => grower.done()).not.toThrow();
    await expect(grower.run([sha256Hex('one more')])).rejects.toThrow('the ledger tree was read for 60 new events, and is given more');
    const leaves = [...before, ...hashes.map((x) => leafHash(Buffer.from(x, 'hex')))];
    expect(await treeSize(h.db.kysely)).toBe(leaves.length);
    for (let size = before.length; size <= leaves.length; size++) expect((await readTreeRoot(h.db.kysely, size)).equals(mth(leaves.slice(0, size)))).toBe(true);

    const short = treeGrower(h.db.kysely, await readTreeGrowth(h.db.kysely, leaves.length, 3));
    await short.run([sha256Hex('a'), sha256Hex('b')]);
    expect(() => short.done()).toThrow('the ledger tree was read for 3 new events, and is given 2');
  });

  it('catches up with events a replica of an older build appended without the tree', async () => {
    await h.publish({ a: { 'flor.json': 'one' } });
    const before = await treeSize(h.db.kysely);
    // As such a replica leaves it: the last two events in the chain, not in the tree (nor any subtree holding them).
    const cut = before - 2;
    await sql`DELETE FROM ledger_tree WHERE (idx + 1) * (2 ^ level)::bigint > ${cut}`.execute(h.db.kysely);
    expect(await treeSize(h.db.kysely)).toBe(cut);
    await h.publish({ a: { 'flor.json': 'two' } });
    const leaves = await chain();
    expect(await treeSize(h.db.kysely)).toBe(leaves.length);
    expect((await readTreeRoot(h.db.kysely, leaves.length)).equals(mth(leaves))).toBe(true);
  });
});
