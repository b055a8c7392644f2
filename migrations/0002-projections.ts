import { type Kysely } from 'kysely';

/** Read models: every row here is a pure function of the ledger and can be dropped and rebuilt. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('node_heads')
    .addColumn('node', 'text', (c) => c.primaryKey())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('set_digest', 'text', (c) => c.notNull())
    .addColumn('retired', 'boolean', (c) => c.notNull())
    .addColumn('artifacts', 'jsonb', (c) => c.notNull())
    .addColumn('jws', 'text', (c) => c.notNull())
    .addColumn('etag', 'text', (c) => c.notNull())
    .addColumn('position', 'bigint', (c) => c.notNull())
    .addColumn('publish_id', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('node_versions')
    .addColumn('node', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('set_digest', 'text', (c) => c.notNull())
    .addColumn('retired', 'boolean', (c) => c.notNull())
    .addColumn('artifacts', 'jsonb', (c) => c.notNull())
    .addColumn('publish_id', 'text', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('recorded_at', 'timestamptz', (c) => c.notNull())
    .addColumn('position', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('node_versions_pkey', ['node', 'version'])
    .execute();

  await db.schema
    .createTable('publishes')
    .addColumn('publish_id', 'text', (c) => c.primaryKey())
    .addColumn('position', 'bigint', (c) => c.notNull().unique())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('changed', 'jsonb', (c) => c.notNull())
    .addColumn('unchanged', 'integer', (c) => c.notNull())
    .addColumn('recorded_at', 'timestamptz', (c) => c.notNull())
    .execute();
}
