import type { Kysely, Transaction } from 'kysely';
import { decodeTrustDocument } from '#bundle';
import type { Database } from '../db/index.js';
import type { TrustHead } from '../ledger/index.js';

export type { TrustHead };

export async function readTrustHead(db: Kysely<Database>): Promise<TrustHead | null> {
  const row = await db.selectFrom('trust_versions').selectAll().orderBy('version', 'desc').limit(1).executeTakeFirst();
  return row
    ? { version: row.version, signingKid: row.signing_kid, doc: decodeTrustDocument(row.document).doc, document: row.document, digest: row.digest }
    : null;
}

/** The signed versions after `after`, oldest first. */
export async function readTrustChain(db: Kysely<Database>, after: number): Promise<{ version: number; document: string }[]> {
  return db.selectFrom('trust_versions').select(['version', 'document']).where('version', '>', after).orderBy('version').execute();
}

export async function insertTrustVersion(
  trx: Transaction<Database>,
  row: { version: number; signingKid: string; signedBy: string; document: string; digest: string; at: Date },
): Promise<void> {
  await trx
    .insertInto('trust_versions')
    .values({ version: row.version, signing_kid: row.signingKid, signed_by: row.signedBy, document: row.document, digest: row.digest, created_at: row.at })
    .execute();
}
