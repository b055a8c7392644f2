import { type Kysely, sql } from 'kysely';

/**
 * Why a node credential was revoked: `retired` (the node applied its final, empty set), `enrolled_again`
 * (a newer enrolment replaced it) or `revoked` (an admin). A retired node's agent is told it was
 * retired rather than to re-enrol. Earlier revocations take the reason the ledger recorded for them:
 * its credential_revoked events already said `retired`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('node_credentials').addColumn('revoked_reason', 'text').execute();
  await sql`
    UPDATE node_credentials SET revoked_reason = 'retired'
    WHERE revoked_at IS NOT NULL
      AND id IN (SELECT jsonb_array_elements_text(data->'credential_ids') FROM ledger WHERE type = 'credential_revoked' AND data->>'reason' = 'retired')
  `.execute(db);
}
