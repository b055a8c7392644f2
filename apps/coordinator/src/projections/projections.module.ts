import { Module, type OnModuleInit } from '@nestjs/common';
import { Metrics } from '../core/index.js';
import { LedgerModule, LedgerWriter } from '../ledger/index.js';
import { FollowLedgerWithHeadBuckets } from './follow-ledger.handler.js';
import { HeadBucketIndex } from './head-bucket-index.js';
import { ReadModelProjection } from './project.js';
import { ProjectionsController } from './projections.controller.js';
import { QueriesController } from './queries.controller.js';
import { ViewsController } from './views.controller.js';

/**
 * The read models the ledger is projected into, the history queries over them and their rebuild.
 * The ledger writer knows them only as a projection this module registers with it. The head buckets
 * are kept in memory, one index per replica, brought forward after each of its appends.
 */
@Module({
  imports: [LedgerModule],
  controllers: [QueriesController, ViewsController, ProjectionsController],
  providers: [
    {
      provide: HeadBucketIndex,
      inject: [Metrics],
      useFactory: (metrics: Metrics): HeadBucketIndex => {
        const index = new HeadBucketIndex();
        metrics.headBucketsPosition = () => index.position ?? -1;
        return index;
      },
    },
    FollowLedgerWithHeadBuckets,
  ],
})
export class ProjectionsModule implements OnModuleInit {
  constructor(private readonly writer: LedgerWriter) {}

  onModuleInit(): void {
    this.writer.projectInto(new ReadModelProjection());
  }
}
