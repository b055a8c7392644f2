import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/index.js';
import type { NodeFacts, Outcome } from './fleet-state.js';

const CHUNK = 1000;
// Only an ineligible node's briefing is ever shown (its failed lines): a fleet listing need not carry every node's.
const briefingIfIneligible = sql<unknown>`case when ineligible then briefing end`.as('briefing');

export interface NodeRecord extends NodeFacts {
  readonly node: string;
  readonly headRow: { set_digest: string; updated_at: Date | string; publish_id: string } | null;
  readonly status: {
    last_contact: Date | string | null;
    last_result: string | null;
    last_error: string | null;
    agent_version: string | null;
    ineligible: boolean;
    /** The last enrolment briefing as stored: its failed lines say why the node is ineligible. */
    briefing: unknown;
  } | null;
}

/**
 * Everything the coordinator knows about the given nodes (or all it has ever heard of: published,
 * issued a token, or enrolled), in a handful of reads regardless of fleet size.
 */
export async function loadNodeRecords(
  db: Kysely<Database>,
  nodes: readonly string[] | 'all',
  now: Date,
  minOutcomeVersion = 0,
): Promise<Map<string, NodeRecord>> {
  const batches = nodes === 'all' ? [null] : chunks(nodes);
  const heads = new Map<string, { version: number; retired: boolean; set_digest: string; updated_at: Date | string; publish_id: string }>();
  const statuses = new Map<
    string,
    {
      applied_version: number | null;
      last_contact: Date | string | null;
      last_result: string | null;
      last_error: string | null;
      agent_version: string | null;
      ineligible: boolean;
      briefing: unknown;
    }
  >();
  const creds = new Map<string, { live: number; revoked: number }>();
  const pending = new Set<string>();
  const outcomes = new Map<string, Outcome[]>();
  for (const batch of batches) {
    if (batch && batch.length === 0) continue;
    const only = batch !== null;
    const inBatch = batch ?? [];
    const headRows = await db
      .selectFrom('node_heads')
      .select(['node', 'version', 'retired', 'set_digest', 'updated_at', 'publish_id'])
      .$if(only, (q) => q.where('node', 'in', inBatch))
      .execute();
    for (const r of headRows) heads.set(r.node, r);
    const statusRows = await db
      .selectFrom('node_status')
      .select(['node', 'applied_version', 'last_contact', 'last_result', 'last_error', 'agent_version', 'ineligible', briefingIfIneligible])
      .$if(only, (q) => q.where('node', 'in', inBatch))
      .execute();
    for (const r of statusRows) statuses.set(r.node, r);
    for (const r of await db
      .selectFrom('node_credentials')
      .select(['node', 'revoked_at'])
      .$if(only, (q) => q.where('node', 'in', inBatch))
      .execute()) {
      const c = creds.get(r.node) ?? { live: 0, revoked: 0 };
      if (r.revoked_at) c.revoked++;
      else c.live++;
      creds.set(r.node, c);
    }
    const tokens = await db
      .selectFrom('enrolment_tokens')
      .select('node')
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .$if(only, (q) => q.where('node', 'in', inBatch))
      .execute();
    for (const r of tokens) pending.add(r.node);
    const outs = await db
      .selectFrom('node_outcomes')
      .select(['node', 'version', 'result', 'error', 'activation'])
      .where('version', '>=', minOutcomeVersion)
      .$if(only, (q) => q.where('node', 'in', inBatch))
      .execute();
    for (const r of outs) {
      const list = outcomes.get(r.node) ?? [];
      list.push({ version: r.version, result: r.result as Outcome['result'], error: r.error, activation: r.activation });
      outcomes.set(r.node, list);
    }
  }
  const names = nodes === 'all' ? new Set([...heads.keys(), ...statuses.keys(), ...creds.keys(), ...pending]) : new Set(nodes);
  const out = new Map<string, NodeRecord>();
  for (const node of [...names].sort()) {
    const h = heads.get(node);
    const s = statuses.get(node);
    const c = creds.get(node);
    out.set(node, {
      node,
      head: h ? { version: h.version, retired: h.retired } : null,
      headRow: h ? { set_digest: h.set_digest, updated_at: h.updated_at, publish_id: h.publish_id } : null,
      liveCredentials: c?.live ?? 0,
      revokedCredentials: c?.revoked ?? 0,
      pendingToken: pending.has(node),
      appliedVersion: s?.applied_version ?? null,
      outcomes: outcomes.get(node) ?? [],
      status: s
        ? {
            last_contact: s.last_contact,
            last_result: s.last_result,
            last_error: s.last_error,
            agent_version: s.agent_version,
            ineligible: s.ineligible,
            briefing: s.briefing,
          }
        : null,
    });
  }
  return out;
}

/**
 * The next `limit` node names after `after` in name order, of every node the listing knows (a head,
 * a status, a credential or a live enrolment token), optionally only those containing `contains`.
 */
export async function nodeNamesAfter(db: Kysely<Database>, after: string | null, limit: number, contains: string | null, now: Date): Promise<string[]> {
  const like = contains === null ? null : `%${contains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const names = (table: 'node_heads' | 'node_status' | 'node_credentials') =>
    db
      .selectFrom(table)
      .select('node')
      .$if(after !== null, (q) => q.where('node', '>', after!))
      .$if(like !== null, (q) => q.where('node', 'like', like!));
  const tokens = db
    .selectFrom('enrolment_tokens')
    .select('node')
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .$if(after !== null, (q) => q.where('node', '>', after!))
    .$if(like !== null, (q) => q.where('node', 'like', like!));
  const rows = await names('node_heads').union(names('node_status')).union(names('node_credentials')).union(tokens).orderBy('node').limit(limit).execute();
  return rows.map((r) => r.node);
}

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}
