import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Put } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import {
  ApiTokenRequest,
  EnrolmentTokenRequest,
  EnrolRequest,
  NodeName,
  WitnessKeyRequest,
  type ApiTokenInfo,
  type ApiTokenList,
  type ApiTokenResponse,
  type WhoamiResponse,
} from '#contracts';
import { z } from 'zod';
import { DB, type Db } from '../db/index.js';
import { KEYS, type SigningKeyStore } from '../core/index.js';
import { DomainError, parseInput, Access, Anonymous, CurrentPrincipal, actorOf, type Principal } from '../common/index.js';
import { createApiToken, listApiTokens, revokeApiToken, TOKEN_COLUMNS, tokenInfo } from './api-tokens.js';
import { ApiTokenUses } from './api-token-uses.js';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config.js';
import { EnrolNodeCommand } from './commands/enrol-node.command.js';
import { RegisterWitnessKeyCommand } from './commands/register-witness-key.command.js';
import { RevokeCredentialCommand } from './commands/revoke-credential.command.js';
import { IssueEnrolmentTokenCommand } from './commands/issue-enrolment-token.command.js';

const DEFAULT_ENROLMENT_TTL = 3600;
/** A token's id or its name, as `retectl token revoke` takes it. */
const ApiTokenRef = z.string().min(1).max(64);

@Controller('v1')
export class IdentityController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(KEYS) private readonly keys: SigningKeyStore,
    private readonly commands: CommandBus,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    private readonly uses: ApiTokenUses,
  ) {}

  @Post('enrolment-tokens')
  @Access('admin')
  async createEnrolmentToken(@Body() body: unknown, @CurrentPrincipal() who: Principal) {
    const req = parseInput(EnrolmentTokenRequest, body, 'body');
    return this.commands.execute(new IssueEnrolmentTokenCommand(req.node, req.ttl_seconds ?? DEFAULT_ENROLMENT_TTL, actorOf(who)));
  }

  /** The enrolment token is the authentication: single use, unexpired, compared in constant time. */
  @Post('enrol')
  @Anonymous()
  async enrol(@Body() body: unknown) {
    const enrolled = await this.commands.execute(new EnrolNodeCommand(parseInput(EnrolRequest, body, 'body')));
    await this.keys.reloadIfChanged();
    return {
      node: enrolled.node,
      credential: enrolled.credential,
      jwks: this.keys.jwks(),
      briefing: enrolled.briefing,
      installed: enrolled.installed,
      owned: enrolled.owned,
    };
  }

  /**
   * An enrolled agent registers the cosigning key it made (an agent enrolled before agents had
   * keys, or one whose enrolment answer was lost): once per credential, recorded in the ledger.
   */
  @Put('nodes/:node/witness-key')
  @Access('node')
  async witnessKey(@Param('node') node: string, @Body() body: unknown, @CurrentPrincipal() who: Principal) {
    const req = parseInput(WitnessKeyRequest, body, 'body');
    if (who.kind !== 'node') throw new DomainError('forbidden', 'this route is for node credentials');
    return this.commands.execute(new RegisterWitnessKeyCommand(parseInput(NodeName, node, 'path'), who.credentialId, req.public_key));
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

  /** Without ttl_seconds or no_expiry the token expires after the configured default (FLORETE_API_TOKEN_TTL), which the answer shows. */
  @Post('api-tokens')
  @Access('admin')
  async createApiToken(@Body() body: unknown, @CurrentPrincipal() who: Principal): Promise<ApiTokenResponse> {
    const req = parseInput(ApiTokenRequest, body, 'body');
    return createApiToken(this.db.kysely, this.keys, req, this.config.apiTokenTtlSeconds, actorOf(who));
  }

  /** Every token, revoked and expired ones too, never a secret or its hash; last uses include this replica's not yet written. */
  @Get('api-tokens')
  @Access('admin')
  async listApiTokens(): Promise<ApiTokenList> {
    const now = new Date();
    return { items: (await listApiTokens(this.db.kysely)).map((r) => tokenInfo(r, now, this.uses.unwritten(r.id))) };
  }

  /** By id or by name (see revokeApiToken); answers the token as revoked. */
  @Delete('api-tokens/:token')
  @HttpCode(200)
  @Access('admin')
  async revokeApiToken(@Param('token') ref: string, @CurrentPrincipal() who: Principal): Promise<ApiTokenInfo> {
    const name = parseInput(ApiTokenRef, ref, 'path');
    const now = new Date();
    const row = await this.db.kysely.transaction().execute((trx) => revokeApiToken(trx, this.keys, name, actorOf(who), now));
    return tokenInfo(row, now, this.uses.unwritten(row.id));
  }

  /** The API token this request was made with: what a client shows as "who am I, until when, over which nodes". */
  @Get('whoami')
  @Access('reader')
  async whoami(@CurrentPrincipal() who: Principal): Promise<WhoamiResponse> {
    if (who.kind !== 'api') throw new DomainError('forbidden', 'whoami answers API tokens');
    const row = await this.db.kysely.selectFrom('api_tokens').select(TOKEN_COLUMNS).where('id', '=', who.id).executeTakeFirstOrThrow();
    const info = tokenInfo(row, new Date());
    return {
      id: info.id,
      name: info.name,
      role: info.role,
      created_at: info.created_at,
      created_by: info.created_by,
      expires_at: info.expires_at,
      scope: info.scope,
    };
  }
}
