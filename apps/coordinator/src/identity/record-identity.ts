import type { Transaction } from 'kysely';
import type { Database } from '../db/index.js';
import { type IdentityRecorded, recordIdentity as appendIdentity } from '../ledger/index.js';
import { checkpointSigner, type TrustKeys } from '../trust/index.js';

/**
 * Appends an identity event to `identity:<subject>` inside the caller's transaction, signed with
 * `keys`: for the token commands that run with a key store and no ledger writer (the CLI, the first
 * admin token at start-up).
 */
export function recordIdentity(
  trx: Transaction<Database>,
  keys: TrustKeys,
  subject: string,
  type: IdentityRecorded['type'],
  data: Record<string, unknown>,
  actor: string,
): Promise<number> {
  return appendIdentity(trx, checkpointSigner(keys), subject, type, data, actor);
}
