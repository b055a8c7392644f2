import type { Kysely } from 'kysely';
import type { Database } from '../db/index.js';
import { allEvents, lockLedger, type StoredEvent } from '../ledger/index.js';
import { project } from './project.js';
import { resignHeads } from '../trust/index.js';

/**
 * Drops every projection and replays the ledger into it: the read models are only ever a function of the ledger. Runs under the ledger lock so no
 * publish interleaves. Heads come back with the same kids and ETags, so agents fetch nothing again.
 */
export async function rebuildProjections(db: Kysely<Database>): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await lockLedger(trx);
    await trx.deleteFrom('node_heads').execute();
    await trx.deleteFrom('publishes').execute();
    await trx.deleteFrom('packages').execute();
    await trx.deleteFrom('rollouts').execute();
    await trx.deleteFrom('rollout_nodes').execute();
    let group: StoredEvent[] = [];
    let count = 0;
    for await (const e of allEvents(trx)) {
      count++;
      group.push(e);
      // A publish's events are contiguous and end with its record: project each group whole.
      if (e.type !== 'node_set_stamped') {
        await project(trx, group);
        group = [];
        // A key change moved every head to its signer then: replaying it does the same, to the same ETags.
        const resignTo = keyChangeSigner(e);
        if (resignTo) await resignHeads(trx, resignTo);
      }
    }
    await project(trx, group);
    return count;
  });
}

/** The signer a recorded key change moved the heads to; null for events before trust versions, which re-signed nothing. */
function keyChangeSigner(e: StoredEvent): string | null {
  if (e.type !== 'signing_key_rotated' && e.type !== 'signing_key_revoked') return null;
  return typeof e.data.trust_version === 'number' && typeof e.data.signer === 'string' ? e.data.signer : null;
}
