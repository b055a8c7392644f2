import type { Kysely } from 'kysely';
import { anyOf, type Database } from '../db/index.js';
import { readLedgerHead } from '../ledger/index.js';
import type { HeadBucketIndex } from './head-bucket-index.js';

/* The reads behind the history queries (QueriesController), over the read models. */

/**
 * Up to `limit + 1` heads in name order past `cursor`, with the ledger position they were read at,
 * in one snapshot so a client can pin a publish to what it read. With `buckets`, only the heads of
 * nodes in those buckets, at the bucket index's position.
 */
export async function readHeadsPage(
  db: Kysely<Database>,
  index: HeadBucketIndex,
  q: { readonly limit: number; readonly cursor?: string; readonly buckets?: readonly number[]; readonly artifacts: boolean },
) {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      // Each head's artifacts are most of its row (a jsonb list read and parsed): left out when not asked for.
      let select = trx
        .selectFrom('node_heads')
        .select(['node', 'version', 'set_digest', 'retired'])
        .$if(q.artifacts, (s) => s.select('artifacts'))
        .orderBy('node')
        .limit(q.limit + 1);
      if (q.cursor !== undefined) select = select.where('node', '>', q.cursor);
      let position: number;
      if (q.buckets !== undefined) {
        const view = await index.at(trx);
        const nodes = view.nodesIn(q.buckets);
        if (nodes.length === 0) return { position: view.position, rows: [] };
        select = select.where(anyOf('node', nodes));
        position = view.position;
      } else {
        position = (await readLedgerHead(trx)).position;
      }
      return { position, rows: await select.execute() };
    });
}

/** What the node's agent last reported doing to its host resources; null when it never did. */
export async function readNodeResources(db: Kysely<Database>, node: string): Promise<unknown> {
  const row = await db.selectFrom('node_status').select('resources').where('node', '=', node).executeTakeFirst();
  return row?.resources ?? null;
}

/** Whether the node has a head: it was published at least once. */
export async function isPublished(db: Kysely<Database>, node: string): Promise<boolean> {
  const row = await db.selectFrom('node_heads').select('node').where('node', '=', node).executeTakeFirst();
  return row !== undefined;
}

/** The outcomes the node reported for the given versions. */
export async function readOutcomes(db: Kysely<Database>, node: string, versions: readonly number[]) {
  return db
    .selectFrom('node_outcomes')
    .select(['version', 'result', 'error', 'reported_at', 'activation'])
    .where('node', '=', node)
    .where('version', 'in', versions)
    .execute();
}

/** Up to `limit + 1` publishes, newest first, below ledger position `before` when given. */
export async function readPublishesPage(db: Kysely<Database>, before: number | null, limit: number) {
  let select = db.selectFrom('publishes').selectAll();
  if (before !== null) select = select.where('position', '<', before);
  return select
    .orderBy('position', 'desc')
    .limit(limit + 1)
    .execute();
}

export async function readPublish(db: Kysely<Database>, publishId: string) {
  return db.selectFrom('publishes').selectAll().where('publish_id', '=', publishId).executeTakeFirst();
}
