import { type Kysely, sql } from 'kysely';

/**
 * What each node did with each version it was given: the basis of a publish's convergence. Reports
 * are frequent; a row changes only when a version's outcome does. Not ledger events: the ledger holds what was decided, not what nodes say.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('node_outcomes')
    .addColumn('node', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('result', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('reported_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('node_outcomes_pkey', ['node', 'version'])
    .execute();
  await db.schema
    .alterTable('node_status')
    .addColumn('ineligible', 'boolean', (c) => c.notNull().defaultTo(sql`false`))
    .execute();
  await db.schema.alterTable('node_status').addColumn('briefing', 'jsonb').execute();
}
