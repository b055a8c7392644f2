import type { Kysely } from 'kysely';

/**
 * Which ineligible nodes a publish gave new content because its actor accepted them: the ledger's
 * publish record carries it, and the publishes read model shows it. Null for every earlier publish,
 * which accepted none, exactly as a rebuild from their records yields.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('publishes').addColumn('accepted_ineligible', 'jsonb').execute();
}
