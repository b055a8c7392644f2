import { QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { PublishResponse } from '#contracts';
import { LedgerWriter } from '../ledger-writer.js';
import { RepeatedPublishQuery } from './repeated-publish.query.js';

@QueryHandler(RepeatedPublishQuery)
export class RepeatedPublishHandler implements IQueryHandler<RepeatedPublishQuery, PublishResponse | null> {
  constructor(private readonly writer: LedgerWriter) {}

  execute({ bodyDigest }: RepeatedPublishQuery): Promise<PublishResponse | null> {
    return this.writer.repeated(bodyDigest);
  }
}
