import type { Kysely } from 'kysely';
import { anyOf, type Database } from '../db/index.js';

/* The reads behind the fleet overview and a publish's counts (ViewsController), over the read models. */

/** When each of these nodes reported a result for a version at or above `minVersion`: node → version → time. */
export async function readOutcomeTimes(db: Kysely<Database>, nodes: readonly string[], minVersion: number): Promise<Map<string, Map<number, Date>>> {
  const out = new Map<string, Map<number, Date>>();
  for (let i = 0; i < nodes.length; i += 5000) {
    const rows = await db
      .selectFrom('node_outcomes')
      .select(['node', 'version', 'reported_at'])
      .where(anyOf('node', nodes.slice(i, i + 5000)))
      .where('version', '>=', minVersion)
      .execute();
    for (const r of rows) {
      const m = out.get(r.node) ?? new Map<number, Date>();
      m.set(r.version, new Date(r.reported_at));
      out.set(r.node, m);
    }
  }
  return out;
}

/** The nodes whose agent says the newest checkpoint it verified has gone stale (stale_since). */
export async function readStaleCheckpoints(db: Kysely<Database>): Promise<Set<string>> {
  const rows = await db.selectFrom('node_status').select('node').where('stale_since', 'is not', null).execute();
  return new Set(rows.map((r) => r.node));
}
