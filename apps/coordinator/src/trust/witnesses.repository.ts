import type { Kysely } from 'kysely';
import { nodeWitnessName, parseCheckpoint, parseTreeCheckpoint, TREE_ORIGIN_SUFFIX, verifyCosignature } from '#bundle';
import type { CheckpointView, Witness } from '#contracts';
import type { Database } from '../db/index.js';
import { GENESIS_HASH } from '../ledger/index.js';

/** The checkpoint the coordinator serves now, or null before its first start signed one. */
export async function readServedCheckpoint(db: Kysely<Database>): Promise<CheckpointView | null> {
  const row = await db.selectFrom('ledger_checkpoint').select('note').where('id', '=', 1).executeTakeFirst();
  if (!row) return null;
  const { checkpoint: c } = parseCheckpoint(row.note);
  return { note: row.note, origin: c.origin, position: c.position, hash: c.hash, time: c.time, trust_version: c.trustVersion };
}

/** The ledger's hash at each position asked for; a position past the head is absent. Position 0 is the empty ledger. */
export async function ledgerHashesAt(db: Kysely<Database>, positions: readonly number[]): Promise<Map<number, string>> {
  const wanted = [...new Set(positions.filter((p) => p > 0))];
  const hashes = new Map<number, string>(positions.includes(0) ? [[0, GENESIS_HASH]] : []);
  if (wanted.length === 0) return hashes;
  const rows = await db.selectFrom('ledger').select(['position', 'hash']).where('position', 'in', wanted).execute();
  for (const r of rows) hashes.set(Number(r.position), r.hash);
  return hashes;
}

/**
 * One page of the nodes that reported a checkpoint, by name, each with the ledger's hash today at
 * its position. A note that does not parse is listed with its problem: a node reported it, and an
 * auditor should see it, not lose it.
 */
export async function readWitnesses(db: Kysely<Database>, after: string | undefined, limit: number): Promise<{ items: Witness[]; nextAfter: string | null }> {
  let q = db
    .selectFrom('node_status')
    .leftJoin('node_witness_keys', 'node_witness_keys.node', 'node_status.node')
    .select([
      'node_status.node',
      'node_status.checkpoint',
      'node_status.last_contact',
      'node_status.stale_since',
      'node_status.cosigned_checkpoint',
      'node_status.cosignature',
      'node_witness_keys.public_key',
      'node_witness_keys.position as key_position',
    ])
    .where((eb) => eb.or([eb('node_status.checkpoint', 'is not', null), eb('node_status.cosigned_checkpoint', 'is not', null)]));
  if (after !== undefined) q = q.where('node_status.node', '>', after);
  const rows = await q.orderBy('node_status.node').limit(limit).execute();
  const read = rows.map((r) => {
    const note = r.checkpoint ?? '';
    const witness_key = r.public_key === null ? null : { public_key: r.public_key, position: r.key_position === null ? null : Number(r.key_position) };
    const base = { node: r.node, note, reported_at: iso(r.last_contact), stale_since: iso(r.stale_since), witness_key, cosigned: cosignedBy(r.node, r) };
    try {
      const { checkpoint: c } = parseCheckpoint(note);
      return { ...base, origin: c.origin, position: c.position, hash: c.hash, time: c.time };
    } catch (err) {
      return { ...base, origin: null, position: null, hash: null, time: null, problem: (err as Error).message };
    }
  });
  const hashes = await ledgerHashesAt(
    db,
    read.flatMap((w) => (w.position === null ? [] : [w.position])),
  );
  const items = read.map((w) => ({ ...w, ledger_hash: w.position === null ? null : (hashes.get(w.position) ?? null) }));
  return { items, nextAfter: rows.length === limit ? rows[rows.length - 1].node : null };
}

/**
 * The tree checkpoint a node last cosigned, with its cosignature line and the coordinator's own check
 * of that line against the node's registered key, under the witness name the checkpoint's origin
 * gives it (`<ledger origin>/node/<node>`).
 */
function cosignedBy(node: string, r: { cosigned_checkpoint: string | null; cosignature: string | null; public_key: string | null }): Witness['cosigned'] {
  if (r.cosigned_checkpoint === null || r.cosignature === null) return null;
  let size: number | null = null;
  let valid = false;
  try {
    const c = parseTreeCheckpoint(r.cosigned_checkpoint);
    size = c.size;
    const name = nodeWitnessName(c.origin.slice(0, -TREE_ORIGIN_SUFFIX.length), node);
    valid = r.public_key !== null && verifyCosignature(r.cosigned_checkpoint, r.cosignature, { name, publicKey: r.public_key }) !== null;
  } catch {
    valid = false;
  }
  return { note: r.cosigned_checkpoint, cosignature: r.cosignature, size, valid };
}

/**
 * The cosignature lines of the nodes (by name, at most `limit`) that cosigned exactly `note` and whose
 * line verifies under the key the ledger recorded for them: what the tree checkpoint is served with.
 */
export async function readCosignatures(db: Kysely<Database>, note: string, limit: number): Promise<string[]> {
  const lines: string[] = [];
  let after: string | null = null;
  // Read past lines that do not verify (reported, never served): pages until `limit` valid ones or the end.
  while (lines.length < limit) {
    let q = db
      .selectFrom('node_status')
      .innerJoin('node_witness_keys', 'node_witness_keys.node', 'node_status.node')
      .select(['node_status.node', 'node_status.cosigned_checkpoint', 'node_status.cosignature', 'node_witness_keys.public_key'])
      .where('node_status.cosigned_checkpoint', '=', note);
    if (after !== null) q = q.where('node_status.node', '>', after);
    const rows = await q.orderBy('node_status.node').limit(limit).execute();
    for (const r of rows) if (lines.length < limit && cosignedBy(r.node, r)?.valid) lines.push(r.cosignature!);
    if (rows.length < limit) break;
    after = rows[rows.length - 1].node;
  }
  return lines;
}

const iso = (t: Date | string | null): string | null => (t === null ? null : new Date(t).toISOString());
