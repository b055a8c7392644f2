import { sql, type Kysely, type RawBuilder } from 'kysely';
import { SHA256_PATTERN } from '#contracts';
import type { Database } from '../db/index.js';
import type { LedgerBlobs } from '../ledger/index.js';

/**
 * The sizes of the blobs stored among `digests`, in one statement whatever their number. In slices of
 * 10,000, PostgreSQL read each slice of a large tree against a large store as a scan of the whole
 * table, so the cost grew with the number of digests times the size of the store (bench/README.md,
 * bench:publish). One statement is one scan, or, for a few digests, a read of each by its key: the
 * planner sees how many there are (storedAmong).
 */
export async function blobSizes(db: Kysely<Database>, digests: readonly string[]): Promise<Map<string, number>> {
  return sizesOf(db, [...new Set(digests)]);
}

/**
 * The digests among `digests` the store lacks, sorted. PostgreSQL answers with the missing ones only
 * (an anti-join, which can read the key's index alone): asked for 100,000 digests that are all stored,
 * it sends no rows back instead of 100,000 for this process to parse and look up (bench/README.md,
 * bench:publish). A string that is not a sha256 in lower-case hex is never stored, so it is missing.
 */
export async function missingBlobs(db: Kysely<Database>, digests: readonly string[]): Promise<string[]> {
  const unique = [...new Set(digests)];
  const missing = unique.filter((d) => !SHA256_PATTERN.test(d));
  if (missing.length < unique.length) {
    const keys = missing.length === 0 ? unique : unique.filter((d) => SHA256_PATTERN.test(d));
    const { rows } = await sql<{ sha256: string }>`SELECT w.sha256 FROM unnest(string_to_array(${keys.join(',')}, ',')) AS w(sha256)
      WHERE NOT EXISTS (SELECT FROM blobs b WHERE b.sha256 = w.sha256)`.execute(db);
    for (const r of rows) missing.push(r.sha256);
  }
  return missing.sort();
}

async function sizesOf(db: Kysely<Database>, unique: readonly string[]): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  for (const r of await storedAmong<{ sha256: string; size: number }>(db, unique, sql`b.size`)) sizes.set(r.sha256, r.size);
  return sizes;
}

/**
 * The rows of the blobs stored among `unique` (distinct digests), with `column`: the digests joined to
 * the table, sent as one text of comma-separated digests. A join lets PostgreSQL hash the digests
 * against one scan of the store, or read each by its key when there are few; `sha256 = any(array)`
 * over many digests was a parallel scan testing every row against the array, and an array parameter
 * has `pg` escape each element (bench/README.md, bench:publish). A string that is not a lower-case
 * sha256 in hex is never a stored blob's key (the store computes them), so it is not asked for.
 */
async function storedAmong<R>(db: Kysely<Database>, unique: readonly string[], column: RawBuilder<unknown>): Promise<R[]> {
  const keys = unique.filter((d) => SHA256_PATTERN.test(d));
  if (keys.length === 0) return [];
  const { rows } =
    await sql<R>`SELECT b.sha256, ${column} FROM unnest(string_to_array(${keys.join(',')}, ',')) AS w(sha256) JOIN blobs b ON b.sha256 = w.sha256`.execute(db);
  return rows;
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
 * One statement whose text and plan stay the same whatever its rows: the contents as one bytea
 * parameter (`pg` sends a Buffer as bytes), the digests, sizes and offsets as comma-separated text.
 * A bytea array parameter had `pg` write every blob as hex inside an array literal, twice its size,
 * for PostgreSQL to parse back (bench/README.md, bench:publish).
 */
async function insertBlobs(db: Kysely<Database>, blobs: readonly { sha256: string; content: Uint8Array }[]): Promise<number> {
  const offsets: number[] = [];
  let at = 0;
  for (const b of blobs) {
    if (!SHA256_PATTERN.test(b.sha256)) throw new Error(`a blob is keyed ${JSON.stringify(b.sha256.slice(0, 80))}, not by a sha256 in lower-case hex`);
    offsets.push(at);
    at += b.content.byteLength;
  }
  const contents = Buffer.concat(blobs.map((b) => b.content));
  const result = await sql`INSERT INTO blobs (sha256, size, content)
    SELECT k.sha256, k.size, substring(${contents}::bytea FROM k.at + 1 FOR k.size)
    FROM unnest(
      string_to_array(${blobs.map((b) => b.sha256).join(',')}, ','),
      string_to_array(${blobs.map((b) => b.content.byteLength).join(',')}, ',')::integer[],
      string_to_array(${offsets.join(',')}, ',')::integer[]
    ) AS k(sha256, size, at)
    ON CONFLICT (sha256) DO NOTHING`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/** Blobs' contents, in one statement: in slices, each slice could be a scan of the whole store (blobSizes). */
export async function readBlobs(db: Kysely<Database>, digests: Iterable<string>): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  for (const r of await storedAmong<{ sha256: string; content: Uint8Array }>(db, [...new Set(digests)], sql`b.content`)) out.set(r.sha256, r.content);
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
