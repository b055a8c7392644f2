import { sql, type Transaction } from 'kysely';
import type { ReportRequest } from '#contracts';
import type { z } from 'zod';
import type { Database } from '../db/index.js';
import type { reportedOutcome } from './report.rules.js';

type Report = z.infer<typeof ReportRequest>;

/** The node's status row as its last report leaves it. */
export async function recordReportStatus(trx: Transaction<Database>, node: string, r: Report, now: Date): Promise<void> {
  const values = {
    last_contact: now,
    applied_version: r.active_version,
    last_result: r.result,
    last_error: r.error ?? null,
    checkpoint: r.checkpoint ?? null,
    stale_since: r.stale_since ?? null,
    // An agent without a witness key, or one that has not verified a tree checkpoint yet, says nothing: what it cosigned before stays.
    ...(r.cosigned_checkpoint && r.cosignature ? { cosigned_checkpoint: r.cosigned_checkpoint, cosignature: r.cosignature } : {}),
    // An older agent says nothing: the version it enrolled with stays.
    ...(r.agent_version ? { agent_version: r.agent_version } : {}),
    ...(r.installed ? { installed: JSON.stringify(r.installed) } : {}),
    ...(r.owned ? { owned: JSON.stringify(r.owned) } : {}),
    // The version a resource list is about: the one applied, or the one tried when the pass failed.
    ...(r.resources
      ? {
          resources: JSON.stringify({
            version: r.result === 'failed' ? (r.target_version ?? r.active_version) : r.active_version,
            result: r.result,
            reported_at: now.toISOString(),
            items: r.resources,
          }),
        }
      : {}),
  };
  await trx
    .insertInto('node_status')
    .values({ node, ...values })
    .onConflict((oc) => oc.column('node').doUpdateSet(values))
    .execute();
}

/** Records a version's outcome; one that must not overwrite (or overwrites only a rejection) leaves any other recorded outcome as it is, and an equal result is not rewritten. */
export async function recordOutcome(
  trx: Transaction<Database>,
  node: string,
  o: NonNullable<ReturnType<typeof reportedOutcome>>,
  activation: unknown,
  now: Date,
): Promise<void> {
  const stored = activation ? JSON.stringify(activation) : null;
  await trx
    .insertInto('node_outcomes')
    .values({ node, version: o.version, result: o.result, error: o.error, reported_at: now, activation: stored })
    .onConflict((oc) => {
      if (o.overwrites === false) return oc.columns(['node', 'version']).doNothing();
      const update = oc
        .columns(['node', 'version'])
        // A confirmation carries no activation: the one recorded when the version was applied stays.
        .doUpdateSet({ result: o.result, error: o.error, reported_at: now, activation: sql`coalesce(excluded.activation, node_outcomes.activation)` })
        .where('node_outcomes.result', '!=', o.result);
      return o.overwrites === 'rejected' ? update.where('node_outcomes.result', '=', 'rejected') : update;
    })
    .execute();
}

/** The node's head as the retirement rule needs it. */
export async function readRetirementHead(trx: Transaction<Database>, node: string) {
  return trx.selectFrom('node_heads').select(['version', 'retired', 'updated_at']).where('node', '=', node).executeTakeFirst();
}
