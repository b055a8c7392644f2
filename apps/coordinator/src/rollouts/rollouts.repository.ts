import { sql, type Kysely, type Selectable } from 'kysely';
import type { RolloutPlan, RolloutStatus, RolloutSummary, RolloutView } from '#contracts';
import { anyOf, type Database } from '../db/index.js';
import { DomainError } from '../common/index.js';
import { loadWaveFacts, waveName, type RecordedRolloutPlan } from '../ledger/index.js';

type Row = Pick<
  Selectable<Database['rollouts']>,
  'id' | 'publish_id' | 'message' | 'actor' | 'status' | 'reason' | 'plan' | 'wave_sizes' | 'released' | 'released_at' | 'nodes' | 'created_at' | 'updated_at'
>;

function summary(r: Row): RolloutSummary {
  return {
    id: r.id,
    publish_id: r.publish_id,
    message: r.message,
    actor: r.actor,
    status: r.status as RolloutStatus,
    reason: r.reason,
    created_at: new Date(r.created_at).toISOString(),
    updated_at: new Date(r.updated_at).toISOString(),
    nodes: r.nodes,
    waves: r.wave_sizes.length,
    released: r.released,
  };
}

/** Rollouts, newest first; `status` narrows to one state. */
export async function listRollouts(db: Kysely<Database>, status: RolloutStatus | undefined, limit: number): Promise<RolloutSummary[]> {
  const found = await db
    .selectFrom('rollouts')
    .select(['id', 'publish_id', 'message', 'actor', 'status', 'reason', 'plan', 'wave_sizes', 'released', 'released_at', 'nodes', 'created_at', 'updated_at'])
    .$if(status !== undefined, (q) => q.where('status', '=', status as string))
    .orderBy('position', 'desc')
    .limit(limit)
    .execute();
  return found.map(summary);
}

/** Of these rollouts, those with a node among `nodes`: one indexed read. */
export async function rolloutsReaching(db: Kysely<Database>, ids: readonly string[], nodes: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0 || nodes.length === 0) return new Set();
  const rows = await db.selectFrom('rollout_nodes').select('rollout_id').distinct().where(anyOf('rollout_id', ids)).where(anyOf('node', nodes)).execute();
  return new Set(rows.map((r) => r.rollout_id));
}

/** Running rollouts as the driver's pre-check needs them: no node lists, no ledger read. */
export async function runningRollouts(db: Kysely<Database>) {
  return db.selectFrom('rollouts').select(['id', 'plan', 'wave_sizes', 'released', 'released_at']).where('status', '=', 'running').execute();
}

/** The longest confirmation window there is (a week), and a day more: a rollout quiet for longer has no node left to expire. */
const EXPIRY_HORIZON_MS = (7 + 1) * 24 * 3600 * 1000;

/** A released node not confirmed at the version its rollout gave it, still its head: what the expiry check weighs. */
export interface UnconfirmedRow {
  readonly rolloutId: string;
  readonly node: string;
  readonly releasedAt: string;
  readonly provisionalAt: string | null;
  /** The operator's window its publish asked for, in seconds. */
  readonly operatorWindow: number | null;
  /** The digest of its set's agent.json, whose sync.confirm_within is its own window. */
  readonly agentJson: string | null;
}

/**
 * Released nodes of rollouts active within the horizon that have not confirmed the version the
 * rollout gave them (no outcome, or a provisional one) and still run it (it is their head): one read.
 */
export async function unconfirmedReleased(db: Kysely<Database>, now: Date): Promise<UnconfirmedRow[]> {
  const { rows } = await sql<{
    rollout_id: string;
    node: string;
    released_at: string;
    provisional_at: Date | null;
    confirm_within: number | null;
    agent_json: string | null;
  }>`
    SELECT rn.rollout_id, rn.node, r.released_at->>rn.wave AS released_at, o.reported_at AS provisional_at, h.confirm_within,
      jsonb_path_query_first(h.artifacts, '$[*] ? (@.name == "agent.json").sha256') #>> '{}' AS agent_json
    FROM rollouts r
    JOIN rollout_nodes rn ON rn.rollout_id = r.id
    JOIN node_heads h ON h.node = rn.node AND h.version = rn.version AND NOT h.retired
    LEFT JOIN node_outcomes o ON o.node = rn.node AND o.version = rn.version
    WHERE r.updated_at >= ${new Date(now.getTime() - EXPIRY_HORIZON_MS)} AND r.released > 0
      AND rn.version IS NOT NULL AND rn.expired_at IS NULL
      AND (o.result IS NULL OR o.result = 'provisional')`.execute(db);
  return rows.map((r) => ({
    rolloutId: r.rollout_id,
    node: r.node,
    releasedAt: r.released_at,
    provisionalAt: r.provisional_at === null ? null : new Date(r.provisional_at).toISOString(),
    operatorWindow: r.confirm_within,
    agentJson: r.agent_json,
  }));
}

/** The bodies of agent.json blobs, by digest. */
export async function agentJsonBodies(db: Kysely<Database>, digests: readonly string[]): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  if (digests.length === 0) return out;
  const rows = await db
    .selectFrom('blobs')
    .select(['sha256', 'content'])
    .where('sha256', 'in', [...digests])
    .execute();
  for (const r of rows) out.set(r.sha256, r.content);
  return out;
}

/**
 * One rollout with its waves (sizes, release and bake times, what their nodes reported) and its
 * timeline (the rollout's own ledger events, the plan's node lists left out).
 */
export async function readRollout(db: Kysely<Database>, id: string): Promise<RolloutView> {
  const r = await db
    .selectFrom('rollouts')
    .select(['id', 'publish_id', 'message', 'actor', 'status', 'reason', 'plan', 'wave_sizes', 'released', 'released_at', 'nodes', 'created_at', 'updated_at'])
    .where('id', '=', id)
    .executeTakeFirst();
  if (!r) throw new DomainError('unknown_rollout', `no rollout ${id}`, { rollout: id });
  const plan = r.plan as unknown as RecordedRolloutPlan;
  const facts = await loadWaveFacts(db, id, r.released);
  const canaryWave =
    plan.canary.length > 0
      ? await db
          .selectFrom('rollout_nodes')
          .select('node')
          .where('rollout_id', '=', id)
          .where('wave', '=', 0)
          .where('node', 'in', plan.canary.length > 0 ? [...plan.canary] : [''])
          .limit(1)
          .execute()
      : [];
  const named = {
    plan,
    waves: r.wave_sizes.map((_, w) => (w === 0 && canaryWave.length > 0 ? [plan.canary.find((c) => c === canaryWave[0].node) as string] : [])),
  };
  const releasedAt = r.released_at;
  const waveList = r.wave_sizes.map((size, w) => {
    const f = facts[w] ?? { released: 0, confirmed: 0, provisional: 0, failed: 0, expired: 0 };
    const at = releasedAt[w] ?? null;
    return {
      index: w,
      name: waveName(named, w),
      released_at: at,
      bakes_until: at ? new Date(Date.parse(at) + plan.bake_seconds * 1000).toISOString() : null,
      counts: {
        nodes: size,
        released: f.released,
        confirmed: f.confirmed,
        provisional: f.provisional,
        failed: f.failed,
        expired: f.expired,
        outstanding: Math.max(0, f.released - f.confirmed - f.provisional - f.failed - f.expired),
      },
    };
  });
  const { rows: events } = await sql<{
    position: string;
    type: string;
    actor: string;
    recorded_at: Date;
    wave: string | null;
    reason: string | null;
    publish_id: string | null;
    nodes: number | null;
  }>`
    SELECT position, type, meta->>'actor' AS actor, recorded_at, x.wave, x.reason, x.publish_id, x.nodes
    FROM ledger
    -- The plan's data holds every node's target set: it is never read here (its publish id is the rollout's).
    CROSS JOIN LATERAL (SELECT
      CASE WHEN type = 'rollout_planned' THEN NULL ELSE data->>'wave' END AS wave,
      CASE WHEN type = 'rollout_planned' THEN NULL ELSE data->>'reason' END AS reason,
      CASE WHEN type = 'rollout_planned' THEN ${id} ELSE coalesce(data->>'rollback_publish_id', data->>'publish_id') END AS publish_id,
      CASE WHEN type = 'rollout_nodes_expired' THEN jsonb_array_length(data->'nodes') END AS nodes) x
    WHERE stream = ${`rollout:${id}`} ORDER BY revision`.execute(db);
  return {
    ...summary(r),
    plan: plan as RolloutPlan,
    wave_list: waveList,
    timeline: events.map((e) => ({
      position: Number(e.position),
      type: e.type,
      actor: e.actor,
      recorded_at: new Date(e.recorded_at).toISOString(),
      ...(e.wave !== null ? { wave: Number(e.wave) } : {}),
      ...(e.reason !== null ? { reason: e.reason } : {}),
      ...(e.publish_id !== null ? { publish_id: e.publish_id } : {}),
      ...(e.nodes !== null ? { nodes: Number(e.nodes) } : {}),
    })),
  };
}
