import { Command } from '@nestjs/cqrs';
import type { RetireResponse } from '#contracts';
import type { AdmitChanges } from '../ledger-ports.js';

export class RetireNodeCommand extends Command<RetireResponse> {
  constructor(
    readonly node: string,
    readonly message: string,
    readonly actor: string,
    readonly expectedPosition?: number,
    /** Gone for good: its credentials are revoked with the retirement, in its transaction. */
    readonly lost = false,
    /** The caller's check of what the decision changes (a scoped token's). */
    readonly admit?: AdmitChanges,
  ) {
    super();
  }
}
