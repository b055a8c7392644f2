import { sql, type Transaction } from 'kysely';
import { signBundle, type SigningKey } from '#bundle';
import type { Database } from '../db/database.js';
import { etagOf } from '../bundles/bundle-payload.js';

const PAGE = 500;

const kidOf = (jws: string): unknown => JSON.parse(Buffer.from(jws.slice(0, jws.indexOf('.')), 'base64url').toString('utf8')).kid;

/**
 * Re-signs every node head not signed by `key` with it: the same payload bytes (same version,
 * position and issue time), a new signature and so a new ETag, which every agent then fetches once.
 * Deterministic, so replaying the ledger re-signs to the same bytes. Returns how many it re-signed.
 */
export async function resignHeads(trx: Transaction<Database>, key: SigningKey): Promise<number> {
  let after = '';
  let count = 0;
  for (;;) {
    const rows = await trx.selectFrom('node_heads').select(['node', 'jws']).where('node', '>', after).orderBy('node').limit(PAGE).execute();
    if (rows.length === 0) return count;
    after = rows[rows.length - 1].node;
    const changed = [];
    for (const r of rows) {
      if (kidOf(r.jws) === key.kid) continue;
      const payload = Buffer.from(r.jws.split('.')[1], 'base64url');
      const jws = await signBundle(payload, key);
      changed.push(sql`(${r.node}, ${jws}, ${etagOf(jws)})`);
    }
    if (changed.length > 0) {
      await sql`UPDATE node_heads SET jws = v.jws, etag = v.etag FROM (VALUES ${sql.join(changed)}) AS v(node, jws, etag) WHERE node_heads.node = v.node`.execute(trx);
      count += changed.length;
    }
  }
}
