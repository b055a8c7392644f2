import { HEAD_BUCKETS, HeadBuckets } from '#contracts';
import type { CoordinatorClient } from './client.js';
import { RetectlError } from './errors.js';
import type { LocalHeads } from './local-heads.js';
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
