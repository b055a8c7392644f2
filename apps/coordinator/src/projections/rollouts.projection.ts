import { sql, type Transaction } from 'kysely';
import type { Database } from '../db/index.js';
import type { RolloutEvent, StoredEvent } from '../ledger/index.js';

const CHUNK = 1000;
const STATUS: Partial<Record<RolloutEvent['type'], string>> = {
  rollout_paused: 'paused',
  rollout_resumed: 'running',
  rollout_halted: 'halted',
  rollout_aborted: 'aborted',
  rollout_completed: 'completed',
  rollout_superseded: 'superseded',
};

type StoredRolloutEvent = Extract<StoredEvent, { readonly type: RolloutEvent['type'] }>;

/** The event when it is a rollout's, narrowed by its type. */
function rolloutEventOf(e: StoredEvent): StoredRolloutEvent | null {
  switch (e.type) {
    case 'rollout_planned':
    case 'rollout_wave_released':
    case 'rollout_paused':
    case 'rollout_resumed':
    case 'rollout_halted':
    case 'rollout_aborted':
    case 'rollout_completed':
    case 'rollout_superseded':
    case 'rollout_nodes_expired':
      return e;
    default:
      return null;
  }
}

/** Rollout events into `rollouts` and `rollout_nodes`, in the appending transaction like every read model. */
export async function projectRollouts(trx: Transaction<Database>, events: readonly StoredEvent[]): Promise<void> {
  for (const e of events) {
    const event = rolloutEventOf(e);
    if (!event) continue;
    switch (event.type) {
      case 'rollout_planned': {
        const d = event.data;
        const waveOf = new Map<string, number>();
        d.waves.forEach((nodes, w) => nodes.forEach((n) => waveOf.set(n, w)));
        await trx
          .insertInto('rollouts')
          .values({
            id: d.rollout_id,
            publish_id: d.publish_id,
            message: d.message,
            actor: String(e.meta.actor),
            status: 'running',
            reason: null,
            plan: JSON.stringify(d.plan),
            wave_sizes: JSON.stringify(d.waves.map((w) => w.length)),
            released: 0,
            released_at: '[]',
            nodes: d.targets.length,
            created_at: e.recorded_at,
            updated_at: e.recorded_at,
            position: e.position,
          })
          .execute();
        const rows = d.targets.map((t) => ({ rollout_id: d.rollout_id, node: t.node, wave: waveOf.get(t.node) ?? 0, from_version: t.from, version: null }));
        for (let i = 0; i < rows.length; i += CHUNK)
          await trx
            .insertInto('rollout_nodes')
            .values(rows.slice(i, i + CHUNK))
            .execute();
        break;
      }
      case 'rollout_wave_released': {
        const d = event.data;
        await trx
          .updateTable('rollouts')
          .set({
            released: d.wave + 1,
            released_at: sql`released_at || ${JSON.stringify([e.recorded_at])}::jsonb`,
            updated_at: e.recorded_at,
            position: e.position,
          })
          .where('id', '=', d.rollout_id)
          .execute();
        for (let i = 0; i < d.released.length; i += CHUNK) {
          const slice = d.released.slice(i, i + CHUNK);
          await sql`
            UPDATE rollout_nodes SET version = r.version
            FROM unnest(${sql.val(slice.map((x) => x.node))}::text[], ${sql.val(slice.map((x) => x.to))}::int[]) AS r(node, version)
            WHERE rollout_nodes.rollout_id = ${d.rollout_id} AND rollout_nodes.node = r.node`.execute(trx);
        }
        break;
      }
      case 'rollout_nodes_expired': {
        const d = event.data;
        await trx.updateTable('rollouts').set({ updated_at: e.recorded_at, position: e.position }).where('id', '=', d.rollout_id).execute();
        for (let i = 0; i < d.nodes.length; i += CHUNK) {
          await trx
            .updateTable('rollout_nodes')
            .set({ expired_at: e.recorded_at })
            .where('rollout_id', '=', d.rollout_id)
            .where(
              'node',
              'in',
              d.nodes.slice(i, i + CHUNK).map((n) => n.node),
            )
            .execute();
        }
        break;
      }
      default: {
        const status = STATUS[event.type];
        if (!status) throw new Error(`ledger position ${e.position}: unknown rollout event ${e.type}`);
        await trx
          .updateTable('rollouts')
          // A state's reason is its own event's: a resume without a message clears the pause's.
          .set({ status, reason: event.data.reason ?? null, updated_at: e.recorded_at, position: e.position })
          .where('id', '=', event.data.rollout_id)
          .execute();
      }
    }
  }
}
