import { Module } from '@nestjs/common';
import { PublishTreeHandler } from './commands/publish-tree.handler.js';
import { RollbackNodeHandler } from './commands/rollback-node.handler.js';
import { LedgerController } from './ledger.controller.js';
import { LedgerWriter } from './ledger-writer.js';
import { RepeatedPublishHandler } from './queries/repeated-publish.handler.js';

/** The hash-chained ledger: the one writer, the publish commands and the ledger's own routes. */
@Module({
  controllers: [LedgerController],
  providers: [LedgerWriter, PublishTreeHandler, RollbackNodeHandler, RepeatedPublishHandler],
  exports: [LedgerWriter],
})
export class LedgerModule {}
