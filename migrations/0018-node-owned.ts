import type { Kysely } from 'kysely';

/**
 * What a node's agent last reported it owns on its host (files with their digests, packages with
 * what dpkg had before the agent): the recovery copy an enrolment hands back to an agent whose state
 * dir was lost. Null until a report carries one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('node_status').addColumn('owned', 'jsonb').execute();
}
