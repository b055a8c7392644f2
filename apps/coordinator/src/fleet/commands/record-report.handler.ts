import { Inject, Optional } from '@nestjs/common';
import { CommandHandler, EventBus, type ICommandHandler } from '@nestjs/cqrs';
import { OutcomeRecorded } from '../outcome-recorded.event.js';
import { DB, type Db } from '../../db/index.js';
import { revokeLiveCredentials } from '../../identity/index.js';
import { LedgerWriter } from '../../ledger/index.js';
import { readRetirementHead, recordOutcome, recordReportStatus } from '../reports.repository.js';
import { confirmsRetirement, reportedOutcome } from '../report.rules.js';
import { RecordReportCommand } from './record-report.command.js';

/**
 * Reports are frequent and are not ledger events: they update the node's status row in place, and
 * record a version's outcome only when it changes. A node that confirms its retirement has its
 * credential revoked here, the last thing it was allowed to do, and that revocation is recorded.
 */
@CommandHandler(RecordReportCommand)
export class RecordReportHandler implements ICommandHandler<RecordReportCommand, void> {
  constructor(
    @Inject(DB) private readonly db: Db,
    private readonly ledger: LedgerWriter,
    @Optional() private readonly events?: EventBus,
  ) {}

  async execute({ node, report: r }: RecordReportCommand): Promise<void> {
    const now = new Date();
    const outcome = reportedOutcome(r);
    const revokedAny = await this.db.kysely.transaction().execute(async (trx): Promise<boolean> => {
      await recordReportStatus(trx, node, r, now);
      if (outcome) await recordOutcome(trx, node, outcome, r.activation, now);
      const head = await readRetirementHead(trx, node);
      if (!head || !confirmsRetirement(head, r)) return false;
      // Only credentials the node held when it was retired: one enrolled since is the operator bringing
      // the node back, and revoking it at its first report would retire the node a second time.
      const revoked = await revokeLiveCredentials(trx, node, 'retired', now, head.updated_at);
      if (revoked.length > 0)
        await this.ledger.recordIdentity(trx, node, 'credential_revoked', { node, credential_ids: revoked, reason: 'retired' }, `node:${node}`);
      return revoked.length > 0;
    });
    if (revokedAny) await this.ledger.settle();
    // Committed: a rollout gate this outcome completes opens now, not at the driver's next tick.
    if (outcome) this.events?.publish(new OutcomeRecorded(node, outcome.version));
    if (r.result === 'reverted' && r.target_version !== undefined && r.active_version > 0)
      await this.recordRevert(node, r.target_version, r.active_version, r.error ?? 'reverted');
  }

  /**
   * A node reverted on its own: a rollback to the version it went back to, as a new higher version,
   * so the ledger, the mirror and the node agree (its content is what the node runs: it takes it
   * without a restart). The node is the actor. A head that moved on since, or a report repeated,
   * appends nothing (the decider's rule).
   */
  private async recordRevert(node: string, from: number, to: number, reason: string): Promise<void> {
    await this.ledger.write(
      { actor: `node:${node}` },
      {
        type: 'rollback_node',
        node,
        toVersion: to,
        message: `${node} reverted version ${from} to ${to}: ${reason}`.slice(0, 4096),
        // Its own earlier content: accepting it cannot give an ineligible node anything new.
        allowIneligible: [node],
        reverted: { version: from, reason },
      },
    );
  }
}
