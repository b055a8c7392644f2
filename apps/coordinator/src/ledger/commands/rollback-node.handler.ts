import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { PublishResponse } from '#contracts';
import { loadIneligible } from '../../fleet/ineligible.repository.js';
import { loadHeads, loadVersion } from '../../projections/heads.repository.js';
import { LedgerWriter } from '../ledger-writer.js';
import { RollbackNodeCommand } from './rollback-node.command.js';

@CommandHandler(RollbackNodeCommand)
export class RollbackNodeHandler implements ICommandHandler<RollbackNodeCommand, PublishResponse> {
  constructor(private readonly writer: LedgerWriter) {}

  execute(c: RollbackNodeCommand): Promise<PublishResponse> {
    return this.writer.write({ actor: c.actor, expectedPosition: c.expectedPosition }, async (trx) => ({
      heads: await loadHeads(trx, [c.node]),
      command: {
        type: 'rollback_node',
        node: c.node,
        toVersion: c.toVersion,
        message: c.message,
        target: await loadVersion(trx, c.node, c.toVersion),
        ineligible: await loadIneligible(trx, [c.node]),
        allowIneligible: new Set(c.allowIneligible),
      },
    }));
  }
}
