import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { DB, type Db } from '../../db/index.js';
import { LedgerWriter } from '../../ledger/index.js';
import { revokeLiveCredentials } from '../credentials.repository.js';
import { RevokeCredentialCommand } from './revoke-credential.command.js';

@CommandHandler(RevokeCredentialCommand)
export class RevokeCredentialHandler implements ICommandHandler<RevokeCredentialCommand, number> {
  constructor(
    @Inject(DB) private readonly db: Db,
    private readonly ledger: LedgerWriter,
  ) {}

  async execute({ node, actor }: RevokeCredentialCommand): Promise<number> {
    const revoked = await this.db.kysely.transaction().execute(async (trx) => {
      const ids = await revokeLiveCredentials(trx, node, 'revoked', new Date());
      if (ids.length > 0) await this.ledger.recordIdentity(trx, node, 'credential_revoked', { node, credential_ids: ids }, actor);
      return ids.length;
    });
    // Answered once every replica refuses the credential.
    if (revoked > 0) await this.ledger.settle();
    return revoked;
  }
}
