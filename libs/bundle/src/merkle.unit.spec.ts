import fc from 'fast-check';
import {
  appendCoords,
  appendLeaves,
  compactInclusion,
  completedBy,
  consistencyCoords,
  consistencyHashes,
  expandInclusion,
  extensionCoords,
  extensionHashes,
  extensionProof,
  frontierOf,
  consistencyProof,
  EMPTY_ROOT,
  inclusionCoords,
  inclusionProof,
  leafHash,
  nodeHash,
  rootCoords,
  splitOf,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
  type Coord,
} from './merkle.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const unhex = (s: string) => Buffer.from(s, 'hex');

// The Certificate Transparency reference leaves, and the root of every tree size 0..8 (RFC 6962 test data).
const LEAVES = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map(unhex);
const ROOTS = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];
// Reference proofs over the same leaves.
const INCLUSION = [
  {
    index: 0,
    size: 8,
    proof: [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  },
  {
    index: 5,
    size: 8,
    proof: [
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  },
];
const CONSISTENCY = [
  {
    from: 2,
    to: 8,
    proof: ['5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4'],
  },
  {
    from: 6,
    to: 8,
    proof: [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  },
  {
    from: 2,
    to: 5,
    proof: ['5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', 'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b'],
  },
];

/** A log in memory: every stored hash, as an append leaves them. */
class Store {
  readonly hashes = new Map<string, Buffer>();
  size = 0;
  reads = 0;
  append(entries: readonly Uint8Array[]): void {
    const needed = appendCoords(this.size, entries.length);
    const loaded = new Map(needed.map((c) => [`${c.level}/${c.index}`, this.get(c)]));
    for (const { coord, hash } of appendLeaves(this.size, entries.map(leafHash), (c) => loaded.get(`${c.level}/${c.index}`) ?? fail(c)))
      this.hashes.set(`${coord.level}/${coord.index}`, hash);
    this.size += entries.length;
  }
  get = (c: Coord): Buffer => {
    this.reads++;
    return this.hashes.get(`${c.level}/${c.index}`) ?? fail(c);
  };
}
const fail = (c: Coord): never => {
  throw new Error(`hash ${c.level}/${c.index} not stored`);
};

/** RFC 6962's definition, straight: the reference the stored-hash computations are held to. */
function mth(leaves: readonly Buffer[]): Buffer {
  if (leaves.length === 0) return EMPTY_ROOT;
  if (leaves.length === 1) return leaves[0];
  const k = splitOf(leaves.length);
  return nodeHash(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

describe('the Merkle tree (RFC 6962)', () => {
  const store = new Store();
  store.append(LEAVES);

  it('gives the reference root for every size, from the stored hashes alone', () => {
    for (let n = 0; n <= LEAVES.length; n++) expect(hex(treeRoot(n, store.get))).toBe(ROOTS[n]);
    expect(hex(EMPTY_ROOT)).toBe(ROOTS[0]);
  });

  it('splits at the largest power of two below n, not the middle', () => {
    expect([2, 3, 4, 5, 6, 8, 9, 1000].map(splitOf)).toEqual([1, 2, 2, 4, 4, 4, 8, 512]);
    expect(splitOf(2 ** 40 + 1)).toBe(2 ** 40);
  });

  it('makes the reference inclusion and consistency proofs, and verifies them', () => {
    for (const t of INCLUSION) {
      expect(inclusionProof(t.index, t.size, store.get).map(hex)).toEqual(t.proof);
      expect(verifyInclusion(leafHash(LEAVES[t.index]), t.index, t.size, t.proof.map(unhex), unhex(ROOTS[t.size]))).toBe(true);
    }
    for (const t of CONSISTENCY) {
      expect(consistencyProof(t.from, t.to, store.get).map(hex)).toEqual(t.proof);
      expect(verifyConsistency(t.from, t.to, unhex(ROOTS[t.from]), unhex(ROOTS[t.to]), t.proof.map(unhex))).toBe(true);
    }
  });

  it('names exactly the stored hashes each computation reads', () => {
    const count = (coords: Coord[], run: () => unknown) => {
      store.reads = 0;
      run();
      return [coords.length, store.reads];
    };
    for (let n = 1; n <= 8; n++) {
      const [named, read] = count(rootCoords(n), () => treeRoot(n, store.get));
      expect(read).toBe(named);
      for (let i = 0; i < n; i++) {
        const [a, b] = count(inclusionCoords(i, n), () => inclusionProof(i, n, store.get));
        expect(b).toBe(a);
      }
      for (let m = 1; m <= n; m++) {
        const [a, b] = count(consistencyCoords(m, n), () => consistencyProof(m, n, store.get));
        expect(b).toBe(a);
      }
    }
  });

  it('completes the subtrees a leaf closes: none for an even index, one more per trailing 1 bit', () => {
    expect(completedBy(0)).toEqual([]);
    expect(completedBy(1)).toEqual([{ level: 1, index: 0 }]);
    expect(completedBy(7)).toEqual([
      { level: 1, index: 3 },
      { level: 2, index: 1 },
      { level: 3, index: 0 },
    ]);
    expect(completedBy(2 ** 33 - 1)).toHaveLength(33);
  });
});

describe('property: any tree, however appended in batches', () => {
  const arbitraryLog = fc.array(fc.array(fc.uint8Array({ maxLength: 12 }), { minLength: 1, maxLength: 9 }), { minLength: 1, maxLength: 8 });

  it('has the root RFC 6962 defines at every size, and every proof verifies while a changed one does not', () => {
    fc.assert(
      fc.property(arbitraryLog, fc.nat(), fc.nat(), (batches, a, b) => {
        const store = new Store();
        const leaves: Buffer[] = [];
        for (const batch of batches) {
          store.append(batch);
          leaves.push(...batch.map(leafHash));
          expect(hex(treeRoot(store.size, store.get))).toBe(hex(mth(leaves)));
        }
        const n = store.size;
        const root = treeRoot(n, store.get);
        const i = a % n;
        const path = inclusionProof(i, n, store.get);
        expect(verifyInclusion(leaves[i], i, n, path, root)).toBe(true);
        if (n > 1) {
          // Another leaf's hash, or this leaf claimed at another index (its neighbour's, when the two differ).
          if (!leaves[(i + 1) % n].equals(leaves[i])) {
            expect(verifyInclusion(leaves[(i + 1) % n], i, n, path, root)).toBe(false);
            expect(verifyInclusion(leaves[i], (i + 1) % n, n, path, root)).toBe(false);
          }
          const bent = path.map((p, j) => (j === 0 ? nodeHash(p, p) : p));
          expect(verifyInclusion(leaves[i], i, n, bent, root)).toBe(false);
        }
        const m = 1 + (b % n);
        const old = treeRoot(m, store.get);
        const proof = consistencyProof(m, n, store.get);
        expect(verifyConsistency(m, n, old, root, proof)).toBe(true);
        if (m < n) {
          // A forked past: another tree of m leaves is not extended by this one.
          expect(verifyConsistency(m, n, nodeHash(old, old), root, proof)).toBe(false);
          expect(verifyConsistency(m, n, old, nodeHash(root, root), proof)).toBe(false);
          if (proof.length > 0) expect(verifyConsistency(m, n, old, root, proof.slice(1))).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('verification refuses malformed input rather than throwing', () => {
  const root = unhex(ROOTS[8]);
  it('an index out of the tree, a size of 0, a hash of the wrong length', () => {
    expect(verifyInclusion(leafHash(LEAVES[0]), 8, 8, [], root)).toBe(false);
    expect(verifyInclusion(leafHash(LEAVES[0]), 0, 0, [], root)).toBe(false);
    expect(verifyInclusion(leafHash(LEAVES[0]), 0, 8, [Buffer.alloc(31), Buffer.alloc(32), Buffer.alloc(32)], root)).toBe(false);
    expect(verifyConsistency(0, 8, root, root, [])).toBe(false);
    expect(verifyConsistency(9, 8, root, root, [])).toBe(false);
    expect(verifyConsistency(8, 8, root, root, [])).toBe(true);
    expect(verifyConsistency(8, 8, root, root, [root])).toBe(false);
  });
});

describe('an inclusion proof sent with a consistency proof leaves out what that one shows', () => {
  const store = new Store();
  const leaves = Array.from({ length: 70 }, (_, i) => Buffer.from([i, i >> 8]));
  store.append(leaves);
  const leafOf = (i: number) => leafHash(leaves[i]);

  it('is rebuilt to the whole audit path for every leaf, every held size and every tree up to 48 leaves', () => {
    for (let n = 1; n <= 48; n++) {
      const root = treeRoot(n, store.get);
      for (let m = 0; m <= n; m++) {
        const known = m === 0 ? null : consistencyHashes(m, n, treeRoot(m, store.get), root, consistencyProof(m, n, store.get));
        if (m > 0) expect(known).not.toBeNull();
        for (let i = 0; i < n; i++) {
          const full = inclusionProof(i, n, store.get);
          const sent = compactInclusion(i, n, m === 0 ? null : m, store.get);
          expect(sent.length).toBeLessThanOrEqual(full.length);
          const path = expandInclusion(i, n, sent, known);
          expect(path?.map(hex)).toEqual(full.map(hex));
          expect(verifyInclusion(leafOf(i), i, n, path!, root)).toBe(true);
        }
      }
    }
  });

  it('sends only the hashes below where the stamp and the held size part, for a stamp newer than the held tree', () => {
    // The common 200: the node held 65 leaves, its stamp is leaf 66 of 70. Of the path [67,68) [64,66)
    // [68,70) [0,64), the consistency proof from 65 carries [0,64) and [68,70) and computes [64,66).
    expect(inclusionProof(66, 70, store.get).length).toBe(4);
    expect(compactInclusion(66, 70, 65, store.get).map(hex)).toEqual([hex(leafOf(67))]);
    // Held 60: the stamp's path below [64,70), which that proof carries, is sent.
    expect(compactInclusion(66, 70, 60, store.get).length).toBe(3);
  });

  it('fails for a hash changed, left out or added, and for a consistency proof that does not verify', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 70 }), fc.nat(), fc.nat(), fc.nat(), (n, a, b, c) => {
        const m = 1 + (a % n);
        const i = b % n;
        const root = treeRoot(n, store.get);
        const old = treeRoot(m, store.get);
        const proof = consistencyProof(m, n, store.get);
        const known = consistencyHashes(m, n, old, root, proof)!;
        const sent = compactInclusion(i, n, m, store.get);
        const check = (hashes: Buffer[], k: ReadonlyMap<string, Uint8Array> | null) => {
          const path = expandInclusion(i, n, hashes, k);
          return path !== null && verifyInclusion(leafOf(i), i, n, path, root);
        };
        expect(check(sent, known)).toBe(true);
        if (sent.length > 0) {
          const j = c % sent.length;
          expect(
            check(
              sent.map((h, k) => (k === j ? nodeHash(h, h) : h)),
              known,
            ),
          ).toBe(false);
          expect(check(sent.slice(0, -1), known)).toBe(false);
        }
        expect(check([...sent, root], known)).toBe(false);
        // Without the consistency proof's hashes the compact path is too short (unless it left nothing out).
        if (sent.length < inclusionProof(i, n, store.get).length) expect(check(sent, null)).toBe(false);
        // A planted consistency proof is refused before any of its hashes is used.
        if (proof.length > 0) {
          const j = c % proof.length;
          expect(
            consistencyHashes(
              m,
              n,
              old,
              root,
              proof.map((h, k) => (k === j ? nodeHash(h, h) : h)),
            ),
          ).toBeNull();
        }
        expect(consistencyHashes(m, n, nodeHash(old, old), root, proof)).toBeNull();
      }),
      { numRuns: 500 },
    );
  });
});

describe("a node that keeps its tree's frontier moves to a new tree with an extension proof", () => {
  const store = new Store();
  const leaves = Array.from({ length: 300 }, (_, i) => Buffer.from([i, i >> 8]));
  store.append(leaves);
  const leafOf = (i: number) => leafHash(leaves[i]);

  it('rebuilds the new root and the new frontier from the held one, for every held size and tree up to 40 leaves, with every audit path', () => {
    for (let n = 1; n <= 40; n++) {
      const root = treeRoot(n, store.get);
      for (let m = 0; m <= n; m++) {
        const proof = extensionProof(m, n, store.get);
        const shown = extensionHashes(m, m === 0 ? null : treeRoot(m, store.get), frontierOf(m, store.get), n, root, proof);
        expect(shown).not.toBeNull();
        expect(shown!.frontier.map(hex)).toEqual(frontierOf(n, store.get).map(hex));
        for (let i = 0; i < n; i++) {
          const sent = compactInclusion(i, n, m, store.get, true);
          const path = expandInclusion(i, n, sent, shown!.known);
          expect(path?.map(hex)).toEqual(inclusionProof(i, n, store.get).map(hex));
          expect(verifyInclusion(leafOf(i), i, n, path!, root)).toBe(true);
        }
      }
    }
  });

  it('sends about 2·log₂ of the distance however large the tree, where a consistency proof carries the old side too', () => {
    // 5 → 8: [5,6) and [6,8); the RFC 9162 proof also carries [4,5) and [0,4).
    expect(extensionCoords(5, 8)).toEqual([
      { level: 0, index: 5 },
      { level: 1, index: 3 },
    ]);
    expect(consistencyProof(5, 8, store.get)).toHaveLength(4);
    // Equal sizes: nothing; the frontier alone folds to the root.
    expect(extensionProof(300, 300, store.get)).toEqual([]);
    const big = 1_000_000;
    for (const d of [1, 10, 100, 1000, 10_000]) {
      for (const from of [big - d - 1, big - d - 12_345, 2 ** 19 + 7]) {
        const n = extensionCoords(from, from + d).length;
        expect(n).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(d + 1)) + 1);
      }
    }
  });

  it('refuses a frontier or a proof that does not fold to the roots, and a proof of the wrong length', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 300 }), fc.nat(), fc.nat(), (n, a, c) => {
        const m = a % (n + 1);
        const root = treeRoot(n, store.get);
        const old = m === 0 ? null : treeRoot(m, store.get);
        const frontier = frontierOf(m, store.get);
        const proof = extensionProof(m, n, store.get);
        expect(extensionHashes(m, old, frontier, n, root, proof)).not.toBeNull();
        if (proof.length > 0) {
          const j = c % proof.length;
          expect(
            extensionHashes(
              m,
              old,
              frontier,
              n,
              root,
              proof.map((h, k) => (k === j ? nodeHash(h, h) : h)),
            ),
          ).toBeNull();
          expect(extensionHashes(m, old, frontier, n, root, proof.slice(1))).toBeNull();
        }
        expect(extensionHashes(m, old, frontier, n, root, [...proof, root])).toBeNull();
        if (m > 0) {
          const j = c % frontier.length;
          // A frontier changed, or one that folds to another root than the held one.
          expect(
            extensionHashes(
              m,
              old,
              frontier.map((h, k) => (k === j ? nodeHash(h, h) : h)),
              n,
              root,
              proof,
            ),
          ).toBeNull();
          expect(extensionHashes(m, nodeHash(old!, old!), frontier, n, root, proof)).toBeNull();
        }
        // Another new root: the same proof cannot lead there.
        expect(extensionHashes(m, old, frontier, n, nodeHash(root, root), proof)).toBeNull();
        // A tree of other leaves at the held size (a rewritten ledger) cannot be extended to this one.
        if (m > 0 && m < n) {
          const other = new Store();
          other.append(leaves.slice(0, m).map((l, k) => (k === c % m ? Buffer.concat([l, Buffer.of(1)]) : l)));
          expect(extensionHashes(m, treeRoot(m, other.get), frontierOf(m, other.get), n, root, proof)).toBeNull();
        }
      }),
      { numRuns: 500 },
    );
  });
});
