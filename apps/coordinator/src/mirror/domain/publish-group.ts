import type { StoredEvent, StoredOf, IneligibleNode, NodeSetStamped, PublishKind } from '../../ledger/index.js';

/** One set-changing ledger record with the stamps it closes: what becomes one mirror commit. */
export interface MirrorPublish {
  /** Position and hash of the publish_recorded event, the last of the group. */
  readonly position: number;
  readonly hash: string;
  readonly publishId: string;
  readonly kind: PublishKind;
  readonly message: string;
  readonly actor: string;
  readonly recordedAt: string;
  readonly changed: readonly { node: string; from: number; to: number }[];
  /** Ineligible nodes the actor accepted; absent or empty for most publishes. */
  readonly acceptedIneligible?: readonly IneligibleNode[];
  readonly stamps: readonly NodeSetStamped['data'][];
}

export type GroupItem = { readonly kind: 'publish'; readonly publish: MirrorPublish } | { readonly kind: 'other'; readonly position: number };

/**
 * Folds ledger events, in order, into publishes. A publish's stamps precede its record at contiguous
 * positions; events of other streams (identity) change no set and pass through as `other`.
 * Stamps still waiting for their record stay pending, so pages may split a publish anywhere.
 */
export class PublishGrouper {
  private pending: StoredOf<'node_set_stamped'>[] = [];

  push(event: StoredEvent): GroupItem | null {
    if (event.type === 'node_set_stamped') {
      this.pending.push(event);
      return null;
    }
    if (event.type !== 'publish_recorded') {
      if (this.pending.length) throw new Error(`ledger position ${event.position}: ${event.type} interrupts the stamps of a publish`);
      return { kind: 'other', position: event.position };
    }
    const record = event.data;
    const stamps = this.pending.map((e) => e.data);
    this.pending = [];
    const foreign = stamps.find((s) => s.publish_id !== record.publish_id);
    if (foreign)
      throw new Error(`ledger position ${event.position}: stamp of ${foreign.node} belongs to publish ${foreign.publish_id}, not ${record.publish_id}`);
    return {
      kind: 'publish',
      publish: {
        position: event.position,
        hash: event.hash,
        publishId: record.publish_id,
        kind: record.kind,
        message: record.message,
        actor: String(event.meta.actor),
        recordedAt: event.recorded_at,
        changed: record.changed,
        ...(record.accepted_ineligible ? { acceptedIneligible: record.accepted_ineligible } : {}),
        stamps,
      },
    };
  }

  /** Position of the first event not yet folded into an item, or null when nothing is pending. */
  pendingFrom(): number | null {
    return this.pending.length ? this.pending[0].position : null;
  }
}
