import { type Kysely, sql } from 'kysely';

/**
 * API tokens that can be taken back: who created each (its ledger event's actor), when it expires
 * (null: never), when it was last used (written in batches, see ApiTokenUses), and who revoked it.
 * Tokens made before this have no expiry, as they were made; their creator is read from the
 * api_token_created event every token has had since 0003.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('api_tokens')
    .addColumn('created_by', 'text')
    .addColumn('expires_at', 'timestamptz')
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_by', 'text')
    .execute();
  await sql`
    UPDATE api_tokens AS t SET created_by = l.meta->>'actor'
    FROM ledger AS l
    WHERE l.type = 'api_token_created' AND l.data->>'id' = t.id
  `.execute(db);
  await sql`UPDATE api_tokens SET created_by = 'unknown' WHERE created_by IS NULL`.execute(db);
  await sql`ALTER TABLE api_tokens ALTER COLUMN created_by SET NOT NULL`.execute(db);
  // Revoking by name looks tokens up by it.
  await db.schema.createIndex('api_tokens_name_idx').on('api_tokens').column('name').execute();
}
