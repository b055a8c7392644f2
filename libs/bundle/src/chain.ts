import { canonicalJson } from './canonical-json.js';
import { sha256Hex } from './digest.js';

/** The fields of a ledger event its chain hash covers: everything but its hashes. */
export interface ChainedFields {
  readonly position: number;
  readonly stream: string;
  readonly revision: number;
  readonly type: string;
  readonly data: unknown;
  readonly meta: unknown;
  readonly recorded_at: string;
}

/**
 * hash = sha256(prev_hash ‖ canonical_json(event without hashes)): each event seals the whole ledger
 * before it (docs/architecture.md, ledger invariants). Here, not in the coordinator, because a node
 * recomputes the chain hash of its own stamp event to check that its bundle is in the log.
 */
export function chainHash(prevHash: string, event: ChainedFields): string {
  return chainHashOf(prevHash, chainedText(event));
}

/** The text an event's chain hash covers: the canonical JSON of its fields without its hashes. */
export function chainedText(event: ChainedFields): string {
  return canonicalJson({
    position: event.position,
    stream: event.stream,
    revision: event.revision,
    type: event.type,
    data: event.data,
    meta: event.meta,
    recorded_at: event.recorded_at,
  });
}

/** The chain hash of an event whose chainedText is `text`. */
export function chainHashOf(prevHash: string, text: string): string {
  return sha256Hex(Buffer.concat([Buffer.from(prevHash, 'hex'), Buffer.from(text, 'utf8')]));
}
