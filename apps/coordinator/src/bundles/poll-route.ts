import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { sql } from 'kysely';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { NODE_NAME_PATTERN, NodeName } from '#contracts';
import { DB } from '../db/db.module.js';
import { LOG } from '../core/core.module.js';
import type { Db } from '../db/connect.js';
import { DomainError } from '../common/domain-error.js';
import { parseInput } from '../common/parse.js';
import { sendProblem, toProblem } from '../common/problem.filter.js';
import { bearerOf, parseSecret, secretMatches, type ParsedSecret } from '../identity/secrets.js';
import { Metrics } from '../core/metrics.js';
import { AuthService, refusedNodeCredential } from '../identity/auth.service.js';
import { ContactLog } from '../fleet/contact-log.js';
import { checkpointHeader, etagMatches, ifNoneMatchTags, PollCache } from './poll-cache.js';
import { KEYS, type SigningKeyStore } from './signing-keys.js';
import { signHeadBundle } from './head-bundle.js';
import { requestIdOf } from '../common/request-id.js';

/** Every poll answer, 200 or 304, carries the latest signed checkpoint (base64 of the note): freshness costs no request and no signature. */
export const CHECKPOINT_HEADER = 'florete-checkpoint';

/** The poll route, as Fastify's router writes it. */
export const POLL_PATH = '/v1/nodes/:node/bundle';
const POLL_ROUTE = `GET ${POLL_PATH}`;
const PREFIX = '/v1/nodes/';
const SUFFIX = '/bundle';

type PollRequest = FastifyRequest<{ Params: { node: string } }>;

/** The headers of every poll answer, 304 or 200, from memory or from the database. */
function pollHeaders(etag: string, checkpoint: string | null): Record<string, string> {
  const headers: Record<string, string> = { etag, 'cache-control': 'no-cache' };
  if (checkpoint) headers[CHECKPOINT_HEADER] = checkpoint;
  return headers;
}

/**
 * The poll path: `GET /v1/nodes/{node}/bundle`, the one request every node makes every few seconds.
 *
 * An agent whose version is current is answered 304 from this replica's memory, with no database
 * work (PollCache, ChangeFeed); the poll is its contact, noted in memory and written in batches
 * (ContactLog). Anything else (a new version, a refusal, memory not current) is one indexed read.
 * A new version is signed here, when its node fetches it (signHeadBundle): a publish stamps heads and
 * signs nothing, and each bundle is fetched about once, by the node it belongs to.
 *
 * Two doors, one answer:
 * - the front door sits on the HTTP server, before Fastify: a plain, well-formed poll that memory can
 *   answer 304 is answered there, with what the route would have sent (ETag, Cache-Control, the
 *   checkpoint) and counted in the same metrics. At fleet scale nearly every request is this one,
 *   and the framework's hooks (Nest's six, middleware, ours) were most of its cost;
 * - everything else (a miss, a new version, a refusal, an odd URL, a body) goes on to the Fastify
 *   route, which has the hardening hooks, the request log and problem+json errors. It is a plain
 *   Fastify route, not a Nest controller: the poll authenticates itself with the node credential
 *   it carries, so Nest's guard and parameter decorators would add nothing but their cost.
 */
@Injectable()
export class PollRoute implements OnApplicationShutdown {
  private closing = false;

  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(KEYS) private readonly keys: SigningKeyStore,
    @Inject(LOG) private readonly log: Logger,
    private readonly metrics: Metrics,
    private readonly auth: AuthService,
    private readonly cache: PollCache,
    private readonly contacts: ContactLog,
  ) {}

  /** Nest's own door answers 503 once shutdown begins; this one then sends everything on to it. */
  onApplicationShutdown(): void {
    this.closing = true;
  }

  register(fastify: FastifyInstance): void {
    this.frontDoor(fastify.server as Server);
    fastify.get(POLL_PATH, (req: PollRequest, reply: FastifyReply) => {
      this.metrics.polls++;
      try {
        const token = bearerOf(req.headers.authorization);
        const credential = token ? parseSecret(token) : null;
        if (credential?.kind !== 'fln') return this.answering(reply, this.refuse(req, credential));
        const name = parseInput(NodeName, req.params.node, 'path');
        const tags = ifNoneMatchTags(req.headers['if-none-match']);
        const headers = this.notModified(credential, name, tags);
        if (!headers) return this.answering(reply, this.fromDatabase(reply, credential, name, tags));
        void reply.headers(headers).status(304).send();
      } catch (err) {
        sendProblem(reply, toProblem(err, this.log));
      }
      // Answered synchronously: Fastify wants nothing returned then (a returned reply is sent again).
      return undefined;
    });
  }

  /** Puts the front door before the server's own request listeners (Fastify's), for HTTP and HTTPS alike. */
  private frontDoor(server: Server): void {
    const behind = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
    server.removeAllListeners('request');
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (this.answeredAtTheDoor(req, res)) return;
      for (const listener of behind) listener.call(server, req, res);
    });
  }

  /**
   * Only the plainest poll: GET, the path exactly as a node sends it (no escapes, no query), no
   * body, a well-formed node credential, and memory sure of a 304. Anything unusual is declined
   * before anything is sent, so the route answers it the full way.
   */
  private answeredAtTheDoor(req: IncomingMessage, res: ServerResponse): boolean {
    const url = req.url;
    if (this.closing || req.method !== 'GET' || url === undefined || !url.startsWith(PREFIX) || !url.endsWith(SUFFIX)) return false;
    const name = url.slice(PREFIX.length, url.length - SUFFIX.length);
    if (!NODE_NAME_PATTERN.test(name) || req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) return false;
    const started = process.hrtime.bigint();
    const token = bearerOf(req.headers.authorization);
    const credential = token ? parseSecret(token) : null;
    if (credential?.kind !== 'fln') return false;
    const headers = this.notModified(credential, name, ifNoneMatchTags(req.headers['if-none-match']));
    if (!headers) return false;
    // Counted here only once answered: a poll sent on to the route is counted there.
    this.metrics.polls++;
    res.writeHead(304, headers).end();
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    this.metrics.observe(POLL_ROUTE, 304, seconds);
    if (this.log.isLevelEnabled('debug')) this.log.debug({ req_id: requestIdOf(req), method: 'GET', path: url, client: req.socket.remoteAddress, status: 304, ms: Math.round(seconds * 1000) }, 'request');
    return true;
  }

  /** The headers of a 304 memory can answer with certainty, counted as one; null when it cannot. */
  private notModified(credential: ParsedSecret, name: string, tags: readonly string[]): Record<string, string> | null {
    const memory = this.cache.notModified(credential.id, name, tags, (hash) => secretMatches(credential.secret, hash));
    if (!memory) return null;
    this.metrics.pollCache.hit();
    this.metrics.polls304++;
    this.contacts.seen(name);
    return pollHeaders(memory.etag, memory.checkpoint);
  }

  /** Sends what `work` throws as a problem; the reply is returned for Fastify, as an async route must. */
  private async answering(reply: FastifyReply, work: Promise<void>): Promise<FastifyReply> {
    try {
      await work;
    } catch (err) {
      sendProblem(reply, toProblem(err, this.log));
    }
    return reply;
  }

  /** A poll without a node credential: a valid API token is forbidden here, anything else unauthenticated. */
  private async refuse(req: PollRequest, credential: ParsedSecret | null): Promise<void> {
    if (credential?.kind === 'flt') {
      // A valid API token is known but not allowed here; only an invalid one is a 401.
      await this.auth.authenticate(req.headers.authorization);
      throw new DomainError('forbidden', 'bundles are read only by the node they belong to, with its node credential');
    }
    throw new DomainError('unauthenticated', 'a node credential is required: Authorization: Bearer <credential>');
  }

  private async fromDatabase(reply: FastifyReply, credential: ParsedSecret, name: string, tags: readonly string[]): Promise<void> {
    this.metrics.pollCache.miss();
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
        'h.set_digest',
        'h.retired',
        'h.artifacts',
        'h.publish_id',
        'h.position',
        'h.updated_at',
        'h.kid',
        'h.etag',
        // Same round trip: the checkpoint is as new as the head it is served with.
        sql<string | null>`(SELECT note FROM ledger_checkpoint WHERE id = 1)`.as('checkpoint'),
      ])
      .where('c.id', '=', credential.id)
      .executeTakeFirst();
    const ok = secretMatches(credential.secret, row?.secret_hash ?? null);
    if (!row || !ok) throw new DomainError('unauthenticated', 'node credential is unknown or revoked');
    this.cache.remember(mark, credential.id, row);
    if (row.revoked_at) throw refusedNodeCredential(row.node, row.revoked_reason, row.retired ? row.version : null);
    if (row.node !== name) throw new DomainError('forbidden', `node credential of ${row.node} may not read the bundle of ${name}`);
    this.contacts.seen(name);
    if (!row.etag) throw new DomainError('unknown_node', `nothing has been published for ${name} yet`, { node: name });
    const headers = pollHeaders(row.etag, row.checkpoint === null ? null : checkpointHeader(row.checkpoint));
    if (etagMatches(tags, row.etag)) {
      this.metrics.polls304++;
      void reply.headers(headers).status(304).send();
      return;
    }
    // Every column of a head row is set, so the left join's are all there once its ETag is.
    const jws = await signHeadBundle(this.db.kysely, this.keys, row as { [K in keyof typeof row]: NonNullable<(typeof row)[K]> });
    this.metrics.bundlesSigned++;
    void reply.headers(headers).status(200).header('content-type', 'application/jose').send(jws);
  }
}
