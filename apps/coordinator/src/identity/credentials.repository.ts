import type { Transaction } from 'kysely';
import type { Database } from '../db/index.js';

export type RevokedReason = 'revoked' | 'enrolled_again' | 'retired' | 'lost';

/** The enrolment token by id, row-locked: two agents racing with one token cannot both enrol. */
export async function lockEnrolmentToken(trx: Transaction<Database>, id: string) {
  return trx.selectFrom('enrolment_tokens').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function markEnrolmentTokenUsed(trx: Transaction<Database>, id: string, at: Date): Promise<void> {
  await trx.updateTable('enrolment_tokens').set({ used_at: at }).where('id', '=', id).execute();
}

/**
 * Revokes the node's live credentials and returns their ids. With `createdUpTo`, only those created
 * by then (a credential enrolled later is someone bringing the node back).
 */
export async function revokeLiveCredentials(
  trx: Transaction<Database>,
  node: string,
  reason: RevokedReason,
  at: Date,
  createdUpTo?: Date | string,
): Promise<string[]> {
  const rows = await trx
    .updateTable('node_credentials')
    .set({ revoked_at: at, revoked_reason: reason })
    .where('node', '=', node)
    .where('revoked_at', 'is', null)
    .$if(createdUpTo !== undefined, (q) => q.where('created_at', '<=', createdUpTo as Date))
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}

export async function insertCredential(trx: Transaction<Database>, row: { id: string; node: string; secret_hash: string; created_at: Date }): Promise<void> {
  await trx.insertInto('node_credentials').values(row).execute();
}
