import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/index.js';

/** A node's current witness key and the credential that registered it. */
export async function readWitnessKey(db: Kysely<Database> | Transaction<Database>, node: string) {
  return db.selectFrom('node_witness_keys').selectAll().where('node', '=', node).executeTakeFirst();
}

/** Writes a node's witness key, replacing the one an earlier credential registered. */
export async function writeWitnessKey(
  trx: Transaction<Database>,
  row: { node: string; public_key: string; credential_id: string; registered_at: Date; position: number },
): Promise<void> {
  const { node, ...rest } = row;
  await trx
    .insertInto('node_witness_keys')
    .values(row)
    .onConflict((oc) => oc.column('node').doUpdateSet(rest))
    .execute();
}
