import { Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { z } from 'zod';
import { TrustChainQuery, type KeyRotationResponse, type TrustChainResponse } from '#contracts';
import { DB, type Db, type ChangeFeed, CHANGE_FEED } from '../db/index.js';
import { KEYS, type SigningKeyStore } from '../core/index.js';
import { parseInput, Access, Anonymous, CurrentPrincipal, actorOf, type Principal } from '../common/index.js';
import { changeKeys, type KeyRequest } from './key-change.js';
import { readTrustChain, readTrustHead } from './trust.repository.js';

const Kid = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be a key id (base64url)');

@Controller()
export class TrustController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(KEYS) private readonly keys: SigningKeyStore,
    @Inject(CHANGE_FEED) private readonly feed: ChangeFeed,
  ) {}

  /** The signed trust versions, public like the JWKS: an agent walks them from the version it pinned. */
  @Get('v1/trust')
  @Anonymous()
  async chain(@Query() query: unknown): Promise<TrustChainResponse> {
    const { after = 0 } = parseInput(TrustChainQuery, query, 'query');
    const head = await readTrustHead(this.db.kysely);
    return { head: head?.version ?? 1, versions: await readTrustChain(this.db.kysely, after) };
  }

  /** A new signing key: a new trust version signed by the old key, and every node head moved to the new one. */
  @Post('v1/keys/rotate')
  @HttpCode(201)
  @Access('admin')
  rotate(@CurrentPrincipal() who: Principal): Promise<KeyRotationResponse> {
    return this.change({ kind: 'rotate' }, who);
  }

  /** A trust version without the key; agents refuse anything it signs. Revoking the signer also rotates. */
  @Post('v1/keys/:kid/revoke')
  @HttpCode(201)
  @Access('admin')
  revoke(@Param('kid') kid: string, @CurrentPrincipal() who: Principal): Promise<KeyRotationResponse> {
    return this.change({ kind: 'revoke', kid: parseInput(Kid, kid, 'path') }, who);
  }

  private async change(request: KeyRequest, who: Principal): Promise<KeyRotationResponse> {
    const result = await changeKeys(this.db.kysely, this.keys, request, actorOf(who));
    // Moved heads have new ETags: every replica's memory drops the old ones before the answer.
    await this.feed.settle();
    return { ...result, jwks: this.keys.jwks() };
  }
}
