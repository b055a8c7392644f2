import { sql, type Transaction } from 'kysely';
import { HASH_SIZE, canonicalJson } from '#bundle';
import type { Database } from '../../db/index.js';
import { chainHashBytes, chainedTextOf } from '../domain/hash-chain.js';
import type { LedgerEvent } from '../domain/ledger.events.js';
import type { LedgerHead } from './read-head.js';
import type { StoredEvent } from './ledger-row.js';

/**
 * Rows per statement. They travel as two parameters (a JSON document and their hashes as bytes), so a
 * statement's text and plan stay the same whatever its rows; the limit only bounds the parameters'
 * size in memory.
 */
const CHUNK = 10_000;

export interface AppendInput {
  readonly event: LedgerEvent;
  readonly meta: Record<string, unknown>;
}

/**
 * Appends events after `head`, chaining each hash to the previous one. Takes a transaction that
 * already holds the ledger lock: positions are computed here, not by a sequence, so that a
 * rolled-back publish leaves no gap, and two appends never share one. The Merkle tree over the
 * events (tree.ts) is extended by the append path, not here.
 */
export async function appendEvents(trx: Transaction<Database>, head: LedgerHead, inputs: readonly AppendInput[], recordedAt: Date): Promise<StoredEvent[]> {
  const recorded_at = recordedAt.toISOString();
  const stored: StoredEvent[] = [];
  const sent: Promise<void>[] = [];
  const metaText = sharedText();
  let position = head.position;
  let prevHex = head.hash;
  let prev: Uint8Array = Buffer.from(head.hash, 'hex');
  for (let i = 0; i < inputs.length; i += CHUNK) {
    const before = position;
    const count = Math.min(CHUNK, inputs.length - i);
    const rows: string[] = [];
    // The hash before the chunk, then each row's.
    const hashes = Buffer.allocUnsafe((count + 1) * HASH_SIZE);
    hashes.set(prev, 0);
    for (let j = 0; j < count; j++) {
      const { event, meta } = inputs[i + j];
      position += 1;
      const data = canonicalJson(event.data);
      const metaJson = metaText(meta);
      const hashBytes = chainHashBytes(
        prev,
        chainedTextOf(data, metaJson, { position, stream: event.stream, revision: event.revision, type: event.type, recorded_at }),
      );
      hashes.set(hashBytes, (j + 1) * HASH_SIZE);
      rows.push(ledgerRow(data, metaJson, event));
      const hash = hashBytes.toString('hex');
      // The event's own type and data, so its kind of stored event.
      stored.push({
        position,
        stream: event.stream,
        revision: event.revision,
        type: event.type,
        data: event.data,
        meta,
        recorded_at,
        prev_hash: prevHex,
        hash,
      } as StoredEvent);
      prev = hashBytes;
      prevHex = hash;
    }
    sent.push(sendRows(trx, before, recorded_at, rows, hashes));
    // A turn of the event loop sends them: the next rows are hashed while PostgreSQL writes these.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  // In order, so a failure is the statement's own, not the aborted transaction the next ones met.
  for (const insert of sent) await insert;
  return stored;
}

/** Starts inserting rows; its failure is the caller's to await, and not unhandled meanwhile. */
function sendRows(trx: Transaction<Database>, before: number, recordedAt: string, rows: readonly string[], hashes: Buffer): Promise<void> {
  const insert = insertRows(trx, before, recordedAt, rows, hashes);
  insert.catch(() => undefined);
  return insert;
}

/**
 * The canonical text of each event's meta, written once for a run of events that share one meta
 * object (a publish's stamps do): the last one's text is kept.
 */
function sharedText(): (meta: Record<string, unknown>) => string {
  let last: Record<string, unknown> | null = null;
  let text = '';
  return (meta) => {
    if (meta !== last) {
      text = canonicalJson(meta);
      last = meta;
    }
    return text;
  };
}

/**
 * A ledger row as PostgreSQL is sent it: the canonical text of the event's data and meta, the very
 * texts its chain hash covers, and its small fields. The position, the time and the hashes, the same
 * or one apart on every row, go beside it.
 */
function ledgerRow(data: string, meta: string, event: { readonly stream: string; readonly revision: number; readonly type: string }): string {
  return `{"d":${data},"m":${meta},"r":${event.revision},"s":${JSON.stringify(event.stream)},"t":${JSON.stringify(event.type)}}`;
}

/**
 * Inserts rows in one statement: the rows as one JSON array, which PostgreSQL reads into columns, and
 * their hashes as one bytea parameter (the hash before the first row, then each row's), HASH_SIZE
 * bytes each, bound once as a one-row FROM item and cut by offset for both a row's hash and the one
 * before it. A thousand rows of nine parameters each made it parse and plan every
 * statement anew, and `pg` serialise each parameter; an array parameter per column costs as much in
 * escaping its elements (bench/README.md, bench:publish). Parsing the document into jsonb is most of
 * PostgreSQL's work for the rows, so it holds only what differs from row to row: a row's position is
 * the one before the statement's plus its place, its previous hash the hash before it. Read as jsonb,
 * each event's data is taken from the document as it is; as json, each one's data was parsed a second
 * time.
 */
async function insertRows(trx: Transaction<Database>, before: number, recordedAt: string, rows: readonly string[], hashes: Buffer): Promise<void> {
  if (hashes.length !== (rows.length + 1) * HASH_SIZE) throw new Error(`ledger rows and their hashes differ in number`);
  await sql`INSERT INTO ledger (position, stream, revision, type, data, meta, recorded_at, prev_hash, hash)
    SELECT ${before}::bigint + e.n, e.s, e.r, e.t, e.d, e.m, ${recordedAt}::timestamptz,
      encode(substring(k.h FROM (e.n::integer - 1) * ${HASH_SIZE} + 1 FOR ${HASH_SIZE}), 'hex'),
      encode(substring(k.h FROM e.n::integer * ${HASH_SIZE} + 1 FOR ${HASH_SIZE}), 'hex')
    FROM (SELECT ${hashes}::bytea AS h) AS k, ROWS FROM (jsonb_to_recordset(${`[${rows.join(',')}]`}::jsonb) AS (d jsonb, m jsonb, r integer, s text, t text)) WITH ORDINALITY AS e(d, m, r, s, t, n)`.execute(
    trx,
  );
}
