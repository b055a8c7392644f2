import { Module } from '@nestjs/common';
import { QueriesController } from './queries.controller.js';

/** The read models the ledger is projected into, and the history queries over them. */
@Module({
  controllers: [QueriesController],
})
export class ProjectionsModule {}
