import { bucketOf } from '#bundle';
import { HEAD_BUCKETS } from '#contracts';
import { RecordedNodes } from './compiled-output.js';

/** A record of n nodes, each with a made-up fingerprint, stamp and set digest, in its real head bucket. */
const recordOf = (n: number, set = (i: number) => `set${i}`): RecordedNodes => {
  const entries = new Map<string, string>();
  for (let i = 0; i < n; i++) {
    const node = `node-${String(i).padStart(5, '0')}`;
    entries.set(node, `fp${i} 1.5/2.5 ${set(i)} ${bucketOf(node)}`);
  }
  return RecordedNodes.of(entries);
};

describe('RecordedNodes.bucketDigests', () => {
  it('works out the buckets asked for as heads() does, and takes the others as known', () => {
    const before = recordOf(3000);
    const known = before.heads().buckets;
    // Two nodes get new sets: only their buckets can change.
    const after = recordOf(3000, (i) => (i === 7 || i === 2500 ? `new${i}` : `set${i}`));
    const only = new Set([bucketOf('node-00007'), bucketOf('node-02500')]);
    const got = after.bucketDigests(known, only);
    expect(got).toEqual(after.heads().buckets);
    expect(got).toHaveLength(HEAD_BUCKETS);
    expect(got.filter((d, b) => d !== known[b])).toHaveLength(only.size);
    // A bucket not asked for is taken from known, whatever the entries say.
    const stale = [...known];
    stale[[...only][0]] = 'stale';
    expect(after.bucketDigests(stale, new Set())).toEqual(stale);
  });

  it('gives a bucket asked for of a record of no nodes the digest of an empty bucket', () => {
    const known = recordOf(10).heads().buckets;
    const empty = recordOf(0).heads().buckets;
    expect(recordOf(0).bucketDigests(known, new Set([0, 1]))).toEqual([empty[0], empty[1], ...known.slice(2)]);
  });
});

describe('RecordedNodes.names', () => {
  it('lists every node in name order, but those left out', () => {
    const record = recordOf(1200);
    const all = Array.from({ length: 1200 }, (_, i) => `node-${String(i).padStart(5, '0')}`);
    expect(record.names()).toEqual(all);
    expect(record.names(new Set(['node-00000', 'node-00600', 'node-01199', 'not-a-node']))).toEqual(
      all.filter((n) => !['node-00000', 'node-00600', 'node-01199'].includes(n)),
    );
    expect(recordOf(0).names()).toEqual([]);
  });
});
