import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config.js';
import { LOG } from '../core/core.module.js';
import { DB } from '../db/db.module.js';
import type { Db } from '../db/connect.js';
import { ContactLog } from './contact-log.js';

/** Writes the contacts polls noted, every contactFlushMs and once more on the way out. */
@Injectable()
export class ContactFlusher implements OnModuleInit, OnApplicationShutdown {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly contacts: ContactLog,
    @Inject(DB) private readonly db: Db,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    @Inject(LOG) private readonly log: Logger,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), this.config.contactFlushMs);
    this.timer.unref();
  }

  /** One flush at a time; a failed one keeps its contacts for the next. */
  flush(): Promise<unknown> {
    this.running = this.running.then(() => this.contacts.flush(this.db.kysely).catch((err: Error) => this.log.warn({ err: err.message }, 'last contacts not written; trying again')));
    return this.running;
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }
}
