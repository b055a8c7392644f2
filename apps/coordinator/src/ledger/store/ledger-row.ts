import type { Selectable } from 'kysely';
import type { LedgerTable } from '../../db/index.js';
import type { StoredChainedEvent } from '../domain/hash-chain.js';
import type { LedgerEvent } from '../domain/ledger.events.js';

/** One kind of event as the ledger holds it: the event, its meta and its place in the chain. */
type Stored<E extends LedgerEvent> = E extends LedgerEvent
  ? Omit<StoredChainedEvent, 'type' | 'data' | 'meta'> & { readonly type: E['type']; readonly data: E['data']; readonly meta: Record<string, unknown> }
  : never;

/**
 * An event read from (or just appended to) the ledger, discriminated by `type`: a reader switches on
 * it and gets the kind's data typed, with no cast.
 */
export type StoredEvent = Stored<LedgerEvent>;

/** The stored events of one type. */
export type StoredOf<T extends StoredEvent['type']> = Extract<StoredEvent, { readonly type: T }>;

/** Rows become plain domain values here: positions as numbers, times as RFC 3339 strings. */
export function toStoredEvent(row: Selectable<LedgerTable>): StoredEvent {
  // The one place a row's type and data are taken for an event of that type: only the append path writes them.
  return {
    position: Number(row.position),
    stream: row.stream,
    revision: row.revision,
    type: row.type,
    data: row.data,
    meta: row.meta,
    recorded_at: new Date(row.recorded_at).toISOString(),
    prev_hash: row.prev_hash,
    hash: row.hash,
  } as StoredEvent;
}
