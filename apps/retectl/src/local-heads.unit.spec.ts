import { bucketOf, headBuckets, labelBuckets } from '#bundle';
import { HEAD_BUCKETS } from '#contracts';
import { localSetDigest } from '#rete';
import { labelsIn, labelsToSend, localHeads } from './local-heads.js';

const inMemory = (labels: Record<string, { tags: string[]; groups: string[] }>) => labelsIn(new Map(Object.entries(labels)));

describe('localHeads', () => {
  const tree = new Map(
    Array.from(
      { length: 3_000 },
      (_, i) =>
        [
          `node-${i}`,
          new Map([
            ['flor.json', `${i}`.padStart(64, 'a')],
            ['agent.json', `${i}`.padStart(64, 'b')],
          ]),
        ] as const,
    ),
  );

  it("gives the buckets the coordinator's headBuckets gives the same sets, and keeps each node's bucket", () => {
    const local = localHeads(tree);
    const sets = new Map([...tree].map(([node, artifacts]) => [node, localSetDigest(artifacts)]));
    expect(local.buckets).toHaveLength(HEAD_BUCKETS);
    expect(local.buckets).toEqual(headBuckets(sets));
    for (let b = 0; b < HEAD_BUCKETS; b++) {
      expect(local.inBuckets(new Set([b]))).toEqual([...sets].filter(([node]) => bucketOf(node) === b));
    }
    for (const [node, set] of sets) expect(local.setOf(node)).toBe(set);
    expect(local.setOf('no-such-node')).toBeUndefined();
  });

  it('an empty tree has every bucket empty', () => {
    expect(localHeads(new Map()).buckets).toEqual(headBuckets([]));
  });
});

describe('labelsToSend', () => {
  const nodes = Array.from({ length: 1_000 }, (_, i) => `node-${i}`);
  const labels = Object.fromEntries(nodes.map((n, i) => [n, { tags: [`t${i % 5}`], groups: [] }]));
  const local = localHeads(new Map(nodes.map((n) => [n, new Map([['flor.json', 'a'.repeat(64)]])])));

  it("sends every node's labels to a coordinator that gives no label buckets", () => {
    expect(labelsToSend(inMemory(labels), undefined, local)).toEqual(labels);
  });

  it('sends none when every bucket matches, and only the nodes of the buckets that differ', () => {
    const theirs = labelBuckets(Object.entries(labels));
    expect(labelsToSend(inMemory(labels), theirs, local)).toEqual({});
    const moved = { ...labels, 'node-7': { tags: ['new'], groups: [] } };
    const sent = labelsToSend(inMemory(moved), theirs, local);
    expect(Object.keys(sent).sort()).toEqual(nodes.filter((n) => bucketOf(n) === bucketOf('node-7')).sort());
    expect(sent['node-7']).toEqual({ tags: ['new'], groups: [] });
  });

  it("takes the tree's label buckets from its compile when it has them, not working them out again", () => {
    const theirs = labelBuckets(Object.entries(labels));
    const moved = { ...labels, 'node-7': { tags: ['new'], groups: [] } };
    // Recorded as matching the coordinator's: nothing is sent, whatever the labels passed in say.
    expect(labelsToSend(inMemory(moved), theirs, { ...local, labels: theirs })).toEqual({});
    // Recorded as differing in node-7's bucket: that bucket's nodes are sent.
    const recorded = labelBuckets(Object.entries(moved));
    expect(Object.keys(labelsToSend(inMemory(moved), theirs, { ...local, labels: recorded })).sort()).toEqual(
      nodes.filter((n) => bucketOf(n) === bucketOf('node-7')).sort(),
    );
  });
});
