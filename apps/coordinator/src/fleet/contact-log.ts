import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/index.js';

/**
 * Last contact, kept in memory and written in batches: an authenticated poll is the node's contact,
 * and an idle fleet polling every few minutes must not cost a database write per poll. `flush` writes
 * every node seen since the last flush in one statement, and never moves a contact backwards (a
 * report or another replica may have written a later one).
 */
export class ContactLog {
  /** Each node seen since the last flush, with when (epoch milliseconds: a poll makes no Date). */
  private pending = new Map<string, number>();

  seen(node: string, at: number = Date.now()): void {
    this.pending.set(node, at);
  }

  /** Nodes seen since the last flush (for tests and metrics). */
  get unflushed(): number {
    return this.pending.size;
  }

  async flush(db: Kysely<Database>): Promise<number> {
    if (this.pending.size === 0) return 0;
    const batch = this.pending;
    this.pending = new Map();
    const rows = [...batch].map(([node, at]) => sql`(${node}::text, ${new Date(at).toISOString()}::timestamptz)`);
    try {
      await sql`
        UPDATE node_status AS s SET last_contact = v.at
        FROM (VALUES ${sql.join(rows)}) AS v(node, at)
        WHERE s.node = v.node AND (s.last_contact IS NULL OR s.last_contact < v.at)`.execute(db);
    } catch (err) {
      // Kept for the next flush unless a newer contact arrived meanwhile.
      for (const [node, at] of batch) if (!this.pending.has(node)) this.pending.set(node, at);
      throw err;
    }
    return batch.size;
  }
}
