import { Inject, Injectable } from '@nestjs/common';
import { sql, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config.js';
import { LOG } from '../core/index.js';
import { DB, type Db, type Database, BatchFlusher } from '../db/index.js';

/**
 * The last use of each API token, kept in memory and written in batches, as node contact is
 * (fleet/contact-log.ts): a script calling the API every second must not cost a database write per
 * request. `flush` writes every token used since the last flush in one statement, and never moves a
 * use backwards (another replica may have written a later one).
 */
export class ApiTokenUses {
  private pending = new Map<string, Date>();

  seen(id: string, at: Date = new Date()): void {
    this.pending.set(id, at);
  }

  /** This replica's newest use of the token not written yet, if any. */
  unwritten(id: string): Date | undefined {
    return this.pending.get(id);
  }

  async flush(db: Kysely<Database>): Promise<number> {
    if (this.pending.size === 0) return 0;
    const batch = this.pending;
    this.pending = new Map();
    const rows = [...batch].map(([id, at]) => sql`(${id}::text, ${at.toISOString()}::timestamptz)`);
    try {
      await sql`
        UPDATE api_tokens AS t SET last_used_at = v.at
        FROM (VALUES ${sql.join(rows)}) AS v(id, at)
        WHERE t.id = v.id AND (t.last_used_at IS NULL OR t.last_used_at < v.at)`.execute(db);
    } catch (err) {
      // Kept for the next flush unless a newer use arrived meanwhile.
      for (const [id, at] of batch) if (!this.pending.has(id)) this.pending.set(id, at);
      throw err;
    }
    return batch.size;
  }
}

/** Writes the uses authentication noted, every contactFlushMs and once more on the way out. */
@Injectable()
export class ApiTokenUseFlusher extends BatchFlusher {
  constructor(uses: ApiTokenUses, @Inject(DB) db: Db, @Inject(COORDINATOR_CONFIG) config: CoordinatorConfig, @Inject(LOG) log: Logger) {
    super(uses, db, config.contactFlushMs, log, 'API token last uses not written; trying again');
  }
}
