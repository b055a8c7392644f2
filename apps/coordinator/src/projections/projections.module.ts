import { Module, type OnModuleInit } from '@nestjs/common';
import { LedgerModule, LedgerWriter } from '../ledger/index.js';
import { ReadModelProjection } from './project.js';
import { ProjectionsController } from './projections.controller.js';
import { QueriesController } from './queries.controller.js';
import { ViewsController } from './views.controller.js';

/**
 * The read models the ledger is projected into, the history queries over them and their rebuild.
 * The ledger writer knows them only as a projection this module registers with it.
 */
@Module({
  imports: [LedgerModule],
  controllers: [QueriesController, ViewsController, ProjectionsController],
})
export class ProjectionsModule implements OnModuleInit {
  constructor(private readonly writer: LedgerWriter) {}

  onModuleInit(): void {
    this.writer.projectInto(new ReadModelProjection());
  }
}
