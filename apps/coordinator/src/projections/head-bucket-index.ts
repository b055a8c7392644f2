import { setImmediate as turn } from 'node:timers/promises';
import { BucketMaps, bucketDigest, bucketOf } from '#bundle';
import { HEAD_BUCKETS } from '#contracts';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../db/index.js';
import { readLedgerHead } from '../ledger/index.js';

interface Member {
  readonly digest: string;
  readonly retired: boolean;
}

/** Every head by bucket, as of one ledger head. Never changed in place: a newer one replaces it. */
interface Snapshot {
  readonly position: number;
  readonly hash: string;
  /** node → its head's set digest and retired flag, retired heads included. */
  readonly members: BucketMaps<Member>;
  /** bucketDigest of each bucket's active heads. */
  readonly digests: readonly string[];
}

/** The heads by bucket at the ledger head a transaction sees. */
export interface BucketView {
  readonly position: number;
  readonly buckets: readonly string[];
  /** The nodes with a head (retired ones too) in these buckets. */
  nodesIn(buckets: readonly number[]): string[];
}

/**
 * The head buckets (GET /v1/heads/buckets) kept in memory and brought forward from the heads stamped
 * since: after a publish of one node, one bucket is digested again, not 10,000 heads read. A read
 * is always at the ledger head its transaction sees; the kept snapshot is used only when the event at
 * its position still has its hash there (a database restored to another history is read in full).
 *
 * Once read, the index follows this replica's own appends (`follow`, on each committed append): after
 * a publish of every node of a large fleet, bringing it forward reads every head and digests every
 * bucket, which is then done as the publish ends and not by the operator's next command (the figures
 * are in bench/README.md). Reads at the same ledger head share one bringing forward.
 */
export class HeadBucketIndex {
  private kept: Snapshot | null = null;
  /** Bringing forward under way, by the ledger head it brings the index to. */
  private readonly underWay = new Map<string, Promise<Snapshot>>();
  private following: Promise<void> | null = null;
  private followAgain = false;

  /** The ledger position the kept buckets are at; null before the first read. */
  get position(): number | null {
    return this.kept?.position ?? null;
  }

  /** The buckets at the ledger head now, in a repeatable-read transaction of their own (see at). */
  read(db: Kysely<Database>): Promise<BucketView> {
    return db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute((trx) => this.at(trx));
  }

  /** Call in a repeatable-read transaction, so the heads and the ledger head are one snapshot. */
  async at(trx: Transaction<Database>): Promise<BucketView> {
    const head = await readLedgerHead(trx);
    const snapshot = await this.sharedBringForward(trx, head);
    // Concurrent reads finish in any order: keep the newest.
    if (!this.kept || snapshot.position > this.kept.position || snapshot.hash !== this.kept.hash) this.kept = snapshot;
    return {
      position: snapshot.position,
      buckets: snapshot.digests,
      nodesIn: (buckets) => buckets.flatMap((b) => [...snapshot.members.buckets[b].keys()]),
    };
  }

  /**
   * Brings a kept index forward to the ledger head now, in a transaction of its own; nothing before the
   * first read (a replica no client asked for buckets holds none). Appends while it runs make one more
   * run after it, not one each. Resolves when the index is current as of the last call.
   */
  follow(db: Kysely<Database>): Promise<void> {
    if (!this.kept) return Promise.resolve();
    if (this.following) {
      this.followAgain = true;
      return this.following;
    }
    const run = async (): Promise<void> => {
      try {
        do {
          this.followAgain = false;
          await this.read(db);
        } while (this.followAgain);
      } finally {
        this.following = null;
      }
    };
    this.following = run();
    return this.following;
  }

  /** The snapshot at `head`: one bringing forward for every read at that head meanwhile. */
  private sharedBringForward(trx: Transaction<Database>, head: { position: number; hash: string }): Promise<Snapshot> {
    const key = `${head.position}:${head.hash}`;
    const running = this.underWay.get(key);
    if (running) return running;
    const made = this.bringForward(trx, head).finally(() => this.underWay.delete(key));
    this.underWay.set(key, made);
    return made;
  }

  private async bringForward(trx: Transaction<Database>, head: { position: number; hash: string }): Promise<Snapshot> {
    const kept = this.kept;
    if (kept && kept.position === head.position && kept.hash === head.hash) return kept;
    if (kept && kept.position < head.position) {
      const then = await trx.selectFrom('ledger').select('hash').where('position', '=', kept.position).executeTakeFirst();
      if (then?.hash === kept.hash) return advance(kept, await headsSince(trx, kept, head.position), head);
    }
    const rows = await trx.selectFrom('node_heads').select(['node', 'set_digest', 'retired']).execute();
    return advance({ position: 0, hash: '', members: BucketMaps.empty(), digests: [] }, rows, head, true);
  }
}

/**
 * The heads stamped after `kept`, in ledger order. A few events after it are read from the ledger by
 * position, its primary key, so a one-node publish to 100,000 nodes reads one event; node_heads has
 * no index on position, and finding its rows there means reading every head. Many events after it
 * (more than an eighth of the heads kept), every head is read instead, which is then the cheaper.
 */
async function headsSince(trx: Transaction<Database>, kept: Snapshot, position: number): Promise<{ node: string; set_digest: string; retired: boolean }[]> {
  const heads = kept.members.buckets.reduce((n, m) => n + m.size, 0);
  if ((position - kept.position) * 8 > heads) {
    return trx.selectFrom('node_heads').select(['node', 'set_digest', 'retired']).where('position', '>', kept.position).execute();
  }
  return trx
    .selectFrom('ledger')
    .select([sql<string>`data->>'node'`.as('node'), sql<string>`data->>'set_digest'`.as('set_digest'), sql<boolean>`(data->>'retired')::boolean`.as('retired')])
    .where('position', '>', kept.position)
    .where('position', '<=', position)
    .where('type', '=', 'node_set_stamped')
    .orderBy('position')
    .execute();
}

/** Rows or buckets worked on between two turns of the event loop, when many heads are brought in. */
const SLICE = 4096;
const BUCKET_SLICE = 16;

/**
 * A new snapshot with these heads: only the buckets they touch are copied and digested again. Many
 * heads (a publish of a whole large fleet: an md5 a node and every bucket's sha256) are worked in
 * slices with the event loop turning between them, so polls are answered meanwhile.
 */
async function advance(
  from: Snapshot,
  rows: readonly { node: string; set_digest: string; retired: boolean }[],
  head: { position: number; hash: string },
  all = false,
): Promise<Snapshot> {
  const sliced = rows.length > SLICE;
  const bucketOfRow = new Uint8Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    bucketOfRow[i] = bucketOf(rows[i].node);
    if (sliced && (i + 1) % SLICE === 0) await turn();
  }
  const { maps: members, touched } = from.members.edit((set) => {
    for (let i = 0; i < rows.length; i++) set(rows[i].node, { digest: rows[i].set_digest, retired: rows[i].retired }, bucketOfRow[i]);
  });
  const digests = all ? [] : [...from.digests];
  let digested = 0;
  for (let b = 0; b < HEAD_BUCKETS; b++) {
    if (!all && !touched.has(b)) continue;
    const active: [string, string][] = [];
    for (const [node, m] of members.buckets[b]) if (!m.retired) active.push([node, m.digest]);
    digests[b] = bucketDigest(active);
    if (sliced && ++digested % BUCKET_SLICE === 0) await turn();
  }
  return { position: head.position, hash: head.hash, members, digests };
}
