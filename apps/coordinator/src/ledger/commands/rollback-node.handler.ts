import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { PublishResponse } from '#contracts';
import { LedgerWriter } from '../ledger-writer.js';
import { RollbackNodeCommand } from './rollback-node.command.js';

@CommandHandler(RollbackNodeCommand)
export class RollbackNodeHandler implements ICommandHandler<RollbackNodeCommand, PublishResponse> {
  constructor(private readonly writer: LedgerWriter) {}

  execute(c: RollbackNodeCommand): Promise<PublishResponse> {
    return this.writer.write(
      { actor: c.actor, expectedPosition: c.expectedPosition, ...(c.admit ? { admit: c.admit } : {}) },
      { type: 'rollback_node', node: c.node, toVersion: c.toVersion, message: c.message, allowIneligible: c.allowIneligible },
    );
  }
}
