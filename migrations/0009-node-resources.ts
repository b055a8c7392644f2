import type { Kysely } from 'kysely';

/**
 * What a node's agent last reported doing to each host resource (file or package), and for which
 * version: the latest report that carried a resource list. Null until one does.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('node_status').addColumn('resources', 'jsonb').execute();
}
