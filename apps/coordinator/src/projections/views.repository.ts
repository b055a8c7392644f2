import type { Kysely } from 'kysely';
import { anyOf, type Database } from '../db/index.js';

/* The reads behind the fleet overview and a publish's counts (ViewsController), over the read models. */

/** The nodes whose agent says the newest checkpoint it verified has gone stale (stale_since). */
export async function readStaleCheckpoints(db: Kysely<Database>): Promise<Set<string>> {
  const rows = await db.selectFrom('node_status').select('node').where('stale_since', 'is not', null).execute();
  return new Set(rows.map((r) => r.node));
}

/** What a publish's status needs of each node it changed, by node. */
export interface PublishNodeRead {
  readonly appliedVersion: number | null;
  readonly ineligible: boolean;
  readonly lastContact: Date | null;
  readonly outcomes: { version: number; result: 'applied' | 'failed' | 'rejected' | 'reverted'; error: string | null; activation: unknown; reportedAt: Date }[];
}

/**
 * Each node's applied version, contact and eligibility, and its outcomes from `minVersion` on: two
 * queries whatever the number of nodes, where the fleet listing's records take five per thousand.
 */
export async function readPublishNodes(db: Kysely<Database>, nodes: readonly string[], minVersion: number): Promise<Map<string, PublishNodeRead>> {
  const out = new Map<string, PublishNodeRead>();
  if (nodes.length === 0) return out;
  const [status, outcomes] = await Promise.all([
    db.selectFrom('node_status').select(['node', 'applied_version', 'ineligible', 'last_contact']).where(anyOf('node', nodes)).execute(),
    db
      .selectFrom('node_outcomes')
      .select(['node', 'version', 'result', 'error', 'activation', 'reported_at'])
      .where(anyOf('node', nodes))
      .where('version', '>=', minVersion)
      .execute(),
  ]);
  for (const node of nodes) out.set(node, { appliedVersion: null, ineligible: false, lastContact: null, outcomes: [] });
  for (const r of status)
    out.set(r.node, {
      appliedVersion: r.applied_version,
      ineligible: r.ineligible,
      lastContact: r.last_contact ? new Date(r.last_contact) : null,
      outcomes: [],
    });
  for (const r of outcomes)
    out.get(r.node)?.outcomes.push({
      version: r.version,
      result: r.result as PublishNodeRead['outcomes'][number]['result'],
      error: r.error,
      activation: r.activation,
      reportedAt: new Date(r.reported_at),
    });
  return out;
}
