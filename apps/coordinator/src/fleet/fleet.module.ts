import { Global, Module } from '@nestjs/common';
import { INELIGIBLE_NODES, LedgerModule } from '../ledger/index.js';
import { RecordReportHandler } from './commands/record-report.handler.js';
import { ContactFlusher } from './contact-flusher.js';
import { ContactLog } from './contact-log.js';
import { ineligibleNodes } from './ineligible.repository.js';
import { ReportsController } from './reports.controller.js';

/**
 * What the nodes say about themselves: their reports, the last contacts their polls leave (written
 * in batches), and the state the fleet view derives from them. Global: the ledger below takes
 * which nodes are ineligible from here without importing this module.
 */
@Global()
@Module({
  imports: [LedgerModule],
  controllers: [ReportsController],
  providers: [
    RecordReportHandler,
    { provide: ContactLog, useFactory: () => new ContactLog() },
    ContactFlusher,
    { provide: INELIGIBLE_NODES, useValue: ineligibleNodes },
  ],
  exports: [ContactLog, INELIGIBLE_NODES],
})
export class FleetModule {}
