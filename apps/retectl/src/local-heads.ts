import { bucketOf, headBuckets, labelBuckets } from '#bundle';
import type { NodeLabels } from '#contracts';
import { localSetDigest, type ArtifactDigests } from '#rete';

/*
 * A compiled tree's heads and labels, worked out on this machine: what a compile records and a publish
 * compares with the coordinator's (delta.ts). Nothing here talks to a coordinator, so a compile loads
 * none of the API's schemas.
 */

/** A tree as heads would hold it: each node's set digest, and the digest of each bucket of them. */
export interface LocalHeads {
  readonly buckets: readonly string[];
  /** The digest of each bucket of the tree's labels (labelBuckets), when its compile worked them out. */
  readonly labels?: readonly string[];
  /** The nodes of these buckets, each with its set digest. */
  inBuckets(buckets: ReadonlySet<number>): readonly (readonly [node: string, setDigest: string])[];
  /** A node's set digest; undefined for a node the tree does not hold. */
  setOf(node: string): string | undefined;
}

/**
 * Worked out once per publish: 10,000 set digests and their buckets are tens of milliseconds. Each
 * node's bucket is kept, so comparing with the heads hashes no name again.
 */
export function localHeads(tree: ReadonlyMap<string, ArtifactDigests>): LocalHeads {
  const sets = new Map<string, string>();
  const buckets = new Map<string, number>();
  for (const [node, artifacts] of tree) {
    sets.set(node, localSetDigest(artifacts));
    buckets.set(node, bucketOf(node));
  }
  return {
    buckets: headBuckets(sets, (node) => buckets.get(node)!),
    inBuckets: (only) => [...sets].filter(([node]) => only.has(buckets.get(node)!)),
    setOf: (node) => sets.get(node),
  };
}

/**
 * A tree's nodes' tags and groups (nodeLabels), as a publish sends them for scoped tokens: asked for
 * node by node when only some buckets differ, whole for the whole tree.
 */
export interface TreeLabels {
  /** A node's tags and groups (empty lists when it has neither); undefined for a node the tree does not hold. */
  of(node: string): NodeLabels | undefined;
  /** Every node's. */
  all(): Readonly<Record<string, NodeLabels>>;
}

/** Labels held whole in memory, as nodeLabels gives them. */
export function labelsIn(labels: ReadonlyMap<string, NodeLabels>): TreeLabels {
  let all: Readonly<Record<string, NodeLabels>> | undefined;
  return { of: (node) => labels.get(node), all: () => (all ??= Object.fromEntries(labels)) };
}

/**
 * The labels a publish sends: those of the buckets whose digest differs from the coordinator's
 * recorded labels (theirs), every node's when it gives none. A bucket holding a node the coordinator
 * recorded labels for and the tree no longer has differs every time, and costs its few hundred
 * nodes' labels; labels only ever replace what was recorded, so what is not sent stays as it is.
 */
export function labelsToSend(labels: TreeLabels, theirs: readonly string[] | undefined, local: LocalHeads): Readonly<Record<string, NodeLabels>> {
  if (theirs === undefined) return labels.all();
  const mine = local.labels ?? labelBuckets(Object.entries(labels.all()));
  const differing = new Set(mine.flatMap((digest, i) => (digest === theirs[i] ? [] : [i])));
  if (differing.size === 0) return {};
  const sent: Record<string, NodeLabels> = {};
  for (const [node] of local.inBuckets(differing)) {
    const l = labels.of(node);
    if (l) sent[node] = l;
  }
  return sent;
}
