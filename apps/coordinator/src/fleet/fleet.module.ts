import { Module } from '@nestjs/common';
import { LedgerModule } from '../ledger/ledger.module.js';
import { RecordReportHandler } from './commands/record-report.handler.js';
import { ReportsController } from './reports.controller.js';

/** What the nodes say about themselves: their reports and the state the fleet view derives from them. */
@Module({
  imports: [LedgerModule],
  controllers: [ReportsController],
  providers: [RecordReportHandler],
})
export class FleetModule {}
