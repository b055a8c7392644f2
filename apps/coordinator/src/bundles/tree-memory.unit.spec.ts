import { generateKeyPairSync } from 'node:crypto';
import type { Kysely } from 'kysely';
import {
  consistencyHashes,
  decodeProof,
  EMPTY_ROOT,
  expandInclusion,
  extensionHashes,
  leafHash,
  nodeHash,
  signTreeCheckpoint,
  splitOf,
  TREE_CHECKPOINT_HEADER,
  TREE_CONSISTENCY_HEADER,
  TREE_PROOF_HEADER,
  decodeTreeProof,
  encodeStampLeaf,
  TREE_FRONTIER_HEADER,
  TREE_INCLUSION_HEADER,
  TREE_LEAF_HEADER,
  treeOrigin,
  verifyConsistency,
  verifyInclusion,
} from '#bundle';
import type { Database } from '../db/index.js';
import { HASH_SLICE, TreeMemory, TreeProofs, treeHeldOf, withStampLeaf, type TreeHeld } from './tree-memory.js';

const held = (size: number | null): TreeHeld => ({ size, keeps: null });

const leaves = Array.from({ length: 300 }, (_, i) => leafHash(Buffer.from(`entry ${i}`)));

/** RFC 6962's definition, straight. */
function mth(xs: readonly Buffer[]): Buffer {
  if (xs.length === 0) return EMPTY_ROOT;
  if (xs.length === 1) return xs[0];
  const k = splitOf(xs.length);
  return nodeHash(mth(xs.slice(0, k)), mth(xs.slice(k)));
}

/**
 * The one statement TreeMemory makes (level-0 rows of ledger_tree from an index, below a bound, by
 * index), answered from `rows`; each statement's bounds are recorded.
 */
function fakeDb(rows: () => readonly Buffer[]) {
  const reads: { from: number; to: number }[] = [];
  const db = {
    selectFrom: () => {
      let from = 0;
      let to = Infinity;
      const q = {
        select: () => q,
        orderBy: () => q,
        where: (column: string, op: string, value: number) => {
          if (column === 'idx' && op === '>=') from = value;
          if (column === 'idx' && op === '<') to = value;
          return q;
        },
        execute: async () => {
          reads.push({ from, to });
          return rows()
            .map((hash, idx) => ({ idx, hash }))
            .filter((r) => r.idx >= from && r.idx < to);
        },
      };
      return q;
    },
  };
  return { db: db as unknown as Kysely<Database>, reads };
}

const noDb = fakeDb(() => {
  throw new Error('no database read expected');
}).db;

const { privateKey } = generateKeyPairSync('ed25519');
const note = (size: number, root: Buffer) =>
  signTreeCheckpoint(
    {
      origin: treeOrigin('florete.ledger/0123456789abcdef'),
      size,
      root: root.toString('hex'),
      time: '2026-12-02T00:00:00.000Z',
      trustVersion: 1,
      chain: 'ab'.repeat(32),
    },
    { kid: 'k', privateKey },
  );

describe('TreeMemory', () => {
  it('holds the RFC 6962 tree however its leaves arrive, and proves from it', () => {
    const memory = new TreeMemory(noDb);
    for (const batch of [1, 2, 5, 8, 13, 21, 50, 200]) {
      const start = memory.size;
      memory.append(leaves.slice(start, Math.min(leaves.length, start + batch)));
    }
    expect(memory.size).toBe(300);
    // 300 leaves and the complete subtrees above them (n − popcount(n) of them: 296), 32 bytes each.
    expect(memory.bytes).toBe((300 + 296) * 32);
    for (const n of [1, 2, 3, 7, 64, 65, 255, 256, 300]) {
      const root = memory.root(n);
      expect(root.toString('hex')).toBe(mth(leaves.slice(0, n)).toString('hex'));
      for (const i of [0, n >> 1, n - 1]) expect(verifyInclusion(leaves[i], i, n, memory.inclusion(i, n), root)).toBe(true);
      for (const m of [1, n >> 1 || 1, n]) expect(verifyConsistency(m, n, memory.root(m), root, memory.consistency(m, n))).toBe(true);
    }
  });

  it('refuses a hash it does not hold rather than making one up', () => {
    const memory = new TreeMemory(noDb);
    memory.append(leaves.slice(0, 5));
    expect(() => memory.read({ level: 0, index: 5 })).toThrow(/no hash at level 0, index 5/);
    expect(() => memory.read({ level: 3, index: 0 })).toThrow(/no hash/);
    expect(() => memory.root(6)).toThrow();
  });

  it('catches up by reading only the leaves it lacks, one load for concurrent callers', async () => {
    const { db, reads } = fakeDb(() => leaves);
    const memory = new TreeMemory(db);
    memory.append(leaves.slice(0, 100));
    await Promise.all([memory.ensure(250), memory.ensure(200), memory.ensure(250)]);
    expect(memory.size).toBe(250);
    expect(reads).toEqual([{ from: 100, to: 250 }]);
    await memory.ensure(120);
    expect(reads).toHaveLength(1);
    expect(memory.root(250).equals(mth(leaves.slice(0, 250)))).toBe(true);
  });

  it('hashes a large catch-up in slices, the event loop turning between them, and starts again when reset meanwhile', async () => {
    const many = Array.from({ length: 5 * HASH_SLICE + 7 }, (_, i) => leafHash(Buffer.from(`entry ${i}`)));
    const whole = new TreeMemory(noDb);
    whole.append(many);
    for (const resetAt of [null, 2 * HASH_SLICE]) {
      const memory = new TreeMemory(fakeDb(() => many).db);
      // The sizes memory has at each turn of the event loop while it catches up.
      const seen: number[] = [];
      let done = false;
      const watch = (): void => {
        seen.push(memory.size);
        if (memory.size === resetAt && !seen.slice(0, -1).includes(resetAt)) memory.reset();
        if (!done) setImmediate(watch);
      };
      setImmediate(watch);
      await memory.ensure(many.length).finally(() => (done = true));
      // After each full slice; with a reset at the second, the load begins again from nothing.
      const slices = [1, 2, 3, 4, 5].map((k) => k * HASH_SLICE);
      expect(seen.filter((n) => n > 0 && n < many.length)).toEqual(resetAt === null ? slices : [...slices.slice(0, 2), ...slices]);
      expect(memory.size).toBe(many.length);
      expect(memory.root(many.length).equals(whole.root(many.length))).toBe(true);
      expect(memory.bytes).toBe(whole.bytes);
    }
  });

  it('fails a catch-up over a gap in ledger_tree', async () => {
    const { db } = fakeDb(() => leaves.slice(0, 10));
    const memory = new TreeMemory(db);
    await expect(memory.ensure(20)).rejects.toThrow(/no leaf 10 below the signed size 20/);
    expect(memory.size).toBe(10);
  });
});

describe('TreeProofs', () => {
  /** Memory holding the first 40 leaves, and the proofs of their signed note, made ready. */
  const readyForty = async () => {
    const memory = new TreeMemory(noDb);
    memory.append(leaves.slice(0, 40));
    const proofs = new TreeProofs(memory);
    const root = memory.root(40);
    const n40 = note(40, root);
    await proofs.ready(n40);
    return { memory, proofs, root, n40 };
  };

  it('makes no headers for a note it has not made ready, and reads nothing to make ready a note memory covers', async () => {
    const memory = new TreeMemory(noDb);
    memory.append(leaves.slice(0, 40));
    const proofs = new TreeProofs(memory);
    const n40 = note(40, memory.root(40));
    expect(proofs.headers(n40, held(10))).toBeNull();
    expect(proofs.isReady(n40)).toBe(false);
    await proofs.ready(n40);
    expect(proofs.isReady(n40)).toBe(true);
    expect(proofs.headers(n40, held(null))).toEqual({ [TREE_CHECKPOINT_HEADER]: Buffer.from(n40).toString('base64') });
  });

  it('proves consistency from each size a node holds up to the note, and says when a node holds more', async () => {
    const { memory, proofs, root, n40 } = await readyForty();
    for (let from = 1; from <= 40; from++) {
      const h = proofs.headers(n40, held(from))!;
      const proof = decodeProof(h[TREE_CONSISTENCY_HEADER], TREE_CONSISTENCY_HEADER);
      expect(proof.n).toBe(from);
      expect(verifyConsistency(from, 40, memory.root(from), root, proof.hashes)).toBe(true);
      // Kept: the next answer from that size is the same header.
      expect(proofs.headers(n40, held(from))![TREE_CONSISTENCY_HEADER]).toBe(h[TREE_CONSISTENCY_HEADER]);
      expect(proofs.behind(n40, from)).toBe(false);
    }
    // No size, or none held: no proof. A node holding more than the note: none exists, and memory is behind it.
    expect(proofs.headers(n40, held(0))![TREE_CONSISTENCY_HEADER]).toBeUndefined();
    expect(proofs.headers(n40, held(null))![TREE_CONSISTENCY_HEADER]).toBeUndefined();
    expect(proofs.headers(n40, held(41))![TREE_CONSISTENCY_HEADER]).toBeUndefined();
    expect(proofs.behind(n40, 41)).toBe(true);
    expect(proofs.behind(n40, null)).toBe(false);
    expect(proofs.behind(note(41, root), 50)).toBe(false); // not ready: nothing known
  });

  it('sends the inclusion proof without what the consistency proof of the same answer shows', async () => {
    const { memory, proofs, root, n40 } = await readyForty();
    for (const [from, leaf] of [
      [null, 3],
      [30, 35],
      [30, 12],
      [40, 39],
    ] as const) {
      const h = proofs.headers(n40, held(from), leaf)!;
      const sent = decodeProof(h[TREE_INCLUSION_HEADER], TREE_INCLUSION_HEADER);
      expect(sent.n).toBe(leaf);
      const known = from === null ? null : consistencyHashes(from, 40, memory.root(from), root, decodeProof(h[TREE_CONSISTENCY_HEADER], 'c').hashes);
      const path = expandInclusion(leaf, 40, sent.hashes, known)!;
      expect(verifyInclusion(leaves[leaf], leaf, 40, path, root)).toBe(true);
      if (from === 30 && leaf === 35) expect(sent.hashes.length).toBeLessThan(path.length);
    }
    // A leaf the tree does not hold gets no inclusion proof.
    expect(proofs.headers(n40, held(null), 40)![TREE_INCLUSION_HEADER]).toBeUndefined();
  });

  it('sends a node that keeps its frontier an extension proof, and the inclusion proof without what that one shows', async () => {
    const { memory, proofs, root, n40 } = await readyForty();
    for (const [from, leaf] of [
      [null, 3],
      [0, null],
      [30, 35],
      [30, 12],
      [17, null],
      [40, 39],
      [40, null],
    ] as const) {
      const h = proofs.headers(n40, { size: from, keeps: 'frontier' }, leaf)!;
      expect([h[TREE_CONSISTENCY_HEADER], h[TREE_INCLUSION_HEADER]]).toEqual([undefined, undefined]);
      const parts = decodeTreeProof(h[TREE_PROOF_HEADER]);
      const extension = decodeProof(parts.extension, TREE_PROOF_HEADER);
      const start = from ?? 0;
      expect(extension.n).toBe(start);
      const shown = extensionHashes(start, start === 0 ? null : memory.root(start), memory.frontier(start), 40, root, extension.hashes)!;
      expect(shown.frontier).toEqual(memory.frontier(40));
      // Fewer hashes than the consistency proof from the same size, which carries the old tree's side too.
      if (start > 0 && start < 40)
        expect(extension.hashes.length).toBeLessThanOrEqual(decodeProof(proofs.headers(n40, held(start))![TREE_CONSISTENCY_HEADER], 'c').hashes.length);
      if (leaf === null) {
        expect(parts.inclusion).toBeNull();
        continue;
      }
      const sent = decodeProof(parts.inclusion!, TREE_INCLUSION_HEADER);
      const path = expandInclusion(leaf, 40, sent.hashes, shown.known)!;
      expect(verifyInclusion(leaves[leaf], leaf, 40, path, root)).toBe(true);
      // The leaf goes last in the same header, as the node reads it back.
      const stamp = encodeStampLeaf({ prev_hash: 'ab'.repeat(32), revision: 3, meta: {}, data: {} });
      const answered = withStampLeaf(h, stamp);
      expect(answered[TREE_LEAF_HEADER]).toBeUndefined();
      expect(decodeTreeProof(answered[TREE_PROOF_HEADER])).toEqual({ ...parts, leaf: stamp });
    }
    // A node keeping the frontier of a larger tree than the note: no proof exists.
    expect(proofs.headers(n40, { size: 41, keeps: 'frontier' })![TREE_PROOF_HEADER]).toBeUndefined();
    // To any other node the leaf is a header of its own.
    expect(withStampLeaf(proofs.headers(n40, held(30), 35)!, 'x')[TREE_LEAF_HEADER]).toBe('x');
  });

  it('hands every node keeping the frontier of one size the same headers when no inclusion proof goes with them, and keeps them from change', async () => {
    const { proofs, n40 } = await readyForty();
    const from17 = proofs.headers(n40, { size: 17, keeps: 'frontier' })!;
    expect(proofs.headers(n40, { size: 17, keeps: 'frontier' })).toBe(from17);
    // A leaf outside the tree adds no inclusion proof: the same answer.
    expect(proofs.headers(n40, { size: 17, keeps: 'frontier' }, 40)).toBe(from17);
    expect(Object.isFrozen(from17)).toBe(true);
    expect(() => {
      (from17 as Record<string, string>)[TREE_PROOF_HEADER] = 'changed';
    }).toThrow(TypeError);
    const from30 = proofs.headers(n40, { size: 30, keeps: 'frontier' })!;
    expect(from30).not.toBe(from17);
    expect(decodeProof(decodeTreeProof(from30[TREE_PROOF_HEADER]).extension, TREE_PROOF_HEADER).n).toBe(30);
    // With an inclusion proof, an answer of its own, and the kept one unchanged.
    const withLeaf = proofs.headers(n40, { size: 17, keeps: 'frontier' }, 20)!;
    expect(withLeaf).not.toBe(from17);
    expect(decodeTreeProof(withLeaf[TREE_PROOF_HEADER]).inclusion).not.toBeNull();
    expect(decodeTreeProof(from17[TREE_PROOF_HEADER]).inclusion).toBeNull();
  });

  it("sends a node that holds only a root the consistency proof and, for it to keep, the new tree's frontier", async () => {
    const { memory, proofs, n40 } = await readyForty();
    const h = proofs.headers(n40, { size: 30, keeps: 'root' })!;
    expect(decodeProof(h[TREE_CONSISTENCY_HEADER], 'c').n).toBe(30);
    expect(decodeProof(`0 ${h[TREE_FRONTIER_HEADER]}`, 'f').hashes).toEqual(memory.frontier(40));
    // An agent that says nothing of what it keeps (of before frontiers) is sent none.
    expect(proofs.headers(n40, held(30))![TREE_FRONTIER_HEADER]).toBeUndefined();
  });

  it('reloads memory once when its root is not the signed one, and fails when the database disagrees too', async () => {
    const { db, reads } = fakeDb(() => leaves);
    const memory = new TreeMemory(db);
    // Memory holding another history (a restored database): its root at 40 is not the signed one.
    memory.append([leafHash(Buffer.from('forged')), ...leaves.slice(1, 40)]);
    const proofs = new TreeProofs(memory);
    const n40 = note(40, mth(leaves.slice(0, 40)));
    await proofs.ready(n40);
    expect(reads).toEqual([{ from: 0, to: 40 }]);
    expect(memory.root(40).equals(mth(leaves.slice(0, 40)))).toBe(true);
    // A note whose root no stored tree has.
    await expect(proofs.ready(note(40, Buffer.alloc(32, 9)))).rejects.toThrow(/does not have the root its signed checkpoint of 40 entries names/);
  });
});

describe('treeHeldOf', () => {
  it('takes a non-negative integer size and a keeps of frontier or root, and nothing else', () => {
    expect(treeHeldOf({ 'florete-tree-size': '0' })).toEqual({ size: 0, keeps: null });
    expect(treeHeldOf({ 'florete-tree-size': '1000000', 'florete-tree-keeps': 'frontier' })).toEqual({ size: 1_000_000, keeps: 'frontier' });
    expect(treeHeldOf({ 'florete-tree-keeps': 'root' })).toEqual({ size: null, keeps: 'root' });
    for (const bad of [undefined, '', '-1', '1.5', ' 5', '0x10', '1'.repeat(16)]) expect(treeHeldOf({ 'florete-tree-size': bad }).size).toBeNull();
    for (const bad of [undefined, '', 'Frontier', 'frontier ', 'leaves']) expect(treeHeldOf({ 'florete-tree-keeps': bad }).keeps).toBeNull();
  });
});
