import type { Kysely } from 'kysely';
import type { Database } from '../db/database.js';
import { allEvents } from '../ledger/store/read-events.js';
import { lockLedger } from '../ledger/store/lock.js';
import type { StoredEvent } from '../ledger/store/ledger-row.js';
import { project, type Signer } from './project.js';

/**
 * Drops every projection and replays the ledger into it (rule 6). Runs under the ledger lock so no
 * publish interleaves. Ed25519 signatures are deterministic, so rebuilt bundles are byte-identical.
 */
export async function rebuildProjections(db: Kysely<Database>, signer: Signer): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await lockLedger(trx);
    await trx.deleteFrom('node_heads').execute();
    await trx.deleteFrom('node_versions').execute();
    await trx.deleteFrom('publishes').execute();
    await trx.deleteFrom('packages').execute();
    let group: StoredEvent[] = [];
    let count = 0;
    for await (const e of allEvents(trx)) {
      count++;
      group.push(e);
      // A publish's events are contiguous and end with its record: project each group whole.
      if (e.type !== 'node_set_stamped') {
        await project(trx, group, signer);
        group = [];
      }
    }
    await project(trx, group, signer);
    return count;
  });
}
