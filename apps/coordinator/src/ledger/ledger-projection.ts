import type { Transaction } from 'kysely';
import type { Database } from '../db/index.js';
import type { StoredEvent } from './store/ledger-row.js';

/**
 * What the ledger asks of its read models: to apply appended events inside the appending
 * transaction, so a read model never shows a publish the ledger does not hold, nor misses one it
 * does. The ledger defines it and the projections module supplies it; the ledger knows no read model.
 */
export interface LedgerProjection {
  project(trx: Transaction<Database>, events: readonly StoredEvent[]): Promise<void>;
}
