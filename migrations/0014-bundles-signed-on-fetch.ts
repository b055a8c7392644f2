import { sql, type Kysely } from 'kysely';

/**
 * A head's bundle is signed when its node fetches it, not when it is stamped: a fleet-wide publish
 * wrote a JWS of a few KiB per node, most of its time, for bundles fetched once each. A head now
 * keeps the kid of the key that signs it and an ETag known without signing. Existing heads take the
 * kid from their stored JWS's protected header and keep their ETag: the JWS signed on fetch is the
 * same bytes (same payload from the same row, same key, Ed25519 being deterministic), so no agent
 * fetches again because of this migration.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE node_heads ADD COLUMN kid text`.execute(db);
  // The protected header is base64url without padding: translated and padded to base64 to decode.
  await sql`
    UPDATE node_heads SET kid = convert_from(decode(rpad(translate(split_part(jws, '.', 1), '-_', '+/'), (length(split_part(jws, '.', 1)) + 3) / 4 * 4, '='), 'base64'), 'UTF8')::jsonb ->> 'kid'
  `.execute(db);
  await sql`ALTER TABLE node_heads ALTER COLUMN kid SET NOT NULL`.execute(db);
  await sql`ALTER TABLE node_heads DROP COLUMN jws`.execute(db);
}
