import { setImmediate as turn } from 'node:timers/promises';
import type { Transaction } from 'kysely';
import { canonicalJson } from '#bundle';
import { copyField, copyInto, type Database } from '../../db/index.js';
import { chainHashBytes, chainedTextOf } from '../domain/hash-chain.js';
import type { LedgerEvent } from '../domain/ledger.events.js';
import type { LedgerHead } from './read-head.js';
import type { StoredEvent } from './ledger-row.js';

/**
 * Rows per COPY. A chunk is sent while the next is hashed; the limit bounds the chunk's text in
 * memory.
 */
const CHUNK = 10_000;

/** Events hashed between two turns of the event loop. */
const TURN = 1_000;

/** The ledger's columns in the order of a COPY line's fields (`ledgerLine`). */
export const LEDGER_COLUMNS = ['position', 'stream', 'revision', 'type', 'data', 'meta', 'recorded_at', 'prev_hash', 'hash'];

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
  const { stored, written } = await sendEvents(trx, head, inputs, recordedAt);
  await written;
  return stored;
}

/**
 * `appendEvents` without waiting for the rows: resolves once every event is hashed and its rows sent,
 * with the stored events and `written`, which settles when PostgreSQL has written all the rows (or
 * with the first refusal). `afterRows` is called with each run of events right after its rows are
 * sent, so its statements follow them; `written` waits for it too, and a failure there is reported
 * before the rows after it. Statements the caller sends after it run after the rows on the
 * transaction's connection; should the rows be refused, they fail in the aborted transaction, and
 * `written` holds the cause.
 */
export async function sendEvents(
  trx: Transaction<Database>,
  head: LedgerHead,
  inputs: readonly AppendInput[],
  recordedAt: Date,
  afterRows?: (run: readonly StoredEvent[]) => Promise<unknown>,
): Promise<{ readonly stored: StoredEvent[]; readonly written: Promise<void> }> {
  const recorded_at = recordedAt.toISOString();
  const stored: StoredEvent[] = [];
  const sent: Promise<unknown>[] = [];
  const metaText = sharedText();
  let position = head.position;
  let prevHex = head.hash;
  let prev: Uint8Array = Buffer.from(head.hash, 'hex');
  try {
    for (let i = 0; i < inputs.length; i += CHUNK) {
      const count = Math.min(CHUNK, inputs.length - i);
      let lines = '';
      for (let j = 0; j < count; j++) {
        const { event, meta } = inputs[i + j];
        position += 1;
        const data = canonicalJson(event.data);
        const metaJson = metaText(meta);
        const hashBytes = chainHashBytes(
          prev,
          chainedTextOf(data, metaJson, { position, stream: event.stream, revision: event.revision, type: event.type, recorded_at }),
        );
        const hash = hashBytes.toString('hex');
        lines += ledgerLine(position, event, data, metaJson, recorded_at, prevHex, hash);
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
        // A COPY goes on only when the event loop answers PostgreSQL (its request for the rows, its
        // readiness for the next): a turn every TURN events keeps it from waiting for a whole chunk's hashing.
        if (j % TURN === TURN - 1) await turn();
      }
      sent.push(sendRows(trx, lines));
      if (afterRows) sent.push(quiet(afterRows(stored.slice(i, i + count))));
      // A turn of the event loop sends them: the next rows are hashed while PostgreSQL writes these.
      await turn();
    }
  } catch (err) {
    // An event that cannot be written (its data is not JSON): the runs already sent are waited for
    // before the error ends the transaction, so that none runs after it.
    await Promise.allSettled(sent);
    throw err;
  }
  return { stored, written: quiet(settledInOrder(sent)) };
}

/**
 * Settles when all have, then fails with the first failure in their order: a failure is the
 * statement's own, not the aborted transaction the ones after it met. Waiting for all matters as
 * much: the transaction ends when its callback does, so a statement sent after that would run
 * outside it, on a connection the pool may have given to another. None of them is unhandled
 * meanwhile.
 */
export async function settledInOrder(sent: readonly Promise<unknown>[]): Promise<void> {
  const settled = await Promise.allSettled(sent);
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * Starts copying rows in; its failure is the caller's to await (settledInOrder), and not unhandled
 * while the next rows are hashed.
 */
function sendRows(trx: Transaction<Database>, lines: string): Promise<unknown> {
  return quiet(trx.executeQuery(copyInto('ledger', LEDGER_COLUMNS, lines)));
}

/** The promise, its failure not unhandled until someone awaits it. */
function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
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
 * A ledger row as a line of COPY's text format: the canonical text of the event's data and meta, the
 * very texts its chain hash covers, which PostgreSQL parses into jsonb as it would the same text in a
 * statement, and its other columns as text. Three statements' ways of sending rows came before
 * (bench/README.md): nine parameters a row made PostgreSQL parse and plan every statement anew; an
 * array parameter per column cost as much in escaping its elements; one JSON document of the rows was
 * parsed whole before each row's fields were taken from it.
 */
export function ledgerLine(
  position: number,
  event: { readonly stream: string; readonly revision: number; readonly type: string },
  data: string,
  meta: string,
  recordedAt: string,
  prevHash: string,
  hash: string,
): string {
  return `${position}\t${copyField(event.stream)}\t${event.revision}\t${copyField(event.type)}\t${copyField(data)}\t${copyField(meta)}\t${recordedAt}\t${prevHash}\t${hash}\n`;
}
