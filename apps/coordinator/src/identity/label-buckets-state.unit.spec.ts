import { bucketOf, labelBuckets } from '#bundle';
import type { NodeLabels } from '#contracts';
import { LabelBucketsState } from './label-buckets-state.js';

const fleet = (n: number): Map<string, NodeLabels> =>
  new Map(Array.from({ length: n }, (_, i) => [`node-${i}`, { tags: i % 3 === 0 ? [] : ['web', `site-${i % 7}`], groups: i % 5 === 0 ? ['edge'] : [] }]));

describe('label bucket digests brought forward', () => {
  it('worked out in full, they are what labelBuckets gives, nodes without labels left out', () => {
    const labels = fleet(2000);
    expect(LabelBucketsState.of(labels).digests).toEqual(labelBuckets(labels));
    expect(LabelBucketsState.of(new Map()).digests).toEqual(labelBuckets([]));
  });

  it('after relabelled, new and cleared nodes, they are what a full working-out of the new labels gives', () => {
    const labels = fleet(2000);
    const before = LabelBucketsState.of(labels);
    const written: [string, NodeLabels][] = [
      ['node-1', { tags: ['db'], groups: [] }],
      ['node-2', { tags: [], groups: [] }],
      ['node-3', { tags: ['web'], groups: ['late'] }],
      ['fresh', { tags: ['new'], groups: ['edge'] }],
      ['fresh-none', { tags: [], groups: [] }],
    ];
    const after = before.advance(written);
    for (const [node, l] of written) labels.set(node, l);
    expect(after.digests).toEqual(labelBuckets(labels));
    // The buckets of the nodes whose line changed moved (node-3 gained labels, node-2 lost its own),
    // and no other did: fresh-none, new without labels, has no line.
    const moved = after.digests.flatMap((d, b) => (d === before.digests[b] ? [] : [b]));
    expect(moved).toEqual([...new Set(['node-1', 'node-2', 'node-3', 'fresh'].map(bucketOf))].sort((a, b) => a - b));
  });

  it('leaves the state it came from as it was, so a copy still in use answers for its own labels', () => {
    const labels = fleet(500);
    const before = LabelBucketsState.of(labels);
    const digests = [...before.digests];
    before.advance([...labels.keys()].slice(0, 100).map((n) => [n, { tags: ['moved'], groups: [] }] as const));
    expect(before.digests).toEqual(digests);
    expect(before.advance([]).digests).toEqual(digests);
  });
});
