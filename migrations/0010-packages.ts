import type { Kysely } from 'kysely';

/**
 * The mesh's apt repository as a read model of the ledger's package_pushed events: one row per
 * name, version and architecture, the file itself in the blob store under its sha256. Rebuilt from
 * the ledger like every projection; a ledger without package events leaves it empty.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('packages')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('architecture', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('control', 'text', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('position', 'bigint', (c) => c.notNull().unique())
    .addColumn('recorded_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('packages_pkey', ['name', 'version', 'architecture'])
    .execute();
  await db.schema.createIndex('packages_sha256').on('packages').column('sha256').execute();
}
