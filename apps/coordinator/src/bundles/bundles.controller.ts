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
import { ContactLog } from '../fleet/contact-log.js';
import { ifNoneMatchTags, PollCache } from './poll-cache.js';

/** Every poll answer, 200 or 304, carries the latest signed checkpoint (base64 of the note): freshness costs no request and no signature. */
export const CHECKPOINT_HEADER = 'florete-checkpoint';

/**
 * If-None-Match as SQL, evaluated in the same query as the lookup so a 304 that memory could not
 * answer still never transfers the JWS from the database.
 */
function ifNoneMatchCondition(tags: readonly string[]): RawBuilder<boolean> {
  if (tags.includes('*')) return sql<boolean>`h.etag IS NOT NULL`;
  if (tags.length === 0) return sql<boolean>`FALSE`;
  return sql<boolean>`h.etag IN (${sql.join([...tags])})`;
}

@Controller()
export class BundlesController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(KEYS) private readonly keys: SigningKeyStore,
    private readonly metrics: Metrics,
    private readonly auth: AuthService,
    private readonly cache: PollCache,
    private readonly contacts: ContactLog,
  ) {}

  /**
   * The poll path. An agent whose version is current is answered 304 from this replica's memory, with
   * no database work (PollCache, ChangeFeed); the poll is its contact, noted in memory and written in
   * batches (ContactLog). Anything else — a new version, a refusal, memory not current — is one
   * indexed read. Nothing is signed here: the JWS was signed when the version was stamped.
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
    const tags = ifNoneMatchTags(ifNoneMatch);
    const memory = this.cache.notModified(parsed.id, name, tags, (hash) => secretMatches(parsed.secret, hash));
    if (memory) {
      this.metrics.pollCache.hit();
      this.contacts.seen(name);
      reply.header('etag', memory.etag).header('cache-control', 'no-cache');
      if (memory.checkpoint) reply.header(CHECKPOINT_HEADER, Buffer.from(memory.checkpoint, 'utf8').toString('base64'));
      this.metrics.polls304++;
      void reply.status(304).send();
      return;
    }
    this.metrics.pollCache.miss();
    const matches = ifNoneMatchCondition(tags);
    const mark = this.cache.mark();
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
    this.cache.remember(mark, parsed.id, row);
    if (row.revoked_at) throw refusedNodeCredential(row.node, row.revoked_reason, row.retired ? row.version : null);
    if (row.node !== name) throw new DomainError('forbidden', `node credential of ${row.node} may not read the bundle of ${name}`);
    this.contacts.seen(name);
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
