import type { Transaction } from 'kysely';
import type { Database } from '../db/database.js';
import type { IdentityRecorded } from '../ledger/domain/ledger.events.js';
import { recordIdentity as appendIdentity } from '../ledger/store/record-identity.js';
import { checkpointSigner, type TrustKeys } from '../trust/signing-trust.js';

/**
 * Appends an identity event to `identity:<subject>` inside the caller's transaction, signed with
 * `keys`: for the token commands that run with a key store and no ledger writer (the CLI, the first
 * admin token at start-up).
 */
export function recordIdentity(trx: Transaction<Database>, keys: TrustKeys, subject: string, type: IdentityRecorded['type'], data: Record<string, unknown>, actor: string): Promise<void> {
  return appendIdentity(trx, checkpointSigner(keys), subject, type, data, actor);
}
