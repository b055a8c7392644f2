import { Inject } from '@nestjs/common';
import { EventsHandler, type IEventHandler } from '@nestjs/cqrs';
import type { Logger } from 'pino';
import { LOG } from '../core/index.js';
import { DB, type Db } from '../db/index.js';
import { LedgerAppended } from '../ledger/index.js';
import { HeadBucketIndex } from './head-bucket-index.js';

/**
 * The head buckets follow this replica's appends: a committed publish brings a kept index forward at
 * once, so the bucket read of the operator's next `retectl publish` finds it current.
 */
@EventsHandler(LedgerAppended)
export class FollowLedgerWithHeadBuckets implements IEventHandler<LedgerAppended> {
  constructor(
    private readonly index: HeadBucketIndex,
    @Inject(DB) private readonly db: Db,
    @Inject(LOG) private readonly log: Logger,
  ) {}

  handle(): void {
    // A failure costs nothing but the time saved: the next read brings the index forward itself.
    this.index.follow(this.db.kysely).catch((err: unknown) => this.log.warn({ err }, 'head buckets not brought forward after an append'));
  }
}
