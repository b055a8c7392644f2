import { bucketDigest, bucketOf, labelsText } from '#bundle';
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
    for (const [node, l] of labels) if (counts(l)) members[bucketOf(node)].set(node, labelsText(l));
    return new LabelBucketsState(
      members,
      members.map((m) => bucketDigest(m)),
    );
  }

  /** The state once these nodes' labels are the ones given (no tag and no group: the node has no line). */
  advance(changed: Iterable<readonly [string, NodeLabels]>): LabelBucketsState {
    const members = [...this.members];
    const touched = new Set<number>();
    for (const [node, l] of changed) {
      const b = bucketOf(node);
      if (!touched.has(b)) {
        touched.add(b);
        members[b] = new Map(members[b]);
      }
      const bucket = members[b] as Map<string, string>;
      if (counts(l)) bucket.set(node, labelsText(l));
      else bucket.delete(node);
    }
    const digests = [...this.digests];
    for (const b of touched) digests[b] = bucketDigest(members[b]);
    return new LabelBucketsState(members, digests);
  }
}

function counts(l: NodeLabels): boolean {
  return l.tags.length + l.groups.length > 0;
}
