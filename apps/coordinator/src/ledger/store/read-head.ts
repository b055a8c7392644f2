import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.js';
import { GENESIS_HASH } from '../domain/hash-chain.js';

export interface LedgerHead {
  readonly position: number;
  readonly hash: string;
}

export async function readLedgerHead(db: Kysely<Database>): Promise<LedgerHead> {
  const row = await db.selectFrom('ledger').select(['position', 'hash']).orderBy('position', 'desc').limit(1).executeTakeFirst();
  return row ? { position: Number(row.position), hash: row.hash } : { position: 0, hash: GENESIS_HASH };
}

export async function readStreamRevision(db: Kysely<Database>, stream: string): Promise<number> {
  const row = await db.selectFrom('ledger').select((eb) => eb.fn.max('revision').as('revision')).where('stream', '=', stream).executeTakeFirst();
  return row?.revision ?? 0;
}
