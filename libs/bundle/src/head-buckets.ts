import { hash } from 'node:crypto';
import { HEAD_BUCKETS } from '#contracts/plain';
import { sha256Hex } from './digest.js';

/**
 * The bucket of a node: the first byte of md5(name), which spreads names evenly whatever their
 * pattern. Nothing trusts md5 here: a bucket only says where to look, and its digest is sha256.
 */
export function bucketOf(node: string): number {
  return hash('md5', node, 'buffer')[0];
}

/**
 * The digest of one bucket: sha256 of the lines `<node> <set digest>\n` of its active heads, in byte
 * order of their names (an empty bucket is the digest of no bytes). Two sides that give a bucket the
 * same digest hold exactly the same nodes in it with the same sets.
 */
export function bucketDigest(members: Iterable<readonly [node: string, setDigest: string]>): string {
  const sorted = [...members].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  let text = '';
  for (const [node, digest] of sorted) text += `${node} ${digest}\n`;
  return sha256Hex(text);
}

/**
 * A map of nodes split by bucket (bucketOf), never changed in place: `edit` gives the maps after its
 * writes, sharing every bucket it did not write with these, and says which buckets it wrote, whose
 * digests alone are to be worked out again. What a coordinator keeps of heads or labels between reads.
 */
export class BucketMaps<V> {
  private constructor(readonly buckets: readonly ReadonlyMap<string, V>[]) {}

  static empty<V>(): BucketMaps<V> {
    return new BucketMaps<V>(Array.from({ length: HEAD_BUCKETS }, () => new Map<string, V>()));
  }

  /**
   * `write(set)` sets nodes' values; `undefined` removes the node. `bucket` is the node's bucket when
   * the caller already worked it out (bucketOf otherwise).
   */
  edit(write: (set: (node: string, value: V | undefined, bucket?: number) => void) => void): {
    readonly maps: BucketMaps<V>;
    readonly touched: ReadonlySet<number>;
  } {
    const buckets = [...this.buckets];
    const touched = new Set<number>();
    write((node, value, bucket) => {
      const b = bucket ?? bucketOf(node);
      if (!touched.has(b)) {
        touched.add(b);
        buckets[b] = new Map(buckets[b]);
      }
      const map = buckets[b] as Map<string, V>;
      if (value === undefined) map.delete(node);
      else map.set(node, value);
    });
    return { maps: new BucketMaps(buckets), touched };
  }
}

/**
 * The digest of each bucket (bucketDigest) of these active heads. `bucket` gives a node's bucket when
 * the caller already knows it (bucketOf otherwise: an md5 a node).
 */
export function headBuckets(heads: Iterable<readonly [node: string, setDigest: string]>, bucket: (node: string) => number = bucketOf): string[] {
  const members: (readonly [string, string])[][] = Array.from({ length: HEAD_BUCKETS }, () => []);
  for (const head of heads) members[bucket(head[0])].push(head);
  return members.map(bucketDigest);
}

/** Labels de-duplicated, sorted and joined by commas; a list already so (as a rete gives them) is only joined. */
function sortedList(xs: readonly string[]): string {
  for (let i = 1; i < xs.length; i++) if (!(xs[i - 1] < xs[i])) return [...new Set(xs)].sort().join(',');
  return xs.join(',');
}

/** A node's labels as one line's text: its tags, then its groups, each de-duplicated, sorted and joined by commas. */
export function labelsText(labels: { readonly tags: readonly string[]; readonly groups: readonly string[] }): string {
  return `${sortedList(labels.tags)} ${sortedList(labels.groups)}`;
}

/**
 * The nodes whose labels count, each with its labels' text (labelsText): those with a tag or a group.
 * A node with neither is one the coordinator records nothing for.
 */
export function* labelLines(
  labels: Iterable<readonly [node: string, labels: { readonly tags: readonly string[]; readonly groups: readonly string[] }]>,
): Generator<readonly [node: string, text: string]> {
  for (const [node, l] of labels) if (l.tags.length + l.groups.length > 0) yield [node, labelsText(l)] as const;
}

/**
 * The digest of each bucket of these nodes' labels (tags and groups, for scoped tokens): bucketDigest
 * over `<node> <tags> <groups>` of labelLines. A client that gives a bucket the digest the coordinator
 * gives its recorded labels holds the same labels for every node in it, and need not send them.
 */
export function labelBuckets(
  labels: Iterable<readonly [node: string, labels: { readonly tags: readonly string[]; readonly groups: readonly string[] }]>,
  bucket: (node: string) => number = bucketOf,
): string[] {
  return headBuckets(labelLines(labels), bucket);
}
