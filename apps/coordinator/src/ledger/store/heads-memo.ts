import type { Heads, NodeHead } from '../domain/ledger.decider.js';
import type { NodeSetStamped } from '../domain/ledger.events.js';
import type { LedgerHead } from './read-head.js';

/** A tree of at least this many nodes loads every head once and keeps them; smaller ones read only their own. */
export const MEMO_FROM_NODES = 1000;

/** Every node's head as of one ledger head: what a publish compares its tree against. */
export interface HeadsSnapshot {
  readonly at: LedgerHead;
  readonly heads: Heads;
}

/**
 * The heads of every node as this process last saw them committed, keyed by the ledger head they
 * belong to. Heads move only by appends, so a snapshot whose position and hash are the ledger's head,
 * read under the ledger lock, is what node_heads holds: a publish of a large tree then compares
 * against memory instead of reading every head (bench:publish, identical 10,000-node tree). Any other
 * append (another replica's publish, an enrolment, a restored database) leaves the snapshot behind
 * the head, and the next large publish reads the heads again. Snapshots are never changed in place:
 * a write that fails leaves the last committed one.
 */
export class HeadsMemo {
  private snapshot: HeadsSnapshot | null = null;

  /** The heads if they are those of `head`, else null. Call under the ledger lock. */
  at(head: LedgerHead): Heads | null {
    const s = this.snapshot;
    return s && s.at.position === head.position && s.at.hash === head.hash ? s.heads : null;
  }

  /** Keeps a snapshot unless a newer one is already kept (writes may finish out of order). */
  keep(snapshot: HeadsSnapshot): void {
    if (!this.snapshot || snapshot.at.position > this.snapshot.at.position) this.snapshot = snapshot;
  }

  /** How many nodes the last snapshot held, current or not: the fleet's size as last seen. */
  lastSize(): number {
    return this.snapshot?.heads.size ?? 0;
  }

  /**
   * Whether a publish of `treeNodes` nodes should read every head (and keep them) rather than only
   * its own: a pruning publish needs them all; a large tree costs about the same either way, unless
   * the fleet last seen was far larger than the tree.
   */
  wantsAll(treeNodes: number, prune: boolean): boolean {
    return prune || (treeNodes >= MEMO_FROM_NODES && this.lastSize() <= 4 * treeNodes);
  }
}

/**
 * The snapshot after appending stamps to the heads of `before`: the old one untouched. A few stamps
 * on a large fleet go in a layer over the heads they change (LayeredHeads) instead of a copy of every
 * head, so a one-node publish to 100,000 nodes does not copy 100,000 entries; once the layer holds
 * more than an eighth of the fleet, the next snapshot is one map again.
 */
export function advanceHeads(before: Heads, stamps: readonly NodeSetStamped['data'][], at: LedgerHead): HeadsSnapshot {
  const base = before instanceof LayeredHeads ? before.base : before;
  const changes = new Map<string, NodeHead>(before instanceof LayeredHeads ? before.top : undefined);
  for (const s of stamps) changes.set(s.node, { version: s.version, setDigest: s.set_digest, retired: s.retired, artifacts: s.artifacts });
  if (changes.size * 8 <= base.size) return { at, heads: new LayeredHeads(base, changes) };
  const heads = new Map<string, NodeHead>(base);
  for (const [node, head] of changes) heads.set(node, head);
  return { at, heads };
}

/**
 * Heads as a map never changed in place, with a smaller map of later heads over it. Reads and
 * iteration give what the two merged into one map would: the base's order, then the nodes only the
 * top holds, in the order they were added.
 */
export class LayeredHeads implements ReadonlyMap<string, NodeHead> {
  readonly size: number;

  constructor(
    readonly base: Heads,
    readonly top: ReadonlyMap<string, NodeHead>,
  ) {
    let added = 0;
    for (const node of top.keys()) if (!base.has(node)) added++;
    this.size = base.size + added;
  }

  get(node: string): NodeHead | undefined {
    return this.top.get(node) ?? this.base.get(node);
  }

  has(node: string): boolean {
    return this.top.has(node) || this.base.has(node);
  }

  *entries(): MapIterator<[string, NodeHead]> {
    for (const [node, head] of this.base) yield [node, this.top.get(node) ?? head];
    for (const entry of this.top) if (!this.base.has(entry[0])) yield entry;
  }

  *keys(): MapIterator<string> {
    for (const [node] of this.entries()) yield node;
  }

  *values(): MapIterator<NodeHead> {
    for (const [, head] of this.entries()) yield head;
  }

  [Symbol.iterator](): MapIterator<[string, NodeHead]> {
    return this.entries();
  }

  forEach(fn: (head: NodeHead, node: string, map: ReadonlyMap<string, NodeHead>) => void, thisArg?: unknown): void {
    for (const [node, head] of this.entries()) fn.call(thisArg, head, node, this);
  }
}
