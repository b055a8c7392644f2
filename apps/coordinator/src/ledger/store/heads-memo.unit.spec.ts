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
