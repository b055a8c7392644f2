import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { keyThumbprint } from '#bundle';
import { DB, type Db } from '../../db/index.js';
import { KEYS, type SigningKeyStore } from '../../core/index.js';
import { ENROLMENT_PIN, type EnrolmentPin } from '../../tls/index.js';
import { LedgerWriter } from '../../ledger/index.js';
import { readTrustHead } from '../../trust/index.js';
import { issueSecret } from '../secrets.js';
import { IssueEnrolmentTokenCommand, type IssuedEnrolmentToken } from './issue-enrolment-token.command.js';

/**
 * Stores the token's hash with the thumbprint of the key the agent will meet (the trust head's
 * signer, not the key file's) and records the issue in the ledger, in one transaction; the token
 * carries that thumbprint and the pin of the TLS key served now, so a token made after a key change
 * carries the new ones.
 */
@CommandHandler(IssueEnrolmentTokenCommand)
export class IssueEnrolmentTokenHandler implements ICommandHandler<IssueEnrolmentTokenCommand, IssuedEnrolmentToken> {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(KEYS) private readonly keys: SigningKeyStore,
    private readonly ledger: LedgerWriter,
    @Inject(ENROLMENT_PIN) private readonly tlsPin: EnrolmentPin,
  ) {}

  async execute({ node, ttlSeconds, actor }: IssueEnrolmentTokenCommand): Promise<IssuedEnrolmentToken> {
    await this.keys.reloadIfChanged();
    const head = await readTrustHead(this.db.kysely);
    const thumbprint = head ? await keyThumbprint(this.keys.publicKey(head.signingKid)) : await this.keys.activeThumbprint();
    const s = issueSecret('fle');
    const now = new Date();
    const expires = new Date(now.getTime() + ttlSeconds * 1000);
    await this.db.kysely.transaction().execute(async (trx) => {
      await trx
        .insertInto('enrolment_tokens')
        .values({ id: s.id, node, secret_hash: s.hash, thumbprint, created_by: actor, created_at: now, expires_at: expires })
        .execute();
      await this.ledger.recordIdentity(trx, node, 'enrolment_token_issued', { node, token_id: s.id, expires_at: expires.toISOString() }, actor);
    });
    const pin = this.tlsPin();
    return { token: `${s.token}.${thumbprint}${pin ? `.${pin}` : ''}`, node, expires_at: expires.toISOString() };
  }
}
