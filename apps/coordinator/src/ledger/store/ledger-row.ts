import type { Selectable } from 'kysely';
import type { LedgerTable } from '../../db/index.js';
import type { StoredChainedEvent } from '../domain/hash-chain.js';

export interface StoredEvent extends StoredChainedEvent {
  readonly data: Record<string, unknown>;
  readonly meta: Record<string, unknown>;
}

/** Rows become plain domain values here: positions as numbers, times as RFC 3339 strings. */
export function toStoredEvent(row: Selectable<LedgerTable>): StoredEvent {
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
  };
}
