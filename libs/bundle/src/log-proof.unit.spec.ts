import { generateKeyPairSync } from 'node:crypto';
import type { TrustKey } from '#contracts';
import { chainHash } from './chain.js';
import { CheckpointError, signCheckpoint } from './checkpoint.js';
import {
  checkStampIncluded,
  checkTreeExtends,
  checkTreeExtendsFrontier,
  checkFrontier,
  decodeTreeProof,
  encodeTreeProof,
  compactTreeCheckpoint,
  expandTreeCheckpoint,
  decodeProof,
  decodeStampLeaf,
  encodeProof,
  encodeStampLeaf,
  LogProofError,
  stampEntry,
  type StampLeaf,
} from './log-proof.js';
import { openTreeCheckpoint, signTreeCheckpoint, treeOrigin } from './tree-checkpoint.js';
import { appendLeaves, compactInclusion, consistencyProof, extensionProof, frontierOf, inclusionProof, leafHash, treeRoot, type Coord } from './merkle.js';

/** A tree built from entries with the store's own append, read from a map. */
function tree(entries: readonly Buffer[]) {
  const store = new Map<string, Uint8Array>();
  for (const m of appendLeaves(
    0,
    entries.map((e) => leafHash(e)),
    () => {
      throw new Error('nothing before');
    },
  ))
    store.set(`${m.coord.level}/${m.coord.index}`, m.hash);
  const read = (c: Coord) => store.get(`${c.level}/${c.index}`)!;
  return {
    root: (n: number) => treeRoot(n, read).toString('hex'),
    inclusion: (i: number, n: number) => inclusionProof(i, n, read),
    compact: (i: number, n: number, from: number) => compactInclusion(i, n, from, read),
    consistency: (m: number, n: number) => consistencyProof(m, n, read),
    extension: (m: number, n: number) => extensionProof(m, n, read),
    frontier: (n: number) => frontierOf(n, read),
  };
}

const payload = {
  node: 'web-1',
  version: 3,
  set_digest: 'a'.repeat(64),
  position: 6,
  publish_id: 'pub-1',
  issued_at: '2026-01-02T03:04:05.678Z',
  retired: false,
  artifacts: [{ name: 'flor.json', sha256: 'b'.repeat(64), size: 2, content: 'e30=' }],
};
const leaf: StampLeaf = { prev_hash: 'c'.repeat(64), revision: 3, meta: { actor: 'token:ops' }, data: {} };

/** Eleven events; the one at position 6 (leaf 5) is the stamp of `payload`, as the coordinator hashes it. */
function ledger() {
  const stamp = chainHash(leaf.prev_hash, {
    position: 6,
    stream: 'node:web-1',
    revision: 3,
    type: 'node_set_stamped',
    data: {
      node: 'web-1',
      version: 3,
      set_digest: 'a'.repeat(64),
      retired: false,
      artifacts: [{ name: 'flor.json', sha256: 'b'.repeat(64), size: 2 }],
      publish_id: 'pub-1',
    },
    meta: { actor: 'token:ops' },
    recorded_at: payload.issued_at,
  });
  const entries = Array.from({ length: 11 }, (_, i) => (i === 5 ? Buffer.from(stamp, 'hex') : Buffer.alloc(32, i + 1)));
  return { stamp, entries, t: tree(entries) };
}

const code = (f: () => void): string | null => {
  try {
    f();
    return null;
  } catch (err) {
    if (err instanceof LogProofError) return err.code;
    throw err;
  }
};

describe('a node checks its bundle is in the signed log', () => {
  it('rebuilds its stamp event from the bundle and the leaf header, as the coordinator hashed it', () => {
    const { stamp } = ledger();
    expect(stampEntry(payload, decodeStampLeaf(encodeStampLeaf(leaf)))).toBe(stamp);
  });

  it('accepts a good inclusion proof against the checkpoint root', () => {
    const { t } = ledger();
    const cp = { size: 11, root: t.root(11) };
    const proof = decodeProof(encodeProof(5, t.inclusion(5, 11)), 'inclusion');
    expect(code(() => checkStampIncluded(payload, leaf, proof, cp))).toBeNull();
  });

  it('refuses a proof of another leaf, a bundle that is not the leaf, a wrong root, a tampered hash: not_in_log', () => {
    const { t } = ledger();
    const cp = { size: 11, root: t.root(11) };
    const good = { n: 5, hashes: t.inclusion(5, 11) };
    // Another event's proof, at its own index.
    expect(code(() => checkStampIncluded(payload, leaf, { n: 4, hashes: t.inclusion(4, 11) }, cp))).toBe('not_in_log');
    // A bundle the log never stamped: another version, another digest, another position.
    expect(code(() => checkStampIncluded({ ...payload, version: 4 }, leaf, good, cp))).toBe('not_in_log');
    expect(code(() => checkStampIncluded({ ...payload, set_digest: 'd'.repeat(64) }, leaf, good, cp))).toBe('not_in_log');
    expect(code(() => checkStampIncluded(payload, { ...leaf, meta: { actor: 'someone' } }, good, cp))).toBe('not_in_log');
    // The leaf header may not speak for a field the bundle carries.
    expect(code(() => checkStampIncluded(payload, { ...leaf, data: { version: 3 } }, good, cp))).toBe('not_in_log');
    // Another tree's root, or a tree too small to hold the leaf.
    expect(code(() => checkStampIncluded(payload, leaf, good, { size: 11, root: t.root(10) }))).toBe('not_in_log');
    expect(code(() => checkStampIncluded(payload, leaf, good, { size: 5, root: t.root(5) }))).toBe('not_in_log');
    // One bit of one proof hash.
    const tampered = good.hashes.map((h, i) => (i === 1 ? Buffer.from(h.map((b, j) => (j === 0 ? b ^ 1 : b))) : h));
    expect(code(() => checkStampIncluded(payload, leaf, { n: 5, hashes: tampered }, cp))).toBe('not_in_log');
    expect(code(() => checkStampIncluded(payload, leaf, { n: 5, hashes: good.hashes.slice(1) }, cp))).toBe('not_in_log');
  });

  it('takes the inclusion proof without what the consistency proof of the same answer showed, and nothing planted in either', () => {
    const { t } = ledger();
    const cp = { size: 11, root: t.root(11) };
    for (const from of [4, 5, 6]) {
      const held = { size: from, root: t.root(from) };
      const known = checkTreeExtends(held, cp, { n: from, hashes: t.consistency(from, 11) });
      const sent = t.compact(5, 11, from);
      expect(sent.length).toBeLessThan(t.inclusion(5, 11).length);
      expect(code(() => checkStampIncluded(payload, leaf, { n: 5, hashes: sent }, cp, known))).toBeNull();
      // The compact path alone, or the whole path with them, is not what was sent: refused.
      expect(code(() => checkStampIncluded(payload, leaf, { n: 5, hashes: sent }, cp))).toBe('not_in_log');
      expect(code(() => checkStampIncluded(payload, leaf, { n: 5, hashes: t.inclusion(5, 11) }, cp, known))).toBe('not_in_log');
      const flipped = sent.map((h, i) => (i === 0 ? Buffer.from(h.map((b, j) => (j === 0 ? b ^ 1 : b))) : h));
      // Held 5: the consistency proof shows every hash of the path (sent is empty); the leaf is still the node's own.
      if (sent.length > 0) expect(code(() => checkStampIncluded(payload, leaf, { n: 5, hashes: flipped }, cp, known))).toBe('not_in_log');
      expect(code(() => checkStampIncluded({ ...payload, version: 4 }, leaf, { n: 5, hashes: sent }, cp, known))).toBe('not_in_log');
    }
    // A consistency proof with a hash changed is refused as a fork before its hashes serve the inclusion proof.
    const proof = t.consistency(4, 11);
    const bent = proof.map((h, i) => (i === proof.length - 1 ? Buffer.from(h.map((b, j) => (j === 0 ? b ^ 1 : b))) : h));
    expect(code(() => checkTreeExtends({ size: 4, root: t.root(4) }, cp, { n: 4, hashes: bent }))).toBe('checkpoint_fork');
  });

  it('refuses malformed headers', () => {
    expect(code(() => decodeProof('5 !!', 'x'))).toBe('proof_malformed');
    expect(code(() => decodeProof(`5 ${Buffer.alloc(31).toString('base64')}`, 'x'))).toBe('proof_malformed');
    expect(code(() => decodeStampLeaf('e30'))).toBe('proof_malformed');
  });
});

describe('a node moves from the tree it holds to the new one', () => {
  const { t, entries } = ledger();
  const held = { size: 7, root: t.root(7) };

  it('accepts a consistency proof from the size it holds, for every pair of sizes', () => {
    for (let m = 1; m <= 11; m++)
      for (let n = m; n <= 11; n++)
        expect(code(() => checkTreeExtends({ size: m, root: t.root(m) }, { size: n, root: t.root(n) }, { n: m, hashes: t.consistency(m, n) }))).toBeNull();
    expect(code(() => checkTreeExtends(null, { size: 11, root: t.root(11) }, null))).toBeNull();
  });

  it('refuses a fork: another history of the same entries from position 5 on, whatever proof comes with it', () => {
    const forked = tree([...entries.slice(0, 4), Buffer.alloc(32, 99), ...entries.slice(5)]);
    const next = { size: 11, root: forked.root(11) };
    expect(code(() => checkTreeExtends(held, next, { n: 7, hashes: forked.consistency(7, 11) }))).toBe('checkpoint_fork');
    expect(code(() => checkTreeExtends(held, next, { n: 7, hashes: t.consistency(7, 11) }))).toBe('checkpoint_fork');
    // Same size, another root.
    expect(code(() => checkTreeExtends(held, { size: 7, root: forked.root(7) }, null))).toBe('checkpoint_fork');
    // No proof, or a proof from another size than the one held.
    expect(code(() => checkTreeExtends(held, { size: 11, root: t.root(11) }, null))).toBe('checkpoint_fork');
    expect(code(() => checkTreeExtends(held, { size: 11, root: t.root(11) }, { n: 6, hashes: t.consistency(6, 11) }))).toBe('checkpoint_fork');
  });

  it('refuses a smaller tree than the one held: a rollback', () => {
    expect(code(() => checkTreeExtends(held, { size: 6, root: t.root(6) }, null))).toBe('checkpoint_rollback');
  });
});

describe('a node that keeps its frontier moves to the new tree by an extension proof', () => {
  const { t, entries } = ledger();
  const held = { size: 7, root: t.root(7), frontier: t.frontier(7) };

  it('accepts one from the frontier it holds, for every pair of sizes, and gives the new frontier', () => {
    for (let m = 0; m <= 11; m++)
      for (let n = Math.max(m, 1); n <= 11; n++) {
        const from = m === 0 ? null : { size: m, root: t.root(m), frontier: t.frontier(m) };
        const shown = checkTreeExtendsFrontier(from, { size: n, root: t.root(n) }, { n: m, hashes: t.extension(m, n) });
        expect(shown.frontier).toEqual(t.frontier(n));
      }
  });

  it("refuses a fork, a proof from another size, a frontier that is not the held tree's, and a smaller tree", () => {
    const forked = tree([...entries.slice(0, 4), Buffer.alloc(32, 99), ...entries.slice(5)]);
    const next = { size: 11, root: forked.root(11) };
    expect(code(() => checkTreeExtendsFrontier(held, next, { n: 7, hashes: forked.extension(7, 11) }))).toBe('checkpoint_fork');
    expect(code(() => checkTreeExtendsFrontier(held, next, { n: 7, hashes: t.extension(7, 11) }))).toBe('checkpoint_fork');
    expect(code(() => checkTreeExtendsFrontier(held, { size: 7, root: forked.root(7) }, { n: 7, hashes: [] }))).toBe('checkpoint_fork');
    expect(code(() => checkTreeExtendsFrontier(held, { size: 11, root: t.root(11) }, { n: 6, hashes: t.extension(6, 11) }))).toBe('checkpoint_fork');
    // The forked tree's frontier is refused with the genuine root held: it does not make up that tree.
    expect(code(() => checkTreeExtendsFrontier({ ...held, frontier: forked.frontier(7) }, next, { n: 7, hashes: forked.extension(7, 11) }))).toBe(
      'checkpoint_fork',
    );
    expect(code(() => checkTreeExtendsFrontier(held, { size: 6, root: t.root(6) }, { n: 7, hashes: [] }))).toBe('checkpoint_rollback');
  });

  it('takes a frontier sent to a node that holds only a root once it makes up the signed tree', () => {
    expect(checkFrontier(Buffer.concat(t.frontier(11)).toString('base64'), { size: 11, root: t.root(11) })).toEqual(t.frontier(11));
    for (const bad of [t.frontier(10), t.frontier(11).slice(1), [...t.frontier(11), t.frontier(11)[0]]])
      expect(code(() => checkFrontier(Buffer.concat(bad).toString('base64'), { size: 11, root: t.root(11) }))).toBe('checkpoint_fork');
  });
});

describe('the proof header of a node that keeps its frontier', () => {
  it('carries the extension proof, then on a 200 the inclusion proof and the leaf, and gives each back in the form of its own header', () => {
    const h = Buffer.alloc(32, 1).toString('base64');
    expect(decodeTreeProof(encodeTreeProof(`7 ${h}`))).toEqual({ extension: `7 ${h}`, inclusion: null, leaf: null });
    expect(decodeTreeProof(encodeTreeProof(`7 ${h}`, `9 ${h}${h}`, 'bGVhZg'))).toEqual({ extension: `7 ${h}`, inclusion: `9 ${h}${h}`, leaf: 'bGVhZg' });
    // Empty proofs, and the trailing space HTTP trims from a value.
    expect(decodeTreeProof(encodeTreeProof('7 ', '9 ', 'bGVhZg'))).toEqual({ extension: '7 ', inclusion: '9 ', leaf: 'bGVhZg' });
    expect(decodeTreeProof(encodeTreeProof('7 ').trim())).toEqual({ extension: '7 ', inclusion: null, leaf: null });
    expect(decodeTreeProof(encodeTreeProof(`7 ${h}`, '9 ').trim())).toEqual({ extension: `7 ${h}`, inclusion: '9 ', leaf: null });
    // More parts than that: kept whole as the extension proof, which does not decode.
    const bad = decodeTreeProof(`7 ${h} 9 ${h} bGVhZg extra`);
    expect(bad).toEqual({ extension: `7 ${h} 9 ${h} bGVhZg extra`, inclusion: null, leaf: null });
    expect(code(() => decodeProof(bad.extension, 'florete-tree-proof'))).toBe('proof_malformed');
  });
});

describe('the tree checkpoint sent short beside the ledger checkpoint of the same answer', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const x = (publicKey.export({ format: 'jwk' }) as { x: string }).x;
  const key: TrustKey = { kty: 'OKP', crv: 'Ed25519', x, kid: 'k1' };
  const signer = { kid: 'k1', privateKey };
  const origin = 'florete.ledger/0123456789abcdef';
  const time = '2026-12-02T01:02:03.456Z';
  const chainHash = 'ab'.repeat(32);
  const root = 'cd'.repeat(32);
  const tree = signTreeCheckpoint({ origin: treeOrigin(origin), size: 42, root, time, trustVersion: 3, chain: chainHash }, signer);
  const chain = signCheckpoint({ origin, position: 42, hash: chainHash, time, trustVersion: 3 }, signer);

  it('is the root and the signature only, and rebuilds the very note, which verifies', () => {
    const short = compactTreeCheckpoint(tree, chain)!;
    expect(short).toMatch(/^[A-Za-z0-9+/]{43}= [A-Za-z0-9+/]+=*$/);
    expect(short.length).toBeLessThan(Buffer.from(tree).toString('base64').length / 2);
    expect(expandTreeCheckpoint(short, chain)).toBe(tree);
    expect(openTreeCheckpoint(expandTreeCheckpoint(short, chain), [key]).checkpoint).toEqual(expect.objectContaining({ size: 42, root }));
    // The whole note, base64, is taken as it was.
    expect(expandTreeCheckpoint(Buffer.from(tree).toString('base64'), null)).toBe(tree);
  });

  it('is not made when the ledger checkpoint says anything else than the tree note', () => {
    for (const other of [
      { origin, position: 41, hash: chainHash, time, trustVersion: 3 },
      { origin, position: 42, hash: 'ef'.repeat(32), time, trustVersion: 3 },
      { origin, position: 42, hash: chainHash, time: '2026-12-02T01:02:03.457Z', trustVersion: 3 },
      { origin, position: 42, hash: chainHash, time, trustVersion: 4 },
      { origin: 'florete.ledger/fedcba9876543210', position: 42, hash: chainHash, time, trustVersion: 3 },
    ])
      expect(compactTreeCheckpoint(tree, signCheckpoint(other, signer))).toBeNull();
  });

  it('fails its signature when its root, its signature or the ledger checkpoint it is rebuilt with is not the signed one', () => {
    const short = compactTreeCheckpoint(tree, chain)!;
    const [r, sig] = short.split(' ');
    const flip = (b64: string) => {
      const b = Buffer.from(b64, 'base64');
      b[b.length - 1] ^= 1;
      return b.toString('base64');
    };
    const open = (value: string, chainNote: string) => () => openTreeCheckpoint(expandTreeCheckpoint(value, chainNote), [key]);
    expect(open(`${flip(r)} ${sig}`, chain)).toThrow(CheckpointError);
    expect(open(`${r} ${flip(sig)}`, chain)).toThrow(CheckpointError);
    // A ledger checkpoint of another size, genuinely signed: the tree's signature is not over that.
    expect(open(short, signCheckpoint({ origin, position: 43, hash: chainHash, time, trustVersion: 3 }, signer))).toThrow(CheckpointError);
  });

  it('is refused as malformed without a ledger checkpoint, or with spaces that are not the short form', () => {
    const short = compactTreeCheckpoint(tree, chain)!;
    expect(code(() => expandTreeCheckpoint(short, null))).toBe('proof_malformed');
    expect(code(() => expandTreeCheckpoint(short, 'not a note'))).toBe('proof_malformed');
    expect(code(() => expandTreeCheckpoint(`${short} more`, chain))).toBe('proof_malformed');
  });
});
