import type { Kysely } from 'kysely';

/**
 * The agent version a node's agent last said it runs: from its enrolment profile, then from every
 * report that carries one. Null for a node whose agent never said (an older agent).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('node_status').addColumn('agent_version', 'text').execute();
}
