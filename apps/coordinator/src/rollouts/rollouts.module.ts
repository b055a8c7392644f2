import { Module } from '@nestjs/common';
import { LedgerModule } from '../ledger/index.js';
import { RolloutDriver } from './rollout-driver.js';
import { GateOnOutcome } from './gate-on-outcome.handler.js';
import { RolloutsController } from './rollouts.controller.js';

/** Publishes released in waves: their routes and the driver that releases the next wave when a gate opens. */
@Module({
  imports: [LedgerModule],
  controllers: [RolloutsController],
  providers: [RolloutDriver, GateOnOutcome],
})
export class RolloutsModule {}
