import { type Kysely, sql } from 'kysely';

/**
 * API tokens that can be taken back: who created each (its ledger event's actor), when it expires
 * (null: never), when it was last used (written in batches, see ApiTokenUses), and who revoked it.
 * Tokens made before this have no expiry, as they were made; their creator is read from the
 * api_token_created event every token has had since 0003.
 *
 * Only adds: nullable columns, and `created_by` with a default, so an older replica still serving
 * during a rolling upgrade keeps creating tokens (as `unknown`, never expiring). Until it is
 * replaced it neither refuses expired tokens nor notes last uses: replace the replicas promptly.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('api_tokens')
    .addColumn('created_by', 'text', (c) => c.notNull().defaultTo('unknown'))
    .addColumn('expires_at', 'timestamptz')
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_by', 'text')
    .execute();
  await sql`
    UPDATE api_tokens AS t SET created_by = l.meta->>'actor'
    FROM ledger AS l
    WHERE l.type = 'api_token_created' AND l.data->>'id' = t.id AND l.meta->>'actor' IS NOT NULL
  `.execute(db);
  // Revoking by name looks tokens up by it.
  await db.schema.createIndex('api_tokens_name_idx').on('api_tokens').column('name').execute();
}
