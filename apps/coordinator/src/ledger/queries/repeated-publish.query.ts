import { Query } from '@nestjs/cqrs';
import type { PublishResponse } from '#contracts';

/**
 * A publish request body sent again: answered without deciding it when it is the body this replica
 * published last and the ledger has not moved since (RepeatMemo), else null.
 */
export class RepeatedPublishQuery extends Query<PublishResponse | null> {
  constructor(readonly bodyDigest: string) {
    super();
  }
}
