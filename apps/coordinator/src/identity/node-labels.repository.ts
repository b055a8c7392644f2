import type { Kysely, Transaction } from 'kysely';
import type { NodeLabels } from '#contracts';
import type { Database } from '../db/index.js';

/** Nodes per statement: well under PostgreSQL's limit on parameters. */
const SLICE = 5000;

function slices<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += SLICE) out.push(items.slice(i, i + SLICE));
  return out;
}

/** The labels recorded for these nodes; a node with none recorded is absent from the map. */
export async function readNodeLabels(db: Kysely<Database> | Transaction<Database>, nodes: Iterable<string>): Promise<Map<string, NodeLabels>> {
  const found = new Map<string, NodeLabels>();
  for (const slice of slices([...new Set(nodes)])) {
    const rows = await db.selectFrom('node_labels').select(['node', 'tags', 'groups']).where('node', 'in', slice).execute();
    for (const r of rows) found.set(r.node, { tags: r.tags, groups: r.groups });
  }
  return found;
}

/** Every node's recorded labels: what a scoped reader's node list is filtered by. */
export async function readAllNodeLabels(db: Kysely<Database> | Transaction<Database>): Promise<Map<string, NodeLabels>> {
  const rows = await db.selectFrom('node_labels').select(['node', 'tags', 'groups']).execute();
  return new Map(rows.map((r) => [r.node, { tags: r.tags, groups: r.groups }]));
}

/** Which of these nodes the ledger has a head for. */
export async function knownNodes(trx: Transaction<Database>, nodes: Iterable<string>): Promise<Set<string>> {
  const known = new Set<string>();
  for (const slice of slices([...new Set(nodes)])) {
    for (const r of await trx.selectFrom('node_heads').select('node').where('node', 'in', slice).execute()) known.add(r.node);
  }
  return known;
}

/** Labels as stored: each list de-duplicated and sorted. */
function stored(l: NodeLabels): NodeLabels {
  return { tags: [...new Set(l.tags)].sort(), groups: [...new Set(l.groups)].sort() };
}

/** Records these nodes' labels as their latest, replacing what was recorded; gives them as stored, as a read would give them back. */
export async function writeNodeLabels(
  trx: Transaction<Database>,
  labels: readonly (readonly [string, NodeLabels])[],
  now: Date,
): Promise<(readonly [string, NodeLabels])[]> {
  const rows = labels.map(([node, l]) => [node, stored(l)] as const);
  for (const slice of slices(rows)) {
    await trx
      .insertInto('node_labels')
      .values(slice.map(([node, l]) => ({ node, tags: JSON.stringify(l.tags), groups: JSON.stringify(l.groups), updated_at: now })))
      .onConflict((oc) =>
        oc
          .column('node')
          .doUpdateSet((eb) => ({ tags: eb.ref('excluded.tags'), groups: eb.ref('excluded.groups'), updated_at: eb.ref('excluded.updated_at') })),
      )
      .execute();
  }
  return rows;
}
