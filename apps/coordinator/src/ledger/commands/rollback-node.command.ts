import { Command } from '@nestjs/cqrs';
import type { PublishResponse } from '#contracts';
import type { AdmitChanges } from '../ledger-ports.js';

export class RollbackNodeCommand extends Command<PublishResponse> {
  constructor(
    readonly node: string,
    readonly toVersion: number,
    readonly message: string,
    readonly actor: string,
    readonly expectedPosition?: number,
    /** Nodes the operator accepts although ineligible; only this rollback's node can matter. */
    readonly allowIneligible: readonly string[] = [],
    /** The caller's check of what the decision changes (a scoped token's). */
    readonly admit?: AdmitChanges,
  ) {
    super();
  }
}
