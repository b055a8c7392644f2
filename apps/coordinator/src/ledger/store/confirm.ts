import type { Kysely } from 'kysely';
import type { Database } from '../../db/index.js';
import { headsAtPublish } from './heads.js';

/**
 * What confirming a publish needs to know, from the ledger itself: its record's window, whether it is
 * confirmed already and by whom, and which nodes still run a version it stamped.
 */
export async function loadConfirmable(
  db: Kysely<Database>,
  publishId: string,
): Promise<{ record: { confirm_within?: number; confirmed_by: string | null } | undefined; pending: string[] }> {
  const rows = await db.selectFrom('ledger').select(['type', 'data', 'meta']).where('stream', '=', `publish:${publishId}`).orderBy('revision').execute();
  const recorded = rows.find((r) => r.type === 'publish_recorded');
  if (!recorded) return { record: undefined, pending: [] };
  const confirmed = rows.find((r) => r.type === 'publish_confirmed');
  const within = recorded.data.confirm_within;
  const pending = (await headsAtPublish(db, publishId)).filter((h) => !h.retired);
  return {
    record: { ...(typeof within === 'number' ? { confirm_within: within } : {}), confirmed_by: confirmed ? String(confirmed.meta.actor) : null },
    pending: pending.map((r) => r.node),
  };
}
