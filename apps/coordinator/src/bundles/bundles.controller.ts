import { Controller, Get, Headers, HttpCode, Inject, Param, Post, Res } from '@nestjs/common';
import { sql } from 'kysely';
import type { FastifyReply } from 'fastify';
import { NodeName } from '#contracts';
import { DB, KEYS } from '../db/db.module.js';
import type { Db } from '../db/connect.js';
import { DomainError } from '../common/domain-error.js';
import { parseInput } from '../common/parse.js';
import { Access } from '../identity/auth.decorators.js';
import { bearerOf, parseSecret, secretMatches } from '../identity/secrets.js';
import { Metrics } from '../health/metrics.js';
import type { SigningKeyStore } from './signing-keys.js';

@Controller()
export class BundlesController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(KEYS) private readonly keys: SigningKeyStore,
    private readonly metrics: Metrics,
  ) {}

  /**
   * The poll path. Authentication and the head lookup are one indexed read, and nothing is signed
   * here: the JWS was signed when the version was stamped. A matching If-None-Match skips the body.
   */
  @Get('v1/nodes/:node/bundle')
  @Access('public')
  async bundle(
    @Param('node') node: string,
    @Headers('authorization') authorization: string | undefined,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    this.metrics.polls++;
    const token = bearerOf(authorization);
    const parsed = token ? parseSecret(token) : null;
    if (!parsed || parsed.kind !== 'fln') throw new DomainError('unauthenticated', 'a node credential is required: Authorization: Bearer <credential>');
    const name = parseInput(NodeName, node, 'path');
    const inm = ifNoneMatch?.trim() ?? '';
    const row = await this.db.kysely
      .selectFrom('node_credentials as c')
      .leftJoin('node_heads as h', (j) => j.on('h.node', '=', name))
      .select(['c.node', 'c.secret_hash', 'c.revoked_at', 'h.etag', sql<string | null>`CASE WHEN h.etag = ${inm} THEN NULL ELSE h.jws END`.as('jws')])
      .where('c.id', '=', parsed.id)
      .executeTakeFirst();
    const ok = secretMatches(parsed.secret, row?.secret_hash ?? null);
    if (!row || !ok || row.revoked_at) throw new DomainError('unauthenticated', 'node credential is unknown or revoked');
    if (row.node !== name) throw new DomainError('forbidden', `node credential of ${row.node} may not read the bundle of ${name}`);
    if (!row.etag) throw new DomainError('unknown_node', `nothing has been published for ${name} yet`, { node: name });
    reply.header('etag', row.etag).header('cache-control', 'no-cache');
    if (row.jws === null) {
      this.metrics.polls304++;
      void reply.status(304).send();
      return;
    }
    void reply.status(200).header('content-type', 'application/jose').send(row.jws);
  }

  @Get('.well-known/jwks.json')
  @Access('public')
  async jwks() {
    await this.keys.reloadIfChanged();
    return this.keys.jwks();
  }

  /** Adds a signing key; bundles stamped from now on carry its kid, older kids stay in the JWKS. */
  @Post('v1/keys/rotate')
  @HttpCode(201)
  @Access('admin')
  async rotate() {
    const kid = await this.keys.rotate();
    return { kid, jwks: this.keys.jwks() };
  }
}
