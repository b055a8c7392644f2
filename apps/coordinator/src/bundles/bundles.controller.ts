import { Controller, Get, Headers, Inject, Param, Res } from '@nestjs/common';
import { sql, type RawBuilder } from 'kysely';
import type { FastifyReply } from 'fastify';
import { NodeName } from '#contracts';
import { DB } from '../db/db.module.js';
import { KEYS, type SigningKeyStore } from './signing-keys.js';
import type { Db } from '../db/connect.js';
import { DomainError } from '../common/domain-error.js';
import { parseInput } from '../common/parse.js';
import { Access, Anonymous } from '../identity/auth.decorators.js';
import { bearerOf, parseSecret, secretMatches } from '../identity/secrets.js';
import { Metrics } from '../core/metrics.js';
import { AuthService, refusedNodeCredential } from '../identity/auth.service.js';

/** Every poll answer, 200 or 304, carries the latest signed checkpoint (base64 of the note): freshness costs no request and no signature. */
export const CHECKPOINT_HEADER = 'florete-checkpoint';

/**
 * RFC 9110 If-None-Match: `*` or a list of entity tags, compared weakly. Evaluated in the same
 * query as the lookup so a 304 never transfers the JWS from the database.
 */
function ifNoneMatchCondition(header: string | undefined): RawBuilder<boolean> {
  if (!header) return sql<boolean>`FALSE`;
  const tags = header.split(',').map((t) => t.trim().replace(/^W\//, '')).filter((t) => t.length > 0);
  if (tags.includes('*')) return sql<boolean>`h.etag IS NOT NULL`;
  if (tags.length === 0) return sql<boolean>`FALSE`;
  return sql<boolean>`h.etag IN (${sql.join(tags.slice(0, 16))})`;
}

@Controller()
export class BundlesController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(KEYS) private readonly keys: SigningKeyStore,
    private readonly metrics: Metrics,
    private readonly auth: AuthService,
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
    if (parsed?.kind === 'flt') {
      // A valid API token is known but not allowed here; only an invalid one is a 401.
      await this.auth.authenticate(authorization);
      throw new DomainError('forbidden', 'bundles are read only by the node they belong to, with its node credential');
    }
    if (!parsed || parsed.kind !== 'fln') throw new DomainError('unauthenticated', 'a node credential is required: Authorization: Bearer <credential>');
    const name = parseInput(NodeName, node, 'path');
    const matches = ifNoneMatchCondition(ifNoneMatch);
    const row = await this.db.kysely
      .selectFrom('node_credentials as c')
      // The credential's own node: the only head it may read, and the one a refusal speaks of.
      .leftJoin('node_heads as h', 'h.node', 'c.node')
      .select([
        'c.node',
        'c.secret_hash',
        'c.revoked_at',
        'c.revoked_reason',
        'h.version',
        'h.retired',
        'h.etag',
        sql<string | null>`CASE WHEN ${matches} THEN NULL ELSE h.jws END`.as('jws'),
        // Same round trip: the checkpoint is as new as the head it is served with.
        sql<string | null>`(SELECT note FROM ledger_checkpoint WHERE id = 1)`.as('checkpoint'),
      ])
      .where('c.id', '=', parsed.id)
      .executeTakeFirst();
    const ok = secretMatches(parsed.secret, row?.secret_hash ?? null);
    if (!row || !ok) throw new DomainError('unauthenticated', 'node credential is unknown or revoked');
    if (row.revoked_at) throw refusedNodeCredential(row.node, row.revoked_reason, row.retired ? row.version : null);
    if (row.node !== name) throw new DomainError('forbidden', `node credential of ${row.node} may not read the bundle of ${name}`);
    if (!row.etag) throw new DomainError('unknown_node', `nothing has been published for ${name} yet`, { node: name });
    reply.header('etag', row.etag).header('cache-control', 'no-cache');
    if (row.checkpoint) reply.header(CHECKPOINT_HEADER, Buffer.from(row.checkpoint, 'utf8').toString('base64'));
    if (row.jws === null) {
      this.metrics.polls304++;
      void reply.status(304).send();
      return;
    }
    void reply.status(200).header('content-type', 'application/jose').send(row.jws);
  }

  @Get('.well-known/jwks.json')
  @Anonymous()
  async jwks() {
    await this.keys.reloadIfChanged();
    return this.keys.jwks();
  }
}
