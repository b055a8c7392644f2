import type { Transaction } from 'kysely';
import type { Database } from '../../db/index.js';
import type { LedgerEvent } from '../domain/ledger.events.js';
import type { CheckpointSigner, TrustHead } from '../ledger-ports.js';
import { sendEvents, settledInOrder, type AppendInput } from './append.js';
import type { StoredEvent } from './ledger-row.js';
import { lockLedger } from './lock.js';
import { readTreeGrowth, treeGrower } from './tree.js';
import { nextRecordedAt, readLedgerHead, type LedgerHead } from './read-head.js';

/** What a writer decides its events from: the ledger head and signing trust read under the lock. */
export interface AppendContext {
  readonly head: LedgerHead;
  readonly trust: TrustHead;
}

/** What a writer decided: its events (none: nothing is appended) and what it answers. */
export interface Decided<T> {
  readonly inputs: readonly AppendInput[];
  readonly result: T;
  /** A key change's new trust: the checkpoint of the head it appends is signed under it. */
  readonly trustAfter?: TrustHead;
  /** When the events are recorded, if the decision already fixed it (a trust version carries the time). */
  readonly recordedAt?: Date;
}

/**
 * How the read models follow an append (LedgerProjection, bound to the transaction). The stamps of each
 * run of events are projected as soon as the run's rows are sent, everything else once all are.
 */
export interface AppendProjection {
  stamps(run: readonly StoredEvent[], decided: readonly LedgerEvent[]): Promise<void>;
  rest(stored: readonly StoredEvent[]): Promise<void>;
}

const NO_PROJECTION: AppendProjection = { stamps: async () => {}, rest: async () => {} };

/**
 * The one path events take into the ledger, inside the caller's transaction: take the lock, read
 * the signing trust under it (a key rotation is wholly before this append or after it) and the
 * head, let the caller decide its events from them, append them chained to the head and grow the
 * Merkle tree over them, hand them to
 * `project` (the read models move in the same transaction), and sign one checkpoint of the new
 * head. Nothing decided, nothing appended and no checkpoint. A thrown error anywhere rolls all of
 * it back with the caller's transaction.
 */
export async function appendUnderLock<T>(
  trx: Transaction<Database>,
  signer: CheckpointSigner,
  decide: (at: AppendContext) => Promise<Decided<T>>,
  project: AppendProjection = NO_PROJECTION,
): Promise<{ readonly stored: readonly StoredEvent[]; readonly result: T }> {
  await lockLedger(trx);
  const trust = await signer.trustUnderLock(trx);
  const head = await readLedgerHead(trx);
  const { inputs, result, trustAfter, recordedAt } = await decide({ head, trust });
  if (inputs.length === 0) return { stored: [], result };
  const at = recordedAt ?? (await nextRecordedAt(trx));
  // The Merkle tree grows with the chain, in the same transaction: a rolled-back append leaves neither.
  // What it reads is read first; then each run of events' tree hashes, and its stamps' heads and
  // versions, are sent right after the run's rows, so PostgreSQL writes them while the next run is
  // hashed. The rest of the read models follow.
  const growth = await readTreeGrowth(trx, head.position, inputs.length);
  const tree = treeGrower(trx, growth);
  const decided = inputs.map((i) => i.event);
  const { stored, written } = await sendEvents(trx, head, inputs, at, (run) =>
    settledInOrder([tree.run(run.map((e) => e.hash)), project.stamps(run, decided)]),
  );
  await settledInOrder([written, project.rest(stored)]);
  tree.done();
  await signer.stampCheckpoint(trx, trustAfter ?? trust, recordedAt);
  return { stored, result };
}
