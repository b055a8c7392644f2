import { sql, type Kysely } from 'kysely';
import type { Db, Database } from '../../db/index.js';

/** Its own key, apart from the ledger's: holding it never delays a publish. */
const MIRROR_LOCK_KEY = 0x4d697272; // "Mirr"

/**
 * Runs `fn` only if this process may write the mirror: on PostgreSQL, the replica holding a
 * session advisory lock on one pooled connection for the batch (`fn` gets that connection);
 * null when another replica holds it. PGlite is one process with one connection: holding that
 * connection would stall publishes, and no other replica can exist, so `fn` just gets the database.
 */
export async function withMirrorLock<T>(db: Db, fn: (q: Kysely<Database>) => Promise<T>): Promise<T | null> {
  if (db.kind === 'pglite') return fn(db.kysely);
  return db.kysely.connection().execute(async (conn) => {
    const { rows } = await sql<{ locked: boolean }>`SELECT pg_try_advisory_lock(${MIRROR_LOCK_KEY}) AS locked`.execute(conn);
    if (!rows[0]?.locked) return null;
    try {
      return await fn(conn);
    } finally {
      await sql`SELECT pg_advisory_unlock(${MIRROR_LOCK_KEY})`.execute(conn);
    }
  });
}
