import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config.js';
import { LOG } from '../core/core.module.js';
import { DB } from '../db/db.module.js';
import type { Db } from '../db/connect.js';
import { BatchFlusher } from '../db/batch-flusher.js';
import { ContactLog } from './contact-log.js';

/** Writes the contacts polls noted, every contactFlushMs and once more on the way out. */
@Injectable()
export class ContactFlusher extends BatchFlusher {
  constructor(contacts: ContactLog, @Inject(DB) db: Db, @Inject(COORDINATOR_CONFIG) config: CoordinatorConfig, @Inject(LOG) log: Logger) {
    super(contacts, db, config.contactFlushMs, log, 'last contacts not written; trying again');
  }
}
