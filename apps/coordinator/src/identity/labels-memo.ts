import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { NodeLabels } from '#contracts';
import type { Database } from '../db/index.js';
import { LabelBucketsState } from './label-buckets-state.js';
import { readAllNodeLabels } from './node-labels.repository.js';

/** Every node's recorded labels at one version of the table, and their bucket digests once asked for. */
class LabelsAt {
  private buckets: LabelBucketsState | null = null;

  constructor(
    readonly version: string,
    readonly labels: ReadonlyMap<string, NodeLabels>,
    /** The bucket digests of the version before, and the labels written since: the buckets to digest again. */
    private from: { readonly buckets: LabelBucketsState; readonly written: readonly (readonly [string, NodeLabels])[] } | null = null,
  ) {}

  bucketDigests(): readonly string[] {
    if (!this.buckets) {
      this.buckets = this.from ? this.from.buckets.advance(this.from.written) : LabelBucketsState.of(this.labels);
      this.from = null;
    }
    return this.buckets.digests;
  }

  /** The labels once these are written, at the version written with them. */
  afterWriting(version: string, written: readonly (readonly [string, NodeLabels])[]): LabelsAt {
    const labels = new Map(this.labels);
    for (const [node, l] of written) labels.set(node, l);
    // Only the bucket digests already worked out are carried forward; otherwise they are worked out in full when asked for.
    return new LabelsAt(version, labels, this.buckets ? { buckets: this.buckets, written } : null);
  }
}

/**
 * Every node's recorded labels as this process last read or wrote them, at the version of the table
 * they hold. A publish may send every node's labels (a retectl before label buckets, --full, a
 * changed bucket), and reading them all again each time would cost a large fleet's publish more than
 * the rest of it; labels rarely change, so under the ledger lock one row says whether this copy still
 * holds. A version is random, never a count: the copy cannot be taken for another database's. No row
 * yet: no labels were ever written.
 */
let memo: LabelsAt | null = null;
/**
 * What a writing transaction leaves, at the version it writes: taken as the copy once a read sees
 * that version, which only a committed transaction makes visible. One that rolls back leaves the
 * version before, and this is never taken. So a write of one node's labels in a fleet of 100,000
 * costs the next publish one copied map and one bucket digested, not every label read and digested.
 */
let written: LabelsAt | null = null;

/** The copy at this version, if this process holds it. */
function heldAt(version: string): LabelsAt | null {
  if (memo?.version === version) return memo;
  if (written?.version === version) {
    memo = written;
    written = null;
    return memo;
  }
  return null;
}

async function labelsAt(trx: Transaction<Database>): Promise<LabelsAt> {
  const row = await trx.selectFrom('node_labels_version').select('version').where('id', '=', 1).executeTakeFirst();
  const version = row?.version ?? '';
  const held = heldAt(version);
  if (held) return held;
  memo = new LabelsAt(version, await readAllNodeLabels(trx));
  return memo;
}

/** Every node's recorded labels as a writer reads them, and how it records its write of some of them. */
export interface RecordedLabels {
  readonly labels: ReadonlyMap<string, NodeLabels>;
  /**
   * Marks the labels changed, in the same transaction, once these are written (as stored:
   * writeNodeLabels' answer). The copy after the write is built from the labels read before it,
   * never read again here: a read in this transaction would see its own rows, not yet committed.
   */
  record(written: readonly (readonly [string, NodeLabels])[]): Promise<void>;
}

/** Every node's recorded labels; call under the ledger lock, which every writer of labels holds, before writing any. */
export async function recordedLabels(trx: Transaction<Database>): Promise<RecordedLabels> {
  const before = await labelsAt(trx);
  return {
    labels: before.labels,
    async record(labels) {
      const version = randomUUID();
      await trx
        .insertInto('node_labels_version')
        .values({ id: 1, version })
        .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ version: eb.ref('excluded.version') })))
        .execute();
      written = before.afterWriting(version, labels);
    },
  };
}

/**
 * The digest of each bucket of every node's recorded labels, read in one snapshot with the version of
 * the table: worked out again only when the labels changed, and then only for the buckets of the
 * nodes this process wrote (every bucket after a change written elsewhere), so a fleet's publishes
 * ask for it at the cost of one row. retectl compares them with its own and sends only the labels of
 * the buckets that differ, where it sent every node's labels with every publish.
 */
export async function recordedLabelBuckets(db: Kysely<Database>): Promise<readonly string[]> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => (await labelsAt(trx)).bucketDigests());
}
