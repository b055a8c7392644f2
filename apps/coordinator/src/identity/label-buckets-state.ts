import { bucketDigest, bucketOf, labelLines } from '#bundle';
import { HEAD_BUCKETS, type NodeLabels } from '#contracts';

/**
 * Every node's labels by bucket, with each bucket's digest: what labelBuckets gives for the same
 * labels, kept so that a change of a few nodes' labels digests only their buckets again, not every
 * node's. Never changed in place: `advance` gives a new one that shares the buckets it did not touch.
 */
export class LabelBucketsState {
  private constructor(
    /** node → its labels' text (labelsText), only for nodes with a tag or a group; one map per bucket. */
    private readonly members: readonly ReadonlyMap<string, string>[],
    readonly digests: readonly string[],
  ) {}

  static of(labels: Iterable<readonly [string, NodeLabels]>): LabelBucketsState {
    const members = Array.from({ length: HEAD_BUCKETS }, () => new Map<string, string>());
    for (const [node, text] of labelLines(labels)) members[bucketOf(node)].set(node, text);
    return new LabelBucketsState(
      members,
      members.map((m) => bucketDigest(m)),
    );
  }

  /** The state once these nodes' labels are the ones given (no tag and no group: the node has no line). */
  advance(changed: readonly (readonly [string, NodeLabels])[]): LabelBucketsState {
    const members = [...this.members];
    const touched = new Set<number>();
    const bucketOfChanged = (node: string): Map<string, string> => {
      const b = bucketOf(node);
      if (!touched.has(b)) {
        touched.add(b);
        members[b] = new Map(members[b]);
      }
      return members[b] as Map<string, string>;
    };
    // Every changed node's line goes; labelLines gives back the lines of those that still have one.
    for (const [node] of changed) bucketOfChanged(node).delete(node);
    for (const [node, text] of labelLines(changed)) bucketOfChanged(node).set(node, text);
    const digests = [...this.digests];
    for (const b of touched) digests[b] = bucketDigest(members[b]);
    return new LabelBucketsState(members, digests);
  }
}
