import type { Kysely } from 'kysely';

/** How each applied version was activated (hot reload or restart, and why a reload fell back). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('node_outcomes').addColumn('activation', 'jsonb').execute();
}
