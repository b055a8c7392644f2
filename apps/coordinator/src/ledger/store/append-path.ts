import type { Transaction } from 'kysely';
import type { Database } from '../../db/database.js';
import { signingTrust, stampCheckpoint, type TrustKeys } from '../../trust/signing-trust.js';
import type { TrustHead } from '../../trust/trust.repository.js';
import { appendEvents, type AppendInput } from './append.js';
import type { StoredEvent } from './ledger-row.js';
import { lockLedger } from './lock.js';
import { nextRecordedAt, readLedgerHead, type LedgerHead } from './read-head.js';

/** What a writer decides its events from: the ledger head and signing trust read under the lock. */
export interface AppendContext {
  readonly head: LedgerHead;
  readonly trust: TrustHead;
}

/**
 * The one path events take into the ledger, inside the caller's transaction: take the lock, read
 * the signing trust under it (a key rotation is wholly before this append or after it) and the
 * head, let the caller decide its events from them, append them chained to the head, hand them to
 * `project` (the read models move in the same transaction), and sign one checkpoint of the new
 * head. Nothing decided, nothing appended and no checkpoint. A thrown error anywhere rolls all of
 * it back with the caller's transaction.
 */
export async function appendUnderLock<T>(
  trx: Transaction<Database>,
  keys: TrustKeys,
  decide: (at: AppendContext) => Promise<{ readonly inputs: readonly AppendInput[]; readonly result: T }>,
  project: (stored: readonly StoredEvent[]) => Promise<void> = async () => {},
): Promise<{ readonly stored: readonly StoredEvent[]; readonly result: T }> {
  await lockLedger(trx);
  const trust = await signingTrust(trx, keys);
  const head = await readLedgerHead(trx);
  const { inputs, result } = await decide({ head, trust });
  if (inputs.length === 0) return { stored: [], result };
  const stored = await appendEvents(trx, head, inputs, await nextRecordedAt(trx));
  await project(stored);
  await stampCheckpoint(trx, keys, trust);
  return { stored, result };
}
