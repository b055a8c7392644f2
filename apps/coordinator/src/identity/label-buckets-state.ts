import { BucketMaps, bucketDigest, labelLines } from '#bundle';
import type { NodeLabels } from '#contracts';

/**
 * Every node's labels by bucket, with each bucket's digest: what labelBuckets gives for the same
 * labels, kept so that a change of a few nodes' labels digests only their buckets again, not every
 * node's. Never changed in place: `advance` gives a new one that shares the buckets it did not touch.
 */
export class LabelBucketsState {
  private constructor(
    /** node → its labels' text (labelsText), only for nodes with a tag or a group. */
    private readonly members: BucketMaps<string>,
    readonly digests: readonly string[],
  ) {}

  static of(labels: Iterable<readonly [string, NodeLabels]>): LabelBucketsState {
    const { maps } = BucketMaps.empty<string>().edit((set) => {
      for (const [node, text] of labelLines(labels)) set(node, text);
    });
    return new LabelBucketsState(
      maps,
      maps.buckets.map((m) => bucketDigest(m)),
    );
  }

  /** The state once these nodes' labels are the ones given (no tag and no group: the node has no line). */
  advance(changed: readonly (readonly [string, NodeLabels])[]): LabelBucketsState {
    const { maps, touched } = this.members.edit((set) => {
      // Every changed node's line goes; labelLines gives back the lines of those that still have one.
      for (const [node] of changed) set(node, undefined);
      for (const [node, text] of labelLines(changed)) set(node, text);
    });
    const digests = [...this.digests];
    for (const b of touched) digests[b] = bucketDigest(maps.buckets[b]);
    return new LabelBucketsState(maps, digests);
  }
}
