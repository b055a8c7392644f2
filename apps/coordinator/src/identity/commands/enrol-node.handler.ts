import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { DB, type Db } from '../../db/index.js';
import { DomainError } from '../../common/index.js';
import { LedgerWriter } from '../../ledger/index.js';
import { recordEnrolmentStatus } from '../enrolment-status.repository.js';
import { briefingFor } from '../briefing.js';
import { insertCredential, lockEnrolmentToken, markEnrolmentTokenUsed, revokeLiveCredentials } from '../credentials.repository.js';
import { enrolmentTokenRefusal } from '../enrolment.rules.js';
import { issueSecret, parseSecret, secretMatches } from '../secrets.js';
import { writeWitnessKey } from '../witness-keys.repository.js';
import { EnrolNodeCommand, type Enrolled } from './enrol-node.command.js';

@CommandHandler(EnrolNodeCommand)
export class EnrolNodeHandler implements ICommandHandler<EnrolNodeCommand, Enrolled> {
  constructor(
    @Inject(DB) private readonly db: Db,
    private readonly ledger: LedgerWriter,
  ) {}

  async execute({ request: req }: EnrolNodeCommand): Promise<Enrolled> {
    const parsed = parseSecret(req.token);
    if (!parsed || parsed.kind !== 'fle') throw new DomainError('invalid_enrolment_token', 'enrolment token is malformed');
    const now = new Date();
    const credential = issueSecret('fln');
    const enrolled = await this.db.kysely.transaction().execute(async (trx) => {
      const row = await lockEnrolmentToken(trx, parsed.id);
      const ok = secretMatches(parsed.secret, row?.secret_hash ?? null);
      if (!row || !ok) throw new DomainError('invalid_enrolment_token', 'enrolment token is unknown');
      const refusal = enrolmentTokenRefusal(row, parsed, now);
      if (refusal) throw new DomainError('invalid_enrolment_token', refusal);
      await markEnrolmentTokenUsed(trx, row.id, now);
      // Enrolling again revokes what the node held before: one live credential per node.
      await revokeLiveCredentials(trx, row.node, 'enrolled_again', now);
      await insertCredential(trx, { id: credential.id, node: row.node, secret_hash: credential.hash, created_at: now });
      const briefing = briefingFor({ tokenNode: row.node, claimedNode: req.node, profile: req.profile, now });
      const recovery = await recordEnrolmentStatus(trx, row.node, { at: now, profile: req.profile, inventory: req.inventory, briefing });
      const position = await this.ledger.recordIdentity(
        trx,
        row.node,
        'node_enrolled',
        {
          node: row.node,
          credential_id: credential.id,
          token_id: row.id,
          hostname: req.profile.hostname,
          briefing: briefing.outcome,
          // The agent's cosigning key for this enrolment, in the ledger with it (C2SP tlog-cosignature).
          ...(req.witness_key ? { witness_key: req.witness_key } : {}),
        },
        `node:${row.node}`,
      );
      if (req.witness_key)
        await writeWitnessKey(trx, { node: row.node, public_key: req.witness_key, credential_id: credential.id, registered_at: now, position });
      return { node: row.node, credential: credential.token, briefing, ...recovery };
    });
    // The credential it replaced is refused by every replica before the new one is handed out.
    await this.ledger.settle();
    return enrolled;
  }
}
