import type { OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from './database.js';
import type { Db } from './connect.js';

/** What a batch flusher writes: everything noted in memory since its last flush, in few statements. */
export interface Batch {
  flush(db: Kysely<Database>): Promise<unknown>;
}

/**
 * Writes a batch kept in memory (node contacts, API token uses) every `everyMs` and once more on the
 * way out, one flush at a time; a failed flush keeps what it held for the next (the batch's own rule)
 * and says so with `failure`.
 */
export abstract class BatchFlusher implements OnModuleInit, OnApplicationShutdown {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> = Promise.resolve();

  protected constructor(
    private readonly batch: Batch,
    private readonly db: Db,
    private readonly everyMs: number,
    private readonly log: Logger,
    private readonly failure: string,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), this.everyMs);
    this.timer.unref();
  }

  flush(): Promise<unknown> {
    this.running = this.running.then(() => this.batch.flush(this.db.kysely).catch((err: Error) => this.log.warn({ err: err.message }, this.failure)));
    return this.running;
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }
}
