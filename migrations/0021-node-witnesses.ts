import type { Kysely } from 'kysely';

/**
 * The fleet as witnesses of the ledger (C2SP tlog-cosignature). Each node's agent makes an Ed25519
 * key of its own and registers the public half, once per credential, which the ledger records
 * (`node_enrolled` or `node_witness_key_registered`); `node_witness_keys` keeps each node's current
 * one, with the position of the event that recorded it, for the routes that show cosignatures. Each report may carry the tree checkpoint the agent
 * verified last and its cosignature of it, kept beside the chain checkpoint the row already holds.
 * Columns an older build does not know stay null when one of its replicas writes a row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('node_witness_keys')
    .addColumn('node', 'text', (c) => c.primaryKey())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('credential_id', 'text', (c) => c.notNull())
    .addColumn('registered_at', 'timestamptz', (c) => c.notNull())
    .addColumn('position', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.alterTable('node_status').addColumn('cosigned_checkpoint', 'text').execute();
  await db.schema.alterTable('node_status').addColumn('cosignature', 'text').execute();
}
