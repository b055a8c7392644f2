import type { Kysely } from 'kysely';
import type { Database } from '../../db/index.js';
import { GENESIS_HASH } from '../domain/hash-chain.js';

export interface LedgerHead {
  readonly position: number;
  readonly hash: string;
}

export async function readLedgerHead(db: Kysely<Database>): Promise<LedgerHead> {
  const row = await db.selectFrom('ledger').select(['position', 'hash']).orderBy('position', 'desc').limit(1).executeTakeFirst();
  return row ? { position: Number(row.position), hash: row.hash } : { position: 0, hash: GENESIS_HASH };
}

/**
 * The time to record the next event at: now, but never earlier than the last recorded event, so
 * ledger order and recorded time agree even when the host clock steps back. Call under the lock.
 */
export async function nextRecordedAt(db: Kysely<Database>, now: Date = new Date()): Promise<Date> {
  const row = await db.selectFrom('ledger').select('recorded_at').orderBy('position', 'desc').limit(1).executeTakeFirst();
  const last = row ? new Date(row.recorded_at).getTime() : 0;
  return new Date(Math.max(now.getTime(), last));
}

export async function readStreamRevision(db: Kysely<Database>, stream: string): Promise<number> {
  const row = await db
    .selectFrom('ledger')
    .select((eb) => eb.fn.max('revision').as('revision'))
    .where('stream', '=', stream)
    .executeTakeFirst();
  return row?.revision ?? 0;
}
