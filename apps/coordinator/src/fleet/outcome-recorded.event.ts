/**
 * Published on the CQRS event bus after a report that recorded a version's outcome commits: whoever
 * waits on nodes' outcomes (a rollout's gate) may look now instead of at its next tick.
 */
export class OutcomeRecorded {
  constructor(
    readonly node: string,
    readonly version: number,
  ) {}
}
