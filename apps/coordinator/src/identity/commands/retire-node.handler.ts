import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Transaction } from 'kysely';
import type { RetireResponse } from '#contracts';
import { DomainError } from '../../common/index.js';
import { DB, type Db, type Database } from '../../db/index.js';
import { RetireNodeCommand, LedgerWriter, readLedgerHead } from '../../ledger/index.js';
import { revokeLiveCredentials } from '../credentials.repository.js';

/**
 * A retirement is the ledger's; revoking a lost node's credentials in its transaction is identity's,
 * so the handler that joins them stands here, above both.
 */
@CommandHandler(RetireNodeCommand)
export class RetireNodeHandler implements ICommandHandler<RetireNodeCommand, RetireResponse> {
  constructor(
    private readonly writer: LedgerWriter,
    @Inject(DB) private readonly db: Db,
  ) {}

  async execute(c: RetireNodeCommand): Promise<RetireResponse> {
    const admit = c.admit ? { admit: c.admit } : {};
    if (!c.lost)
      return this.writer.write({ actor: c.actor, expectedPosition: c.expectedPosition, ...admit }, { type: 'retire_node', node: c.node, message: c.message });
    // A lost node never applies its final set, so nothing waits for its report: its credentials are
    // revoked in the retirement's own transaction, recorded next to it in the node's identity
    // stream with the publish that retired it. Either both commit or neither does.
    let revoked: string[] = [];
    const revoke = async (trx: Transaction<Database>, publishId: string | null) => {
      revoked = await revokeLiveCredentials(trx, c.node, 'lost', new Date());
      if (revoked.length > 0)
        await this.writer.recordIdentity(
          trx,
          c.node,
          'credential_revoked',
          { node: c.node, credential_ids: revoked, reason: 'lost', publish_id: publishId },
          c.actor,
        );
    };
    try {
      const result = await this.writer.write(
        { actor: c.actor, expectedPosition: c.expectedPosition, alongside: (trx, r) => revoke(trx, r.publish_id), ...admit },
        { type: 'retire_node', node: c.node, message: c.message },
      );
      return { ...result, revoked_credentials: revoked };
    } catch (err) {
      // Retired earlier, by a plain retire its agent never got to apply: the node is lost after all.
      if (!(err instanceof DomainError && err.code === 'node_retired')) throw err;
      await this.db.kysely.transaction().execute((trx) => revoke(trx, null));
      if (revoked.length === 0)
        throw new DomainError('node_retired', `${err.message} and holds no live credential: nothing is left to revoke`, { node: c.node });
      // Answered once every replica refuses the credentials.
      await this.writer.settle();
      const head = await readLedgerHead(this.db.kysely);
      return { publish_id: null, position: head.position, changed: [], unchanged: 1, revoked_credentials: revoked };
    }
  }
}
