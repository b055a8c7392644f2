import type { Transaction } from 'kysely';
import type { Database } from '../db/index.js';
import type { LedgerEvent } from './domain/ledger.events.js';
import type { StoredEvent } from './store/ledger-row.js';

/**
 * What the ledger asks of its read models: to apply appended events inside the appending
 * transaction, so a read model never shows a publish the ledger does not hold, nor misses one it
 * does. The ledger defines it and the projections module supplies it; the ledger knows no read model.
 */
export interface LedgerProjection {
  /** Applies appended events; with `stampsProjected`, all but their stamps, which `projectStamps` took. */
  project(trx: Transaction<Database>, events: readonly StoredEvent[], stampsProjected?: boolean): Promise<void>;
  /**
   * The stamps among a run of an append's events, called as soon as the run's rows are sent, so that
   * PostgreSQL projects them while the next rows are hashed. `decided` is every event of the append:
   * a stamp takes its publish's message from the record that closes the group, after the run.
   */
  projectStamps(trx: Transaction<Database>, run: readonly StoredEvent[], decided: readonly LedgerEvent[]): Promise<void>;
}
