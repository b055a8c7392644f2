import { sql, type Transaction } from 'kysely';
import type { Database } from '../db/index.js';
import { bundleEtag } from '../ledger/index.js';

const PAGE = 1000;

/**
 * Moves every node head not signed by `kid` to it: from now on its bundle is signed with that key
 * when fetched, the same payload bytes (same version, position and issue time) under a new
 * signature, so a new ETag, which every agent then fetches once. Nothing is signed here (see
 * signHeadBundle), so a rotation costs one row update per head. Deterministic, so replaying the
 * ledger re-stamps to the same ETags. Returns how many heads it moved.
 */
export async function resignHeads(trx: Transaction<Database>, kid: string): Promise<number> {
  let after = '';
  let count = 0;
  for (;;) {
    const rows = await trx
      .selectFrom('node_heads as h')
      .innerJoin('ledger as l', 'l.position', 'h.position')
      .select(['h.node', 'l.hash'])
      .where('h.kid', '<>', kid)
      .where('h.node', '>', after)
      .orderBy('h.node')
      .limit(PAGE)
      .execute();
    if (rows.length === 0) return count;
    after = rows[rows.length - 1].node;
    const moved = rows.map((r) => sql`(${r.node}, ${bundleEtag(kid, r.hash)})`);
    await sql`UPDATE node_heads SET kid = ${kid}, etag = v.etag FROM (VALUES ${sql.join(moved)}) AS v(node, etag) WHERE node_heads.node = v.node`.execute(trx);
    count += moved.length;
  }
}
