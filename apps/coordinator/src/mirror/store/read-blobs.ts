import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.js';

const CHUNK = 1000;

/** Artifact bodies by sha256; a digest the ledger names but the blob store lacks is an error. */
export async function readBlobs(db: Kysely<Database>, digests: Iterable<string>): Promise<Map<string, Uint8Array>> {
  const wanted = [...new Set(digests)];
  const out = new Map<string, Uint8Array>();
  for (let i = 0; i < wanted.length; i += CHUNK) {
    const rows = await db.selectFrom('blobs').select(['sha256', 'content']).where('sha256', 'in', wanted.slice(i, i + CHUNK)).execute();
    for (const r of rows) out.set(r.sha256, r.content);
  }
  const missing = wanted.find((d) => !out.has(d));
  if (missing) throw new Error(`blob ${missing} referenced by the ledger is missing from the blob store`);
  return out;
}
