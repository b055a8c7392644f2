import type { Kysely } from 'kysely';

/**
 * When the coordinator gave a released node its previous set back because the node did not confirm
 * the rollout's version within its window (the rollout_nodes_expired event). A wave's counts show
 * those nodes apart from the ones still outstanding. Only adds a nullable column: an older replica
 * still serving during a rolling upgrade neither writes nor reads it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('rollout_nodes').addColumn('expired_at', 'timestamptz').execute();
}
