import { EventsHandler, type IEventHandler } from '@nestjs/cqrs';
import { LedgerAppended } from '../ledger/index.js';
import { MirrorWorker } from './mirror.worker.js';

/** The mirror follows the ledger: a committed append starts a run now rather than at the next tick. */
@EventsHandler(LedgerAppended)
export class FollowLedger implements IEventHandler<LedgerAppended> {
  constructor(private readonly worker: MirrorWorker) {}

  handle(): void {
    this.worker.kick();
  }
}
