import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config.js';
import { LOG } from '../core/index.js';
import { DB, type Db, BatchFlusher } from '../db/index.js';
import { ContactLog } from './contact-log.js';

/** Writes the contacts polls noted, every contactFlushMs and once more on the way out. */
@Injectable()
export class ContactFlusher extends BatchFlusher {
  constructor(contacts: ContactLog, @Inject(DB) db: Db, @Inject(COORDINATOR_CONFIG) config: CoordinatorConfig, @Inject(LOG) log: Logger) {
    super(contacts, db, config.contactFlushMs, log, 'last contacts not written; trying again');
  }
}
