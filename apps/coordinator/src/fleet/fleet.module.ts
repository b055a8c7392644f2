import { Module } from '@nestjs/common';
import { LedgerModule } from '../ledger/ledger.module.js';
import { ReportsController } from './reports.controller.js';

/** What the nodes say about themselves: their reports and the state the fleet view derives from them. */
@Module({
  imports: [LedgerModule],
  controllers: [ReportsController],
})
export class FleetModule {}
