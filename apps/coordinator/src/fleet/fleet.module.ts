import { Module } from '@nestjs/common';
import { LedgerModule } from '../ledger/ledger.module.js';
import { RecordReportHandler } from './commands/record-report.handler.js';
import { ContactFlusher } from './contact-flusher.js';
import { ContactLog } from './contact-log.js';
import { ReportsController } from './reports.controller.js';

/**
 * What the nodes say about themselves: their reports, the last contacts their polls leave (written
 * in batches), and the state the fleet view derives from them.
 */
@Module({
  imports: [LedgerModule],
  controllers: [ReportsController],
  providers: [RecordReportHandler, { provide: ContactLog, useFactory: () => new ContactLog() }, ContactFlusher],
  exports: [ContactLog],
})
export class FleetModule {}
