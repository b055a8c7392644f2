import { type Kysely, sql } from 'kysely';

/**
 * The versioned trust document (which keys may sign) and the latest signed ledger checkpoint.
 * Trust versions are kept forever and never changed, enforced here as for the ledger: agents walk
 * them from the version they pinned. The checkpoint is one row, replaced by each newer one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('trust_versions')
    .addColumn('version', 'integer', (c) => c.primaryKey())
    .addColumn('signing_kid', 'text', (c) => c.notNull())
    .addColumn('signed_by', 'text', (c) => c.notNull())
    .addColumn('document', 'text', (c) => c.notNull())
    .addColumn('digest', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await sql`
    CREATE FUNCTION trust_versions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'trust versions are append-only: % is not allowed', TG_OP USING ERRCODE = 'restrict_violation';
    END $$`.execute(db);
  await sql`CREATE TRIGGER trust_versions_no_update_delete BEFORE UPDATE OR DELETE ON trust_versions FOR EACH ROW EXECUTE FUNCTION trust_versions_append_only()`.execute(
    db,
  );
  await sql`CREATE TRIGGER trust_versions_no_truncate BEFORE TRUNCATE ON trust_versions FOR EACH STATEMENT EXECUTE FUNCTION trust_versions_append_only()`.execute(
    db,
  );

  await db.schema
    .createTable('ledger_checkpoint')
    .addColumn('id', 'integer', (c) => c.primaryKey().check(sql`id = 1`))
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('position', 'bigint', (c) => c.notNull())
    .addColumn('signed_at', 'timestamptz', (c) => c.notNull())
    .addColumn('note', 'text', (c) => c.notNull())
    .execute();

  // What each agent last reported it witnessed: the newest checkpoint it verified, and since when it is stale.
  await db.schema.alterTable('node_status').addColumn('checkpoint', 'text').addColumn('stale_since', 'timestamptz').execute();
}
