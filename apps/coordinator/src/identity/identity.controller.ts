import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ApiTokenRequest, EnrolmentTokenRequest, EnrolRequest, NodeName } from '#contracts';
import { DB } from '../db/db.module.js';
import { ENROLMENT_PIN, type EnrolmentPin } from '../tls/enrolment-pin.js';
import { KEYS, type SigningKeyStore } from '../bundles/signing-keys.js';
import type { Db } from '../db/connect.js';
import { DomainError } from '../common/domain-error.js';
import { parseInput } from '../common/parse.js';
import { LedgerWriter } from '../ledger/ledger-writer.js';
import { Access, Anonymous, CurrentPrincipal } from './auth.decorators.js';
import { actorOf, type Principal } from './principal.js';
import { issueSecret } from './secrets.js';
import { issueApiToken } from './api-tokens.js';
import { EnrolNodeCommand } from './commands/enrol-node.command.js';
import { RevokeCredentialCommand } from './commands/revoke-credential.command.js';
import { keyThumbprint } from '#bundle';
import { readTrustHead } from '../trust/trust.repository.js';

const DEFAULT_ENROLMENT_TTL = 3600;

@Controller('v1')
export class IdentityController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(KEYS) private readonly keys: SigningKeyStore,
    private readonly ledger: LedgerWriter,
    private readonly commands: CommandBus,
    @Inject(ENROLMENT_PIN) private readonly tlsPin: EnrolmentPin,
  ) {}

  @Post('enrolment-tokens')
  @Access('admin')
  async createEnrolmentToken(@Body() body: unknown, @CurrentPrincipal() who: Principal) {
    const req = parseInput(EnrolmentTokenRequest, body, 'body');
    await this.keys.reloadIfChanged();
    // The trust head's signer, not the key file's: that is the key the agent will meet.
    const head = await readTrustHead(this.db.kysely);
    const thumbprint = head ? await keyThumbprint(this.keys.publicKey(head.signingKid)) : await this.keys.activeThumbprint();
    const s = issueSecret('fle');
    const now = new Date();
    const expires = new Date(now.getTime() + (req.ttl_seconds ?? DEFAULT_ENROLMENT_TTL) * 1000);
    await this.db.kysely.transaction().execute(async (trx) => {
      await trx
        .insertInto('enrolment_tokens')
        .values({ id: s.id, node: req.node, secret_hash: s.hash, thumbprint, created_by: actorOf(who), created_at: now, expires_at: expires })
        .execute();
      await this.ledger.recordIdentity(trx, req.node, 'enrolment_token_issued', { node: req.node, token_id: s.id, expires_at: expires.toISOString() }, actorOf(who));
    });
    // The pin of the key served now: a token made after a key change carries the new one.
    const pin = this.tlsPin();
    return { token: `${s.token}.${thumbprint}${pin ? `.${pin}` : ''}`, node: req.node, expires_at: expires.toISOString() };
  }

  /** The enrolment token is the authentication: single use, unexpired, compared in constant time. */
  @Post('enrol')
  @Anonymous()
  async enrol(@Body() body: unknown) {
    const enrolled = await this.commands.execute(new EnrolNodeCommand(parseInput(EnrolRequest, body, 'body')));
    await this.keys.reloadIfChanged();
    return { node: enrolled.node, credential: enrolled.credential, jwks: this.keys.jwks(), briefing: enrolled.briefing, installed: enrolled.installed };
  }

  @Delete('nodes/:node/credential')
  @HttpCode(200)
  @Access('admin')
  async revoke(@Param('node') node: string, @CurrentPrincipal() who: Principal) {
    const name = parseInput(NodeName, node, 'path');
    const revoked = await this.commands.execute(new RevokeCredentialCommand(name, actorOf(who)));
    if (revoked === 0) throw new DomainError('not_found', `node ${name} holds no live credential`, { node: name });
    return { node: name, revoked };
  }

  @Post('api-tokens')
  @Access('admin')
  async createApiToken(@Body() body: unknown, @CurrentPrincipal() who: Principal) {
    const req = parseInput(ApiTokenRequest, body, 'body');
    return this.db.kysely.transaction().execute((trx) => issueApiToken(trx, this.keys, req, actorOf(who)));
  }

  @Get('api-tokens')
  @Access('admin')
  async listApiTokens() {
    const rows = await this.db.kysely.selectFrom('api_tokens').select(['id', 'name', 'role', 'created_at', 'revoked_at']).orderBy('created_at').execute();
    return { items: rows.map((r) => ({ ...r, created_at: new Date(r.created_at).toISOString(), revoked_at: r.revoked_at ? new Date(r.revoked_at).toISOString() : null })) };
  }
}
