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

/** The snapshot after appending stamps to the heads of `before`: a copy, the old one untouched. */
export function advanceHeads(before: Heads, stamps: readonly NodeSetStamped['data'][], at: LedgerHead): HeadsSnapshot {
  const heads = new Map<string, NodeHead>(before);
  for (const s of stamps) heads.set(s.node, { version: s.version, setDigest: s.set_digest, retired: s.retired, artifacts: s.artifacts });
  return { at, heads };
}
