import { sql, type Transaction } from 'kysely';
import { HASH_SIZE, canonicalJson } from '#bundle';
import type { Database } from '../../db/index.js';
import { chainHashOf, chainedText } from '../domain/hash-chain.js';
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
  let prev = head;
  for (let i = 0; i < inputs.length; i += CHUNK) {
    const first = prev;
    const rows: string[] = [];
    const hashes: Buffer[] = [Buffer.from(first.hash, 'hex')];
    for (const { event, meta } of inputs.slice(i, i + CHUNK)) {
      const fields = {
        position: prev.position + 1,
        stream: event.stream,
        revision: event.revision,
        type: event.type,
        data: event.data as Record<string, unknown>,
        meta,
        recorded_at,
      };
      const text = chainedText(fields);
      const hash = chainHashOf(prev.hash, text);
      rows.push(ledgerRow(text, fields));
      hashes.push(Buffer.from(hash, 'hex'));
      // The event's own type and data, so its kind of stored event.
      stored.push({ ...fields, prev_hash: prev.hash, hash } as StoredEvent);
      prev = { position: fields.position, hash };
    }
    sent.push(sendRows(trx, first.position, recorded_at, rows, Buffer.concat(hashes)));
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

/** How the chained text of every event begins: its data is the first key. */
const DATA_KEY = '{"data":';

/**
 * A ledger row as PostgreSQL is sent it: what differs from row to row, cut from the very text its
 * chain hash covers, so no event is serialised twice. The chained text is canonical JSON with its keys
 * in order (`data`, `meta`, `position`, `recorded_at`, `revision`, `stream`, `type`): the event's data
 * is the text between the first key and the rest, which is rebuilt here from its small fields and must
 * match. The position, the time and the hashes, the same or one apart on every row, go beside it.
 */
function ledgerRow(text: string, fields: { position: number; stream: string; revision: number; type: string; meta: unknown; recorded_at: string }): string {
  const meta = canonicalJson(fields.meta);
  const rest =
    `,"meta":${meta},"position":${fields.position},"recorded_at":${JSON.stringify(fields.recorded_at)}` +
    `,"revision":${fields.revision},"stream":${JSON.stringify(fields.stream)},"type":${JSON.stringify(fields.type)}}`;
  if (!text.startsWith(DATA_KEY) || !text.endsWith(rest)) throw new Error(`ledger event ${fields.position} is not chained as the append path reads it`);
  return `{"d":${text.slice(DATA_KEY.length, text.length - rest.length)},"m":${meta},"r":${fields.revision},"s":${JSON.stringify(fields.stream)},"t":${JSON.stringify(fields.type)}}`;
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
