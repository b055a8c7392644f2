import { sql, type Kysely } from 'kysely';
import { type Database, anyOf } from '../db/index.js';
import type { LedgerBlobs } from '../ledger/index.js';

/** Keys per statement: a 10,000-node publish is one indexed read. */
const CHUNK = 10_000;

export async function blobSizes(db: Kysely<Database>, digests: readonly string[]): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  const unique = [...new Set(digests)];
  for (let i = 0; i < unique.length; i += CHUNK) {
    const rows = await db
      .selectFrom('blobs')
      .select(['sha256', 'size'])
      .where(anyOf('sha256', unique.slice(i, i + CHUNK)))
      .execute();
    for (const r of rows) sizes.set(r.sha256, r.size);
  }
  return sizes;
}

export async function missingBlobs(db: Kysely<Database>, digests: readonly string[]): Promise<string[]> {
  const present = await blobSizes(db, digests);
  return [...new Set(digests)].filter((d) => !present.has(d)).sort();
}

/** Stores a blob; returns false when it was already there. Content-addressed, so a race is harmless. */
export async function putBlob(db: Kysely<Database>, sha256: string, content: Uint8Array): Promise<boolean> {
  const result = await db
    .insertInto('blobs')
    .values({ sha256, size: content.byteLength, content })
    .onConflict((oc) => oc.column('sha256').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/**
 * Stores many blobs in one transaction, thousands of rows per statement; returns how many were new.
 * Either all are stored or, on an error, none.
 */
export async function putBlobs(db: Kysely<Database>, blobs: readonly { sha256: string; content: Uint8Array }[]): Promise<number> {
  if (blobs.length === 0) return 0;
  return db.transaction().execute(async (trx) => {
    let created = 0;
    for (let i = 0, rows = 0, bytes = 0; i < blobs.length; i += rows) {
      // A statement carries at most BATCH_ROWS rows and about BATCH_BYTES of content.
      for (rows = 0, bytes = 0; i + rows < blobs.length && rows < BATCH_ROWS && (rows === 0 || bytes < BATCH_BYTES); rows++)
        bytes += blobs[i + rows].content.byteLength;
      created += await insertBlobs(trx, blobs.slice(i, i + rows));
    }
    return created;
  });
}

const BATCH_ROWS = 10_000;
const BATCH_BYTES = 8 * 1024 * 1024;

/**
 * One statement, an array parameter per column: its text and plan stay the same whatever its rows,
 * where a list of three placeholders a row made PostgreSQL parse and plan each batch anew.
 */
async function insertBlobs(db: Kysely<Database>, blobs: readonly { sha256: string; content: Uint8Array }[]): Promise<number> {
  const result = await sql`INSERT INTO blobs (sha256, size, content)
    SELECT * FROM unnest(
      ${sql.val(blobs.map((b) => b.sha256))}::text[],
      ${sql.val(blobs.map((b) => b.content.byteLength))}::integer[],
      ${sql.val(blobs.map((b) => b.content))}::bytea[]
    )
    ON CONFLICT (sha256) DO NOTHING`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

export async function readBlobs(db: Kysely<Database>, digests: Iterable<string>): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  const unique = [...new Set(digests)];
  for (let i = 0; i < unique.length; i += CHUNK) {
    const rows = await db
      .selectFrom('blobs')
      .select(['sha256', 'content'])
      .where(anyOf('sha256', unique.slice(i, i + CHUNK)))
      .execute();
    for (const r of rows) out.set(r.sha256, r.content);
  }
  return out;
}

/** Artifact bodies the ledger names: one it names but the blob store lacks is an error, not an empty file. */
export async function readLedgerBlobs(db: Kysely<Database>, digests: Iterable<string>): Promise<Map<string, Uint8Array>> {
  const wanted = [...new Set(digests)];
  const out = await readBlobs(db, wanted);
  for (const d of wanted) if (!out.has(d)) throw new Error(`blob ${d} referenced by the ledger is missing from the blob store`);
  return out;
}

/** The blob store as the ledger asks for it (its LEDGER_BLOBS port). */
export const ledgerBlobs: LedgerBlobs = { sizes: blobSizes, put: putBlob };
