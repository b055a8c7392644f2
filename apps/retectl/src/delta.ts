import { bucketOf, headBuckets, labelBuckets } from '#bundle';
import { HEAD_BUCKETS, HeadBuckets, type NodeLabels } from '#contracts';
import { localSetDigest, type ArtifactDigests } from '#rete';
import type { CoordinatorClient } from './client.js';
import { RetectlError } from './errors.js';
import { listHeadSets } from './node-pages.js';
import { plural, trace } from './output.js';

/**
 * What a publish of this tree must send, read at one ledger position: the nodes whose sets differ
 * from their heads (or that have none, or a retired one). Published without prune and pinned to
 * `position`, those nodes stamp exactly what the whole tree would have stamped there.
 */
export interface Delta {
  readonly kind: 'delta';
  readonly position: number;
  readonly send: readonly string[];
  /** The digest of each bucket of the coordinator's recorded labels, when it gives them. */
  readonly labels?: readonly string[];
}

/** More buckets differing than this, and the whole tree is sent instead of its difference. */
export const MOST_BUCKETS = HEAD_BUCKETS / 2;

/**
 * Why no delta: the whole tree is the better request (`full`: the coordinator has no head buckets,
 * a pruning tree would retire nodes, which only the whole tree says, or most buckets differ), or the
 * ledger moved while the heads were being read (`moved`: read again). A `full` says why, for `--verbose`.
 */
export type DeltaOutcome = Delta | { readonly kind: 'full'; readonly why: string } | { readonly kind: 'moved' };

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
 * Compares the tree with the coordinator's heads bucket by bucket (GET /v1/heads/buckets), then reads
 * the heads of the differing buckets only. Every read must be at the same ledger position.
 */
export async function readDelta(client: CoordinatorClient, local: LocalHeads, prune: boolean): Promise<DeltaOutcome> {
  let summary: HeadBuckets;
  try {
    summary = (await client.call('GET', '/v1/heads/buckets', HeadBuckets)).body;
  } catch (e) {
    if (e instanceof RetectlError && e.code === 'not_found') return { kind: 'full', why: 'the coordinator gives no head buckets' };
    throw e;
  }
  const differing = local.buckets.flatMap((digest, i) => (digest === summary.buckets[i] ? [] : [i]));
  const labels = summary.labels ? { labels: summary.labels } : {};
  if (differing.length === 0) {
    trace(() => `every head bucket matches at position ${summary.position}: nothing to send`);
    return { kind: 'delta', position: summary.position, send: [], ...labels };
  }
  // Most buckets differ (a fleet-wide change, a first publish): reading their heads would cost about
  // what the coordinator's own comparison of the whole tree does, so the whole tree is sent.
  if (differing.length > MOST_BUCKETS) return { kind: 'full', why: `${differing.length} of ${local.buckets.length} head buckets differ` };

  const { items, positions } = await listHeadSets(client, differing);
  if (positions.has(undefined)) return { kind: 'full', why: 'the coordinator gives no position with its heads' };
  if (positions.size !== 1 || !positions.has(summary.position)) return { kind: 'moved' };
  const heads = new Map(items.map((head) => [head.node, head]));

  const members = local.inBuckets(new Set(differing));
  const send: string[] = [];
  for (const [node, digest] of members) {
    const head = heads.get(node);
    if (head === undefined || head.retired || head.set_digest !== digest) send.push(node);
  }
  // An active head the tree leaves out is one a pruning publish retires: only the whole tree says so.
  // A node's bucket is its name's, so a head of these buckets the tree holds is among their members.
  const held = new Set(members.map(([node]) => node));
  if (prune) for (const head of heads.values()) if (!head.retired && !held.has(head.node)) return { kind: 'full', why: `--prune retires ${head.node}` };
  trace(() => `${differing.length} of ${local.buckets.length} head buckets differ at position ${summary.position}: ${plural(send.length, 'node')} to send`);
  return { kind: 'delta', position: summary.position, send, ...labels };
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
