import { chainHash, chainHashBytes, chainHashOf, chainedText, chainedTextOf, type ChainedFields } from '#bundle';

export const GENESIS_HASH = '0'.repeat(64);

export { chainHash, chainHashBytes, chainHashOf, chainedText, chainedTextOf, type ChainedFields };

export type ChainVerdict =
  { readonly ok: true; readonly position: number; readonly hash: string } | { readonly ok: false; readonly position: number; readonly reason: string };

export interface StoredChainedEvent extends ChainedFields {
  readonly prev_hash: string;
  readonly hash: string;
}

/**
 * Folds over events in position order and reports the first break. Stateful so callers can
 * stream the ledger in pages without holding it in memory.
 */
export class ChainVerifier {
  private prevHash = GENESIS_HASH;
  private prevPosition = 0;

  /** Returns a failure verdict at the first broken event, or null while the chain holds. */
  push(event: StoredChainedEvent): ChainVerdict | null {
    if (event.position !== this.prevPosition + 1) {
      return { ok: false, position: event.position, reason: `gap: position ${event.position} follows ${this.prevPosition}` };
    }
    if (event.prev_hash !== this.prevHash) {
      return { ok: false, position: event.position, reason: 'prev_hash does not match the hash of the previous event' };
    }
    const expected = chainHash(this.prevHash, event);
    if (expected !== event.hash) {
      return { ok: false, position: event.position, reason: 'hash does not match the event content (the row was altered)' };
    }
    this.prevHash = event.hash;
    this.prevPosition = event.position;
    return null;
  }

  head(): ChainVerdict {
    return { ok: true, position: this.prevPosition, hash: this.prevHash };
  }
}
