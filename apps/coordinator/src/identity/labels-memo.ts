import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { NodeLabels } from '#contracts';
import type { Database } from '../db/index.js';
import { readAllNodeLabels } from './node-labels.repository.js';

/**
 * Every node's recorded labels as this process last read them, and the version of the table they
 * were read at. retectl sends every node's labels with every publish, and reading them all again
 * each time would cost a large fleet's publish more than the rest of it; labels rarely change, so
 * under the ledger lock one row says whether this copy still holds. A version is random, never a
 * count: the copy cannot be taken for another database's. No row yet: no labels were ever written.
 */
let memo: { readonly version: string; readonly labels: ReadonlyMap<string, NodeLabels> } | null = null;

/** Every node's recorded labels; call under the ledger lock, which every writer of labels holds. */
export async function recordedLabels(trx: Transaction<Database>): Promise<ReadonlyMap<string, NodeLabels>> {
  const row = await trx.selectFrom('node_labels_version').select('version').where('id', '=', 1).executeTakeFirst();
  const version = row?.version ?? '';
  if (memo?.version === version) return memo.labels;
  const labels = await readAllNodeLabels(trx);
  memo = { version, labels };
  return labels;
}

/**
 * Marks the labels changed, in the writing transaction. The copy is dropped rather than updated: a
 * transaction that rolls back leaves the table at the version before, and the next read reads it.
 */
export async function labelsChanged(trx: Transaction<Database>): Promise<void> {
  memo = null;
  await trx
    .insertInto('node_labels_version')
    .values({ id: 1, version: randomUUID() })
    .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ version: eb.ref('excluded.version') })))
    .execute();
}
