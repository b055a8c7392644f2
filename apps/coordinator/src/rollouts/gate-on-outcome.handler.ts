import { EventsHandler, type IEventHandler } from '@nestjs/cqrs';
import { OutcomeRecorded } from '../fleet/index.js';
import { RolloutDriver } from './rollout-driver.js';

/** A recorded outcome may open a running rollout's gate: the driver looks now rather than at its next tick. */
@EventsHandler(OutcomeRecorded)
export class GateOnOutcome implements IEventHandler<OutcomeRecorded> {
  constructor(private readonly driver: RolloutDriver) {}

  handle(): void {
    this.driver.nudge();
  }
}
