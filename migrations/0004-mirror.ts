import { type Kysely, sql } from 'kysely';

/**
 * The git mirror's checkpoint: the last ledger position the mirror has consumed and the commit the
 * branch pointed at then. One row, so a replica taking over the mirror resumes where the last one stopped.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('mirror_state')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('position', 'bigint', (c) => c.notNull())
    .addColumn('commit', 'text')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`INSERT INTO mirror_state (id, position, commit) VALUES ('main', 0, NULL)`.execute(db);
}
