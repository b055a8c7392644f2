/**
 * Published on the CQRS event bus after a transaction that appended to the ledger commits, never
 * inside it: whoever follows the ledger (the git mirror) may look now instead of at its next poll.
 */
export class LedgerAppended {
  constructor(readonly position: number) {}
}
