import type { Kysely } from 'kysely';
import { type Database, anyOf } from '../db/index.js';
import { failedLines } from '../identity/index.js';
import type { Ineligible, IneligibleNodes } from '../ledger/index.js';

/**
 * Which of the given nodes are ineligible (a failed line in their last enrolment briefing), each with
 * its failed lines: what the decider needs to refuse or record them. Reads only the nodes asked about,
 * so a publish pays for the nodes it changes, not for the fleet.
 */
export async function loadIneligible(db: Kysely<Database>, nodes: readonly string[]): Promise<Ineligible> {
  const out = new Map<string, { check: string; detail: string }[]>();
  if (nodes.length === 0) return out;
  // One statement whatever the number: in slices of 10,000, each slice of a large publish could be a
  // scan of the whole table (blobSizes, in bundles/blobs.repository.ts).
  const rows = await db.selectFrom('node_status').select(['node', 'briefing']).where('ineligible', '=', true).where(anyOf('node', nodes)).execute();
  for (const r of rows) out.set(r.node, failedLines(r.briefing));
  return out;
}

/** The ledger's INELIGIBLE_NODES port. */
export const ineligibleNodes: IneligibleNodes = { load: loadIneligible };
