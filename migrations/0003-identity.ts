import { type Kysely, sql } from 'kysely';

/** Secrets are stored only as sha256 hashes; rows are looked up by a public id and compared in constant time. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('api_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('revoked_at', 'timestamptz')
    .execute();

  await db.schema
    .createTable('enrolment_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('node', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('thumbprint', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .execute();

  await db.schema
    .createTable('node_credentials')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('node', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('node_credentials_node_idx').on('node_credentials').column('node').execute();

  await db.schema
    .createTable('node_status')
    .addColumn('node', 'text', (c) => c.primaryKey())
    .addColumn('enrolled_at', 'timestamptz')
    .addColumn('last_contact', 'timestamptz')
    .addColumn('applied_version', 'integer')
    .addColumn('last_result', 'text')
    .addColumn('last_error', 'text')
    .addColumn('installed', 'jsonb')
    .addColumn('profile', 'jsonb')
    .addColumn('inventory', 'jsonb')
    .execute();
}
