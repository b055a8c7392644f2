import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { labelBuckets } from '#bundle';
import type { NodeLabels } from '#contracts';
import type { Database } from '../db/index.js';
import { readAllNodeLabels } from './node-labels.repository.js';

/**
 * Every node's recorded labels as this process last read them, and the version of the table they
 * were read at. A publish may send every node's labels (a retectl before label buckets, --full, a
 * changed bucket), and reading them all again each time would cost a large fleet's publish more than
 * the rest of it; labels rarely change, so
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

/** The digest of each bucket of the recorded labels (labelBuckets), as of the version they were worked out at. */
let bucketsMemo: { readonly version: string; readonly buckets: readonly string[] } | null = null;

/**
 * The digest of each bucket of every node's recorded labels, read in one snapshot with the version of
 * the table: worked out again only when the labels changed, so a fleet's publishes ask for it at
 * the cost of one row. retectl compares them with its own and sends only the labels of the buckets
 * that differ, where it sent every node's labels with every publish.
 */
export async function recordedLabelBuckets(db: Kysely<Database>): Promise<readonly string[]> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const row = await trx.selectFrom('node_labels_version').select('version').where('id', '=', 1).executeTakeFirst();
      const version = row?.version ?? '';
      if (bucketsMemo?.version === version) return bucketsMemo.buckets;
      const labels = memo?.version === version ? memo.labels : await readAllNodeLabels(trx);
      const buckets = labelBuckets(labels);
      bucketsMemo = { version, buckets };
      return buckets;
    });
}
