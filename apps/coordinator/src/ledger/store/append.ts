import type { Transaction } from 'kysely';
import type { Database } from '../../db/index.js';
import { chainHash } from '../domain/hash-chain.js';
import type { LedgerEvent } from '../domain/ledger.events.js';
import type { LedgerHead } from './read-head.js';
import type { StoredEvent } from './ledger-row.js';

const CHUNK = 1000;

export interface AppendInput {
  readonly event: LedgerEvent;
  readonly meta: Record<string, unknown>;
}

/**
 * Appends events after `head`, chaining each hash to the previous one. Takes a transaction that
 * already holds the ledger lock: positions are computed here, not by a sequence, so that a
 * rolled-back publish leaves no gap, and two appends never share one. The Merkle tree over the
 * events (tree.ts) is extended by the append path, not here.
 */
export async function appendEvents(trx: Transaction<Database>, head: LedgerHead, inputs: readonly AppendInput[], recordedAt: Date): Promise<StoredEvent[]> {
  const recorded_at = recordedAt.toISOString();
  let prev = head;
  const stored: StoredEvent[] = inputs.map(({ event, meta }) => {
    const fields = {
      position: prev.position + 1,
      stream: event.stream,
      revision: event.revision,
      type: event.type,
      data: event.data as Record<string, unknown>,
      meta,
      recorded_at,
    };
    const hash = chainHash(prev.hash, fields);
    // The event's own type and data, so its kind of stored event.
    const row = { ...fields, prev_hash: prev.hash, hash } as StoredEvent;
    prev = { position: fields.position, hash };
    return row;
  });
  for (let i = 0; i < stored.length; i += CHUNK) {
    await trx
      .insertInto('ledger')
      .values(
        stored.slice(i, i + CHUNK).map((e) => ({
          position: e.position,
          stream: e.stream,
          revision: e.revision,
          type: e.type,
          data: JSON.stringify(e.data),
          meta: JSON.stringify(e.meta),
          recorded_at: e.recorded_at,
          prev_hash: e.prev_hash,
          hash: e.hash,
        })),
      )
      .execute();
  }
  return stored;
}
