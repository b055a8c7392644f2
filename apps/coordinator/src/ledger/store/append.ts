import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/index.js';
import { chainHashOf, chainedText } from '../domain/hash-chain.js';
import type { LedgerEvent } from '../domain/ledger.events.js';
import type { LedgerHead } from './read-head.js';
import type { StoredEvent } from './ledger-row.js';

/**
 * Rows per statement. They travel as one parameter (a JSON document), so a statement's text and plan
 * stay the same whatever its rows; the limit only bounds the parameter's size in memory.
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
    const rows: string[] = [];
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
      rows.push(ledgerRow(text, prev.hash, hash));
      // The event's own type and data, so its kind of stored event.
      stored.push({ ...fields, prev_hash: prev.hash, hash } as StoredEvent);
      prev = { position: fields.position, hash };
    }
    sent.push(sendRows(trx, rows));
    // A turn of the event loop sends them: the next rows are hashed while PostgreSQL writes these.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  // In order, so a failure is the statement's own, not the aborted transaction the next ones met.
  for (const insert of sent) await insert;
  return stored;
}

/** Starts inserting rows; its failure is the caller's to await, and not unhandled meanwhile. */
function sendRows(trx: Transaction<Database>, rows: readonly string[]): Promise<void> {
  const insert = insertRows(trx, rows);
  insert.catch(() => undefined);
  return insert;
}

/**
 * A ledger row as a JSON object: the very text its chain hash covers, with the two hashes added (hex,
 * so written as they are). The row stores what was hashed, and no event is serialised twice.
 */
function ledgerRow(text: string, prevHash: string, hash: string): string {
  return `{"prev_hash":"${prevHash}","hash":"${hash}",${text.slice(1)}`;
}

/**
 * Inserts rows in one statement with one parameter, a JSON array of them, which PostgreSQL reads
 * into columns. A thousand rows of nine parameters each made it parse and plan every statement
 * anew, and `pg` serialise each parameter; an array parameter per column costs as much in escaping
 * its elements (bench/README.md, bench:publish). Read as jsonb, the document is parsed once and each
 * event's data taken from it as it is; as json, each one's data was parsed a second time.
 */
async function insertRows(trx: Transaction<Database>, rows: readonly string[]): Promise<void> {
  await sql`INSERT INTO ledger (position, stream, revision, type, data, meta, recorded_at, prev_hash, hash)
    SELECT position, stream, revision, type, data, meta, recorded_at, prev_hash, hash
    FROM jsonb_to_recordset(${`[${rows.join(',')}]`}::jsonb)
      AS e(position bigint, stream text, revision integer, type text, data jsonb, meta jsonb, recorded_at timestamptz, prev_hash text, hash text)`.execute(trx);
}
