import type { Transaction } from 'kysely';
import type { OwnedCopy, Profile } from '#contracts';
import type { z } from 'zod';
import type { Database } from '../db/index.js';
import type { Briefing } from './briefing.js';

/** The recovery copy an enrolment hands back: what the node last reported installed, and the host resources it owns. */
export interface RecoveryCopy {
  readonly installed: string[] | null;
  readonly owned: OwnedCopy | null;
}

/**
 * Writes the node's status row at enrolment: profile, inventory and briefing, ineligible when the
 * briefing failed. Returns the node's recovery copy, which the enrolled agent is told.
 */
export async function recordEnrolmentStatus(
  trx: Transaction<Database>,
  node: string,
  e: { at: Date; profile: z.infer<typeof Profile>; inventory: unknown; briefing: Briefing },
): Promise<RecoveryCopy> {
  const previous = await trx.selectFrom('node_status').select(['installed', 'owned']).where('node', '=', node).executeTakeFirst();
  const status = {
    enrolled_at: e.at,
    profile: JSON.stringify(e.profile),
    inventory: JSON.stringify(e.inventory),
    briefing: JSON.stringify(e.briefing),
    ineligible: e.briefing.outcome === 'fail',
    agent_version: e.profile.agent_version || null,
  };
  await trx
    .insertInto('node_status')
    .values({ node, ...status })
    .onConflict((oc) => oc.column('node').doUpdateSet(status))
    .execute();
  return { installed: previous?.installed ?? null, owned: previous?.owned ?? null };
}
