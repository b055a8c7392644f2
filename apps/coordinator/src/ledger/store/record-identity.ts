import type { Transaction } from 'kysely';
import type { Database } from '../../db/index.js';
import type { CheckpointSigner } from '../ledger-ports.js';
import type { IdentityRecorded } from '../domain/ledger.events.js';
import { appendUnderLock } from './append-path.js';
import { readStreamRevision } from './read-head.js';

/**
 * Appends an identity event (token issued, enrolled, revoked) to `identity:<subject>` inside the
 * caller's transaction, by the ledger's one append path (lock, trust, head, append, checkpoint). The
 * HTTP routes and the coordinator's own commands record through here alike.
 */
export async function recordIdentity(
  trx: Transaction<Database>,
  signer: CheckpointSigner,
  subject: string,
  type: IdentityRecorded['type'],
  data: Record<string, unknown>,
  actor: string,
): Promise<number> {
  const stream = `identity:${subject}` as const;
  const { stored } = await appendUnderLock(trx, signer, async () => {
    const revision = (await readStreamRevision(trx, stream)) + 1;
    return { inputs: [{ event: { type, stream, revision, data }, meta: { actor } }], result: undefined };
  });
  return Number(stored[0].position);
}
