import { type Kysely, sql } from 'kysely';

/**
 * A node's versions are its stamps in the ledger: stream `node:<name>`, revision = version, found by
 * the ledger's own (stream, revision) key. The table that copied every stamp beside its ledger row
 * cost each stamp a second row and index entry in the appending transaction, for nothing the ledger
 * row does not hold (its message is its publish's, in `publishes`). It becomes a view with the same
 * columns, for reading by hand; the coordinator reads a node's versions from the ledger by stream
 * (ledger/store/versions.ts), which the view's `node` column, taken from the event's data, cannot
 * use.
 *
 * Nothing is lost: every row the table held is a ledger row's fields. A replica of the build before
 * reads through the view, but its publishes fail (it inserts into the view) and roll back whole, so
 * this migration does not roll: stop every replica, migrate, start the new build on each (the
 * operator's guide, "Upgrading the coordinator").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE node_versions`.execute(db);
  await sql`CREATE VIEW node_versions AS
    SELECT l.data->>'node' AS node, l.revision AS version, l.data->>'set_digest' AS set_digest,
      (l.data->>'retired')::boolean AS retired, l.data->'artifacts' AS artifacts, l.data->>'publish_id' AS publish_id,
      l.meta->>'actor' AS actor, coalesce(p.message, '') AS message, l.recorded_at, l.position
    FROM ledger l LEFT JOIN publishes p ON p.publish_id = l.data->>'publish_id'
    WHERE l.type = 'node_set_stamped'`.execute(db);
}
