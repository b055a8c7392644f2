import { advanceHeads, HeadsMemo } from './heads-memo.js';
import type { NodeSetStamped } from '../domain/ledger.events.js';

const head = (position: number, hash = `h${position}`) => ({ position, hash });
const artifactsOf = (sha: string) => [{ name: 'flor.json', sha256: sha.repeat(64).slice(0, 64), size: 10 }];
const stamp = (node: string, version: number, set_digest: string, retired = false): NodeSetStamped['data'] => ({
  node,
  version,
  set_digest,
  retired,
  artifacts: retired ? [] : artifactsOf(set_digest),
  publish_id: 'p',
});

describe('HeadsMemo', () => {
  it('answers only for the ledger head it was kept at, by position and hash', () => {
    const memo = new HeadsMemo();
    const heads = new Map([['a', { version: 1, setDigest: 'd1', retired: false }]]);
    expect(memo.at(head(3))).toBeNull();
    memo.keep({ at: head(3), heads });
    expect(memo.at(head(3))).toBe(heads);
    // Another append moved the ledger, or a database restored to another history has the same position.
    expect(memo.at(head(4))).toBeNull();
    expect(memo.at(head(3, 'other'))).toBeNull();
  });

  it('keeps the newest snapshot when writes finish out of order', () => {
    const memo = new HeadsMemo();
    memo.keep({ at: head(9), heads: new Map() });
    memo.keep({ at: head(7), heads: new Map() });
    expect(memo.at(head(9))).not.toBeNull();
    expect(memo.at(head(7))).toBeNull();
  });

  it('advances a copy by the stamps of a write, leaving the old snapshot as it was', () => {
    const before = new Map([
      ['a', { version: 1, setDigest: 'd1', retired: false }],
      ['b', { version: 4, setDigest: 'd4', retired: false }],
    ]);
    const after = advanceHeads(before, [stamp('a', 2, 'd2'), stamp('b', 5, 'd4', true), stamp('c', 1, 'c1')], head(12));
    expect(after.at).toEqual(head(12));
    // With their artifact lists, so the next publish compares lists instead of hashing every node.
    expect(Object.fromEntries(after.heads)).toEqual({
      a: { version: 2, setDigest: 'd2', retired: false, artifacts: artifactsOf('d2') },
      b: { version: 5, setDigest: 'd4', retired: true, artifacts: [] },
      c: { version: 1, setDigest: 'c1', retired: false, artifacts: artifactsOf('c1') },
    });
    expect(before.get('a')).toEqual({ version: 1, setDigest: 'd1', retired: false });
    expect(before.has('c')).toBe(false);
  });

  it('reads every head for a pruning or large publish, not for a small tree in a far larger fleet', () => {
    const memo = new HeadsMemo();
    expect(memo.wantsAll(5, true)).toBe(true);
    expect(memo.wantsAll(999, false)).toBe(false);
    expect(memo.wantsAll(1000, false)).toBe(true);
    memo.keep({ at: head(1), heads: new Map(Array.from({ length: 100_000 }, (_, i) => [`n${i}`, { version: 1, setDigest: 'd', retired: false }])) });
    expect(memo.wantsAll(1000, false)).toBe(false);
    expect(memo.wantsAll(25_000, false)).toBe(true);
  });
});

describe('advanceHeads on a large fleet', () => {
  const fleet = (n: number) => new Map(Array.from({ length: n }, (_, i) => [`n${i}`, { version: 1, setDigest: `d${i}`, retired: false }]));
  /** The heads as one plain map would hold them after the same stamps: what every snapshot must read as. */
  const merged = (before: ReadonlyMap<string, unknown>, stamps: NodeSetStamped['data'][]) => {
    const m = new Map<string, unknown>(before);
    for (const s of stamps) m.set(s.node, { version: s.version, setDigest: s.set_digest, retired: s.retired, artifacts: s.artifacts });
    return m;
  };

  it('reads, counts and iterates a few stamps on many heads as one map would, in the same order', () => {
    const before = fleet(80);
    const stamps = [stamp('n3', 2, 'x3'), stamp('new-1', 1, 'y1'), stamp('n70', 2, 'x70', true), stamp('new-0', 1, 'y0')];
    const after = advanceHeads(before, stamps, head(2)).heads;
    const want = merged(before, stamps);
    expect([...after]).toEqual([...want]);
    expect([...after.keys()]).toEqual([...want.keys()]);
    expect([...after.values()]).toEqual([...want.values()]);
    expect(after.size).toBe(82);
    expect(after.get('n3')).toEqual(want.get('n3'));
    expect(after.get('n4')).toBe(before.get('n4'));
    expect(after.has('new-0') && !after.has('absent')).toBe(true);
    const seen: string[] = [];
    after.forEach((h, node, map) => {
      expect(map).toBe(after);
      expect(h).toEqual(want.get(node));
      seen.push(node);
    });
    expect(seen).toEqual([...want.keys()]);
    // The snapshot before is untouched.
    expect(before.get('n3')).toEqual({ version: 1, setDigest: 'd3', retired: false });
    expect(before.size).toBe(80);
  });

  it('does not copy the fleet for a few stamps, and is one map again once they are more than an eighth of it', () => {
    const before = fleet(80);
    let heads: ReadonlyMap<string, unknown> = before;
    let want: ReadonlyMap<string, unknown> = before;
    const kinds: string[] = [];
    for (let i = 0; i < 12; i++) {
      const stamps = [stamp(`n${i}`, 2 + i, `z${i}`)];
      heads = advanceHeads(heads as never, stamps, head(10 + i)).heads;
      want = merged(want, stamps);
      kinds.push(heads instanceof Map ? 'map' : 'layer');
      expect([...heads]).toEqual([...want]);
    }
    // Ten changed nodes are an eighth of 80: the eleventh flattens, and the twelfth starts a layer again.
    expect(kinds).toEqual([...Array(10).fill('layer'), 'map', 'layer']);
  });
});
