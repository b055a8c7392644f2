import { type Kysely, sql } from 'kysely';
import { type Database, anyOf } from '../../db/index.js';
import type { NodeHead } from '../domain/ledger.decider.js';

/** Nodes per statement: a 10,000-node tree is one indexed read, 100,000 nodes ten. */
const CHUNK = 10_000;

/** The decider's state for the given nodes (or every node), read from the node_heads projection. */
export async function loadHeads(db: Kysely<Database>, nodes: readonly string[] | 'all'): Promise<Map<string, NodeHead>> {
  const heads = new Map<string, NodeHead>();
  const base = db.selectFrom('node_heads').select(['node', 'version', 'set_digest', 'retired', 'artifacts']);
  const batches = nodes === 'all' ? [null] : chunk(nodes);
  for (const batch of batches) {
    if (batch && batch.length === 0) continue;
    const rows = await (batch ? base.where(anyOf('node', batch)) : base).execute();
    for (const r of rows) heads.set(r.node, { version: r.version, setDigest: r.set_digest, retired: r.retired, artifacts: r.artifacts });
  }
  return heads;
}

/**
 * A small publish's view of its own nodes' heads: version, set digest and retired only; the tree's
 * few set digests are cheaper than reading artifact lists.
 */
export async function loadHeadDigests(db: Kysely<Database>, nodes: readonly string[] | 'all'): Promise<Map<string, NodeHead>> {
  const heads = new Map<string, NodeHead>();
  const base = db.selectFrom('node_heads').select(['node', 'version', 'set_digest', 'retired']);
  for (const batch of nodes === 'all' ? [null] : chunk(nodes)) {
    if (batch && batch.length === 0) continue;
    const rows = await (batch ? base.where(anyOf('node', batch)) : base).execute();
    for (const r of rows) heads.set(r.node, { version: r.version, setDigest: r.set_digest, retired: r.retired });
  }
  return heads;
}

/**
 * The heads still at a publish's versions: its record's `changed` list names every node it stamped
 * (the decider makes the list from the stamps), each looked up by its key. node_heads has no index on
 * `publish_id`, so that a publish moving a head changes no index (migration 0022).
 */
export async function headsAtPublish(db: Kysely<Database>, publishId: string): Promise<{ node: string; kid: string; retired: boolean }[]> {
  const { rows } = await sql<{ node: string; kid: string; retired: boolean }>`SELECT h.node, h.kid, h.retired
    FROM publishes p CROSS JOIN LATERAL jsonb_array_elements(p.changed) AS c(entry)
    JOIN node_heads h ON h.node = c.entry->>'node'
    WHERE p.publish_id = ${publishId} AND h.publish_id = ${publishId}`.execute(db);
  return rows;
}

function chunk<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}
