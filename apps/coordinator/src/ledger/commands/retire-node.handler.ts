import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { PublishResponse } from '#contracts';
import { LedgerWriter } from '../ledger-writer.js';
import { RetireNodeCommand } from './retire-node.command.js';

@CommandHandler(RetireNodeCommand)
export class RetireNodeHandler implements ICommandHandler<RetireNodeCommand, PublishResponse> {
  constructor(private readonly writer: LedgerWriter) {}

  execute(c: RetireNodeCommand): Promise<PublishResponse> {
    return this.writer.write({ actor: c.actor, expectedPosition: c.expectedPosition }, { type: 'retire_node', node: c.node, message: c.message });
  }
}
