import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/index.js';

/** One key for the whole ledger: appends are serialised across every replica on the database (see the ledger invariants in docs/architecture.md). */
const LEDGER_LOCK_KEY = 0x466c6f72; // "Flor"

export async function lockLedger(trx: Transaction<Database>): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${LEDGER_LOCK_KEY})`.execute(trx);
}
