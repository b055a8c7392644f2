import { createHash } from 'node:crypto';
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
 * A node's stream in the ledger: its stamps, each one's revision its version. The coordinator stamps
 * and reads a node's versions by it; a node rebuilds its own stamp with it to check its bundle is in
 * the log (log-proof.ts).
 */
export const nodeStream = (node: string): `node:${string}` => `node:${node}`;

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

/**
 * chainedText from the canonical text of the event's data and meta, already written: a ledger append
 * writes each event's data once, for its row and its chain text alike, and a publish's thousands of
 * events share one meta. The other fields' keys are fixed, so their order is written out here; the
 * result is chainedText's, byte for byte (chain.unit.spec.ts holds them to it).
 */
export function chainedTextOf(data: string, meta: string, event: Omit<ChainedFields, 'data' | 'meta'>): string {
  if (!Number.isSafeInteger(event.position) || !Number.isSafeInteger(event.revision))
    throw new TypeError(`a ledger event's position and revision are integers, not ${event.position} and ${event.revision}`);
  return (
    `{"data":${data},"meta":${meta},"position":${event.position},"recorded_at":${JSON.stringify(event.recorded_at)}` +
    `,"revision":${event.revision},"stream":${JSON.stringify(event.stream)},"type":${JSON.stringify(event.type)}}`
  );
}

/** chainHashOf with the hashes as bytes, as the append path keeps them: no hex parsed or written. */
export function chainHashBytes(prevHash: Uint8Array, text: string): Buffer {
  return createHash('sha256').update(prevHash).update(text, 'utf8').digest();
}
