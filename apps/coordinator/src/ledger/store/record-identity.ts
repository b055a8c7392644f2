import type { Transaction } from 'kysely';
import type { Database } from '../../db/database.js';
import { signingTrust, stampCheckpoint, type TrustKeys } from '../../trust/signing-trust.js';
import type { IdentityRecorded } from '../domain/ledger.events.js';
import { appendEvents } from './append.js';
import { lockLedger } from './lock.js';
import { nextRecordedAt, readLedgerHead, readStreamRevision } from './read-head.js';

/**
 * Appends an identity event (token issued, enrolled, revoked) to `identity:<subject>` inside the
 * caller's transaction, under the ledger lock, and signs a checkpoint of the new head. The HTTP
 * routes and the coordinator's own commands record through here alike.
 */
export async function recordIdentity(trx: Transaction<Database>, keys: TrustKeys, subject: string, type: IdentityRecorded['type'], data: Record<string, unknown>, actor: string): Promise<void> {
  await lockLedger(trx);
  const trust = await signingTrust(trx, keys);
  const head = await readLedgerHead(trx);
  const stream = `identity:${subject}` as const;
  const revision = (await readStreamRevision(trx, stream)) + 1;
  await appendEvents(trx, head, [{ event: { type, stream, revision, data }, meta: { actor } }], await nextRecordedAt(trx));
  await stampCheckpoint(trx, keys, trust);
}
