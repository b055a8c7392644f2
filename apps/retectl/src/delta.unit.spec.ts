import { bucketOf, headBuckets } from '#bundle';
import { HEAD_BUCKETS } from '#contracts';
import { localSetDigest } from '#rete';
import { localHeads } from './delta.js';

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
    expect(local.sets).toEqual(new Map([...tree].map(([node, artifacts]) => [node, localSetDigest(artifacts)])));
    expect(local.buckets).toHaveLength(HEAD_BUCKETS);
    expect(local.buckets).toEqual(headBuckets(local.sets));
    expect(local.bucketOf).toEqual(new Map([...tree.keys()].map((node) => [node, bucketOf(node)])));
  });

  it('an empty tree has every bucket empty', () => {
    expect(localHeads(new Map()).buckets).toEqual(headBuckets([]));
  });
});
