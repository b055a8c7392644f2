import type { Transaction } from 'kysely';
import type { Profile } from '#contracts';
import type { z } from 'zod';
import type { Database } from '../db/index.js';
import type { Briefing } from './briefing.js';

/**
 * Writes the node's status row at enrolment: profile, inventory and briefing, ineligible when the
 * briefing failed. Returns what the node last reported installed, which the enrolled agent is told.
 */
export async function recordEnrolmentStatus(
  trx: Transaction<Database>,
  node: string,
  e: { at: Date; profile: z.infer<typeof Profile>; inventory: unknown; briefing: Briefing },
): Promise<unknown> {
  const previous = await trx.selectFrom('node_status').select('installed').where('node', '=', node).executeTakeFirst();
  const status = {
    enrolled_at: e.at,
    profile: JSON.stringify(e.profile),
    inventory: JSON.stringify(e.inventory),
    briefing: JSON.stringify(e.briefing),
    ineligible: e.briefing.outcome === 'fail',
    agent_version: e.profile.agent_version || null,
  };
  await trx.insertInto('node_status').values({ node, ...status }).onConflict((oc) => oc.column('node').doUpdateSet(status)).execute();
  return previous?.installed ?? null;
}
