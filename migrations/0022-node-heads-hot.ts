import { type Kysely, sql } from 'kysely';

/**
 * A publish moves every head it stamps in place, without touching an index: a heap-only (HOT)
 * update. PostgreSQL makes one only when no indexed column changes and the new row fits on the old
 * row's page. So the index on `publish_id`, a column every stamp changes, goes (confirming a publish
 * finds its nodes from its record's `changed` list and the primary key instead), and the table's
 * pages are filled half, leaving room for each row's next version. Without this, every head moved
 * wrote a new entry in both of the table's indexes (bench/README.md, bench:publish).
 *
 * The rows are rewritten here, so that they have the room from the next publish on. What is stored is
 * the same. A replica of the build before, during a rolling upgrade, still confirms correctly, its
 * query by `publish_id` reading the whole table instead of the index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS node_heads_publish_idx`.execute(db);
  await sql`ALTER TABLE node_heads SET (fillfactor = 50)`.execute(db);
  // VACUUM FULL cannot run in the migration's transaction; CLUSTER rewrites the table the same way.
  await sql`CLUSTER node_heads USING node_heads_pkey`.execute(db);
  await sql`ALTER TABLE node_heads SET WITHOUT CLUSTER`.execute(db);
}
