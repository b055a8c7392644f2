import { sql, type Kysely } from 'kysely';
import { type Database, type StoredArtifact, anyOf } from '../../db/index.js';
import { DomainError } from '../../common/index.js';
import { loadVersionArtifacts } from './versions.js';
import { ACTIVE, evolve, type RecordedRolloutEvent, type RolloutState, type WaveFacts } from '../domain/rollout.js';

/** A rollout's full id from the id or a prefix of it (8 characters or more, as retectl prints them); 404 or 409 otherwise. */
export async function resolveRolloutId(db: Kysely<Database>, idOrPrefix: string): Promise<string> {
  const rows = await db
    .selectFrom('rollouts')
    .select('id')
    .where('id', 'like', `${idOrPrefix.replace(/[%_\\]/g, '')}%`)
    .limit(2)
    .execute();
  if (rows.length === 0) throw new DomainError('unknown_rollout', `no rollout ${idOrPrefix}`, { rollout: idOrPrefix });
  if (rows.length > 1)
    throw new DomainError('ambiguous_rollout', `more than one rollout starts with ${idOrPrefix}: give more of its id`, { rollout: idOrPrefix });
  return rows[0].id;
}

/** A rollout's state, folded from its own ledger stream (the read model is not what decides). */
export async function loadRollout(db: Kysely<Database>, id: string): Promise<RolloutState> {
  const rows = await db.selectFrom('ledger').select(['type', 'data', 'recorded_at']).where('stream', '=', `rollout:${id}`).orderBy('revision').execute();
  let state: RolloutState | null = null;
  // A rollout's stream holds its events only: the append path is the one writer of the ledger.
  for (const r of rows) state = evolve(state, { type: r.type, data: r.data, recorded_at: new Date(r.recorded_at).toISOString() } as RecordedRolloutEvent);
  if (!state) throw new DomainError('unknown_rollout', `no rollout ${id}`, { rollout: id });
  return state;
}

/**
 * What the released waves' nodes reported at the versions the rollout gave them, one entry per
 * released wave: confirmed (applied, and confirmed where a window applied), provisional, failed
 * (failed, rejected or reverted). One grouped read of the rollout's nodes joined with their outcomes.
 */
export async function loadWaveFacts(db: Kysely<Database>, id: string, released?: number): Promise<WaveFacts[]> {
  const rows = await db
    .selectFrom('rollout_nodes as rn')
    .leftJoin('node_outcomes as o', (j) => j.onRef('o.node', '=', 'rn.node').onRef('o.version', '=', 'rn.version'))
    .select([
      'rn.wave',
      sql<number>`count(*)::int`.as('released'),
      sql<number>`(count(*) FILTER (WHERE o.result = 'applied'))::int`.as('confirmed'),
      sql<number>`(count(*) FILTER (WHERE o.result = 'provisional'))::int`.as('provisional'),
      sql<number>`(count(*) FILTER (WHERE o.result IN ('failed', 'rejected', 'reverted')))::int`.as('failed'),
      // Given back their previous set, their window passed unheard: unless they reported otherwise since.
      sql<number>`(count(*) FILTER (WHERE rn.expired_at IS NOT NULL AND (o.result IS NULL OR o.result = 'provisional')))::int`.as('expired'),
    ])
    .where('rn.rollout_id', '=', id)
    .where('rn.version', 'is not', null)
    .groupBy('rn.wave')
    .execute();
  const waves = released ?? (await db.selectFrom('rollouts').select('released').where('id', '=', id).executeTakeFirstOrThrow()).released;
  const facts: WaveFacts[] = Array.from({ length: waves }, () => ({ released: 0, confirmed: 0, provisional: 0, failed: 0, expired: 0 }));
  for (const r of rows) {
    if (r.wave < waves)
      facts[r.wave] = {
        released: Number(r.released),
        confirmed: Number(r.confirmed),
        provisional: Number(r.provisional),
        failed: Number(r.failed),
        expired: Number(r.expired),
      };
  }
  return facts;
}

/** For each of `nodes` in an active (running or paused) rollout, that rollout's id. */
export async function activeRolloutsOf(db: Kysely<Database>, nodes: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (nodes.length === 0) return out;
  const active = await db
    .selectFrom('rollouts')
    .select('id')
    .where('status', 'in', [...ACTIVE])
    .execute();
  if (active.length === 0) return out;
  const rows = await db
    .selectFrom('rollout_nodes')
    .select(['node', 'rollout_id'])
    .where(
      'rollout_id',
      'in',
      active.map((r) => r.id),
    )
    .where(anyOf('node', nodes))
    .execute();
  for (const r of rows) out.set(r.node, r.rollout_id);
  return out;
}

/**
 * Of `nodes`, those the rollout released that have not confirmed its version (no `applied` outcome
 * at it), read under the ledger lock: a confirmation that came after the driver looked is respected.
 */
export async function stillUnconfirmed(db: Kysely<Database>, state: RolloutState, nodes: readonly string[]): Promise<string[]> {
  const released = nodes.filter((n) => state.stamped.has(n));
  if (released.length === 0) return [];
  const confirmed = new Set<string>();
  for (let i = 0; i < released.length; i += 10_000) {
    const slice = released.slice(i, i + 10_000);
    const { rows } = await sql<{ node: string }>`
      SELECT o.node FROM node_outcomes o
      JOIN unnest(${sql.val(slice)}::text[], ${sql.val(slice.map((n) => state.stamped.get(n)!.version))}::int[]) AS w(node, version)
        ON w.node = o.node AND w.version = o.version
      WHERE o.result = 'applied'`.execute(db);
    for (const r of rows) confirmed.add(r.node);
  }
  return released.filter((n) => !confirmed.has(n));
}

/** Each released node's set at the version it had before the rollout (none when it had none), for a rollback; `only` narrows to those nodes. */
export async function loadPrevious(db: Kysely<Database>, state: RolloutState, only?: readonly string[]): Promise<Map<string, StoredArtifact[]>> {
  const wanted = [...(only ?? state.stamped.keys())].map((node) => ({ node, version: state.targets.get(node)?.from ?? 0 })).filter((w) => w.version > 0);
  return loadVersionArtifacts(db, wanted);
}
