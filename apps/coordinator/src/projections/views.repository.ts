import type { Kysely } from 'kysely';
import type { Database } from '../db/index.js';

/* The reads behind the fleet overview and a publish's counts (ViewsController), over the read models. */

/** The nodes whose agent says the newest checkpoint it verified has gone stale (stale_since). */
export async function readStaleCheckpoints(db: Kysely<Database>): Promise<Set<string>> {
  const rows = await db.selectFrom('node_status').select('node').where('stale_since', 'is not', null).execute();
  return new Set(rows.map((r) => r.node));
}
