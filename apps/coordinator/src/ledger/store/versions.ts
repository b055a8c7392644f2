import { sql, type Kysely } from 'kysely';
import type { Database, StoredArtifact } from '../../db/index.js';
import { nodeStream } from '#bundle';
import type { NodeSet } from '../domain/ledger.decider.js';

// A node's versions are its stamps in the ledger: its stream is `nodeStream(node)` and each stamp's
// revision its version, so the ledger's (stream, revision) key finds them. Nothing copies them into a
// table of their own (migration 0023).

/** One version of a node as the history lists it: its stamp, and its publish's message. */
export interface NodeVersionRow {
  version: number;
  set_digest: string;
  retired: boolean;
  publish_id: string;
  actor: string;
  message: string;
  recorded_at: Date;
  /** int8: a number from pg as the coordinator sets it up, a number or bigint from PGlite. */
  position: string | number | bigint;
}

/** The node's set at `version`; undefined when it has no such version. */
export async function loadVersion(db: Kysely<Database>, node: string, version: number): Promise<NodeSet | undefined> {
  const r = await db
    .selectFrom('ledger')
    .select(['revision', 'data'])
    .where('stream', '=', nodeStream(node))
    .where('revision', '=', version)
    .where('type', '=', 'node_set_stamped')
    .executeTakeFirst();
  if (!r) return undefined;
  const d = r.data as { set_digest: string; retired: boolean; artifacts: StoredArtifact[] };
  return { version: r.revision, setDigest: d.set_digest, retired: d.retired, artifacts: d.artifacts };
}

/** Each node's artifacts at the given version (none when that version retired it), in statements of 10,000; nodes without it are left out. */
export async function loadVersionArtifacts(
  db: Kysely<Database>,
  wanted: readonly { readonly node: string; readonly version: number }[],
): Promise<Map<string, StoredArtifact[]>> {
  const out = new Map<string, StoredArtifact[]>();
  for (let i = 0; i < wanted.length; i += 10_000) {
    const slice = wanted.slice(i, i + 10_000);
    const { rows } = await sql<{ node: string; artifacts: StoredArtifact[]; retired: boolean }>`
      SELECT l.data->>'node' AS node, l.data->'artifacts' AS artifacts, (l.data->>'retired')::boolean AS retired FROM ledger l
      JOIN unnest(${sql.val(slice.map((w) => nodeStream(w.node)))}::text[], ${sql.val(slice.map((w) => w.version))}::int[]) AS w(stream, version)
        ON l.stream = w.stream AND l.revision = w.version
      WHERE l.type = 'node_set_stamped'`.execute(db);
    for (const r of rows) out.set(r.node, r.retired ? [] : r.artifacts);
  }
  return out;
}

/** Up to `limit + 1` of the node's versions, newest first, below version `before` when given. */
export async function readVersionsPage(db: Kysely<Database>, node: string, before: number | null, limit: number): Promise<NodeVersionRow[]> {
  const { rows } = await sql<NodeVersionRow>`
    SELECT l.revision AS version, l.data->>'set_digest' AS set_digest, (l.data->>'retired')::boolean AS retired,
      l.data->>'publish_id' AS publish_id, l.meta->>'actor' AS actor, coalesce(p.message, '') AS message, l.recorded_at, l.position
    FROM ledger l LEFT JOIN publishes p ON p.publish_id = l.data->>'publish_id'
    WHERE l.stream = ${nodeStream(node)} AND l.type = 'node_set_stamped' ${before === null ? sql`` : sql`AND l.revision < ${before}`}
    ORDER BY l.revision DESC
    LIMIT ${limit + 1}`.execute(db);
  return rows;
}
