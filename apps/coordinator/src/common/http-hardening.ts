import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Writable } from 'node:stream';
import type { Socket } from 'node:net';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Authenticator, Principal } from './principal.js';
import { roleAllows } from './principal.js';
import { DomainError } from './domain-error.js';
import { sendProblem, toProblem } from './problem.filter.js';
import type { FloreteRouteConfig, RouteLimits } from './route-limits.js';
import { clip, PROBLEM_LIMITS, quoteInput } from './problem-bounds.js';

/** Every body but a publisher's tree or blob: enrolment, reports, tokens, rollbacks. */
export const SMALL_BODY_LIMIT = 64 * 1024;

export interface HardeningOptions {
  /** Largest tree (publish) body. */
  readonly treeLimit: number;
  /** Largest blob upload. */
  readonly blobLimit: number;
  /** Largest package (.deb) upload. */
  readonly packageLimit: number;
  /** Largest blob archive (a tar of many blobs). */
  readonly archiveLimit: number;
  /** Requests per address per anonymous route per minute; 0 turns the limit off. */
  readonly anonymousPerMinute: number;
  /**
   * Whether a body with this sha256, on a route declared with `digest: true`, was accepted before
   * and may be left unparsed until its route asks for it (see bodyOf); absent: always parsed.
   */
  readonly knownBody?: (digest: string) => boolean;
}

/**
 * An upload the coordinator answered before reading it: up to DISCARD_BYTES of it are read and
 * dropped (the connection stays usable); a larger one is not read, and the connection is cut
 * LINGER_MS later, time enough for the client to read the answer before the reset.
 */
const DISCARD_BYTES = 256 * 1024;
const LINGER_MS = 1000;
const OCTET_STREAM_ELSEWHERE =
  'this route takes application/json (only uploads, PUT /v1/blobs/{sha256} and PUT /v1/packages/{sha256}, take application/octet-stream, and POST /v1/blobs takes application/x-tar)';

/** The request says a body follows, whatever its method (junk sent with a GET still arrives). */
const declaresBody = (req: FastifyRequest) => req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
/** A body the routes would read: only methods that take one. */
const hasBody = (req: FastifyRequest) => req.method !== 'GET' && req.method !== 'HEAD' && declaresBody(req);
const isType = (header: string | undefined, type: string) => header !== undefined && header.split(';')[0].trim().toLowerCase() === type;
/**
 * The content codings of a body the coordinator reads: none, or only `identity` (RFC 9110 8.4). A
 * body sent gzip-coded would be parsed as the compressed bytes, or, sent plain under the header, be
 * taken for what the client did not mean: either way what is decoded would not be what was sent.
 */
const onlyIdentity = (header: string | string[] | undefined): boolean =>
  header === undefined || (Array.isArray(header) ? header : [header]).every((h) => h.split(',').every((c) => /^\s*(identity)?\s*$/i.test(c)));

type AuthenticatedRequest = FastifyRequest & { principal?: Principal };

const limitsOf = (req: FastifyRequest) => (req.routeOptions.config as FloreteRouteConfig | undefined)?.florete;

/**
 * Errors Fastify answers before any route runs (a URL that does not decode, a path parameter over
 * the router's limit) go through the same problem mapping as everything else.
 */
export function frameworkErrors(log: Logger) {
  return (error: Error & { code?: string }, _req: FastifyRequest, reply: FastifyReply): void => {
    const known =
      error.code === 'FST_ERR_BAD_URL'
        ? new DomainError('bad_url', 'the URL is not valid: a percent-escape in it does not decode to UTF-8 text')
        : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new DomainError('uri_too_long', 'a path parameter is longer than 100 characters')
          : error;
    sendProblem(reply, toProblem(known, log));
  };
}

/**
 * Requests Node's HTTP parser refuses never reach Fastify's router: headers too large, a request
 * that is not HTTP/1.1 (Content-Length together with Transfer-Encoding, …). They still get a
 * problem answer, and `Connection: close` before the socket closes, so a keep-alive client knows
 * not to send its next request on it.
 */
export function clientErrorHandler(log: Logger) {
  return (err: Error & { code?: string }, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const [status, title, code, detail] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'headers_too_large', 'the request headers are larger than 16 KiB']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout', 'request_timeout', 'the request did not arrive in time']
          : [400, 'Bad Request', 'bad_request', `the request is not valid HTTP/1.1 (${clip(err.code ?? 'parse error', PROBLEM_LIMITS.value)})`];
    log.debug({ err: { code: err.code, message: err.message } }, 'client error');
    const body = JSON.stringify({ type: `https://florete.dev/problems/${code}`, title, status, detail, code });
    if (socket.writable) {
      socket.end(
        `HTTP/1.1 ${status} ${title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    // A client that keeps sending after the answer is cut off rather than read.
    setTimeout(() => socket.destroy(), 1000).unref();
  };
}

/**
 * Limits that hold before a body is read: the small JSON limit everywhere, large bodies only on
 * the routes that declare them and only for a publisher's credential, raw bytes only on the blob
 * route, and a per-address rate limit on anonymous routes. Must run before the routes are added.
 */
export async function hardenHttp(fastify: FastifyInstance, auth: Authenticator, options: HardeningOptions): Promise<void> {
  // JSON only: Fastify's text/plain parser would hand a string to routes that expect an object.
  fastify.removeContentTypeParser('text/plain');

  const authenticatePublisher = async (req: AuthenticatedRequest): Promise<void> => {
    const principal = await auth.authenticate(req.headers.authorization);
    if (principal.kind !== 'api' || !roleAllows(principal.role, 'publisher'))
      throw new DomainError('forbidden', 'uploads need an API token with the publisher role or above');
    req.principal = principal;
  };

  // Refusals that depend only on the headers come before any parser runs. Answered from a hook, the
  // connection is not closed at once (the client is still writing, and closing on unread data
  // resets the connection, which can lose the answer before the client read it): see onResponse.
  // The three hooks run on every request, polls included, so they take callbacks: an async hook
  // costs a promise per request even when it has nothing to do.
  const refuseBeforeBody = (req: FastifyRequest, reply: FastifyReply): void => {
    // No route, no body to judge: the answer is 404 whatever was sent (and nothing is parsed).
    if (req.is404 || !hasBody(req)) return;
    const coding = req.headers['content-encoding'];
    if (!onlyIdentity(coding)) {
      // RFC 9110 15.5.16: a 415 for a content coding says which codings would have been accepted.
      void reply.header('accept-encoding', 'identity');
      const named = quoteInput(Array.isArray(coding) ? coding.join(', ') : (coding ?? ''));
      throw new DomainError(
        'unsupported_content_encoding',
        `the body is sent with Content-Encoding ${named}; the coordinator decodes no content coding: send the body as is (identity), without Content-Encoding`,
        {
          accepted_encodings: ['identity'],
        },
      );
    }
    const limits = limitsOf(req);
    const raw = limits !== undefined && 'body' in limits && (limits.body === 'blob' || limits.body === 'package') ? limits.body : undefined;
    const archive = limits !== undefined && 'body' in limits && limits.body === 'archive';
    const type = req.headers['content-type'];
    if (archive) {
      if (!isType(type, 'application/x-tar'))
        throw new DomainError(
          'unsupported_media_type',
          `blob archives are sent as application/x-tar, not ${type === undefined ? 'nothing' : quoteInput(type)}`,
        );
    } else if (raw ? !isType(type, 'application/octet-stream') : !isType(type, 'application/json')) {
      throw new DomainError(
        'unsupported_media_type',
        raw ? `${raw} bodies are raw bytes sent as application/octet-stream, not ${type === undefined ? 'nothing' : quoteInput(type)}` : OCTET_STREAM_ELSEWHERE,
      );
    }
    const declared = Number(req.headers['content-length']);
    const limit = req.routeOptions.bodyLimit ?? SMALL_BODY_LIMIT;
    if (Number.isFinite(declared) && declared > limit)
      throw new DomainError('body_too_large', `request body is ${declared} bytes; this route accepts at most ${limit}`);
  };
  fastify.addHook('onRequest', (req, reply, done) => {
    try {
      refuseBeforeBody(req, reply);
    } catch (err) {
      return done(err as Error);
    }
    done();
  });
  // An answer sent before its request's body was read: Node would read ("dump") the rest of the
  // body once the answer is written, however large. A small remainder is left to that, and the
  // connection stays usable; a larger one is never read (see stopReading) and the connection is
  // closed: the answer says so, so that no client sends its next request on it.
  fastify.addHook('onSend', (req, reply, payload, done) => {
    const declared = Number(req.headers['content-length']);
    // A request that declares no body has nothing unread, though Node marks it complete only after
    // a handler that answers synchronously (a poll from memory) has already answered. One that
    // declares a body is judged by what is left of it, whatever its method.
    if (!declaresBody(req) || req.raw.complete || (Number.isFinite(declared) && declared <= DISCARD_BYTES)) return done(null, payload);
    stopReading(req.raw);
    void reply.header('connection', 'close');
    const socket = req.raw.socket as (Socket & { destroySoon?: () => void }) | null;
    // Node closes a `Connection: close` connection as soon as the answer is written; with unread
    // bytes still arriving, that close is a reset, which can reach the client before it has read the
    // answer. Only the sending half is closed here; onResponse cuts the rest a little later.
    if (socket) socket.destroySoon = () => void socket.end();
    done(null, payload);
  });
  fastify.addHook('onResponse', (req, _reply, done) => {
    const socket = req.raw.socket;
    // The client, whose writes stall once the socket's buffers are full, has the answer already;
    // the connection is cut once it had time to read it.
    if ((req.raw as Unread)[UNREAD] && socket && !socket.destroyed) setTimeout(() => socket.destroy(), LINGER_MS).unref();
    done();
  });

  fastify.addHook('onRoute', (route) => {
    const limits = (route.config as FloreteRouteConfig | undefined)?.florete;
    if (!limits) return;
    if ('anonymous' in limits) {
      route.bodyLimit = SMALL_BODY_LIMIT;
      if (options.anonymousPerMinute > 0)
        route.config = { ...route.config, rateLimit: { max: options.anonymousPerMinute, timeWindow: 60_000 } } as typeof route.config;
      return;
    }
    route.bodyLimit =
      limits.body === 'tree'
        ? options.treeLimit
        : limits.body === 'package'
          ? options.packageLimit
          : limits.body === 'archive'
            ? options.archiveLimit
            : options.blobLimit;
    // Before the body is read: a stranger's megabytes are refused, not buffered.
    const hooks = route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
    route.onRequest = [...hooks, authenticatePublisher as never];
  });

  // Fastify's own JSON parser, unchanged (`__proto__` and `constructor` keys refused), with the text's
  // sha256 kept for the routes that ask for it (a publish answers its repeat from it). Text whose
  // digest is of a body accepted before is left unparsed: the route answers it without its tree, or
  // parses it through bodyOf, where the same bytes cannot fail now as they did not then.
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser(
    'application/json',
    { parseAs: 'string', bodyLimit: SMALL_BODY_LIMIT },
    (req: FastifyRequest, text: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
      const limits = limitsOf(req);
      if (limits !== undefined && 'digest' in limits && limits.digest) {
        const digest = createHash('sha256').update(text).digest('hex');
        (req as Digested)[BODY_DIGEST] = digest;
        if (options.knownBody?.(digest)) {
          (req as Digested)[DEFERRED_TEXT] = text as string;
          return done(null, DEFERRED);
        }
      }
      parseJson(req, text as string, done as never);
    },
  );

  // The onRequest hook has already let octet-stream through to the upload routes only, and refused a
  // declared size over the route's limit; what is left to watch is a body sent without a length.
  fastify.addContentTypeParser(
    'application/octet-stream',
    (req: FastifyRequest, payload: IncomingMessage, done: (err: Error | null, body?: Buffer) => void) => {
      const limit = req.routeOptions.bodyLimit ?? options.blobLimit;
      readLimited(payload, limit, limitsOf(req)).then(
        (body) => done(null, body),
        (err: Error) => done(err),
      );
    },
  );

  // A blob archive is handed to its route as the stream it is: the route reads it entry by entry,
  // checking digests as bytes arrive and counting them against the route's limit (a body sent
  // without a length is not refused by the onRequest hook).
  fastify.addContentTypeParser(
    'application/x-tar',
    (_req: FastifyRequest, payload: IncomingMessage, done: (err: Error | null, body?: IncomingMessage) => void) => done(null, payload),
  );

  await fastify.register(rateLimit, {
    global: false,
    errorResponseBuilder: (_req, ctx) =>
      new DomainError('rate_limited', `too many requests from this address: at most ${ctx.max} a minute on this route; retry in ${ctx.after}`, {
        retry_after_seconds: Math.ceil(ctx.ttl / 1000),
      }),
  });
}

const BODY_DIGEST = Symbol('florete.bodyDigest');
const DEFERRED_TEXT = Symbol('florete.deferredText');
/** The body of a request whose text was left unparsed (knownBody); bodyOf parses it. */
const DEFERRED: unknown = Object.freeze({});
type Digested = FastifyRequest & { [BODY_DIGEST]?: string; [DEFERRED_TEXT]?: string };

/** The sha256 (hex) of a JSON body's text, on a route declared with `digest: true`; else undefined. */
export function bodyDigestOf(req: FastifyRequest): string | undefined {
  return (req as Digested)[BODY_DIGEST];
}

/** A request's JSON body, parsed now if the parser left it as text (a digest route's known body). */
export function bodyOf(req: FastifyRequest): unknown {
  const r = req as Digested;
  if (req.body !== DEFERRED) return req.body;
  const text = r[DEFERRED_TEXT]!;
  r[DEFERRED_TEXT] = undefined;
  // Once accepted, bytes that had no `__proto__` or `constructor` key still have none: plain JSON.parse.
  req.body = JSON.parse(text) as unknown;
  return req.body;
}

const UNREAD = Symbol('florete.unread');
type Unread = IncomingMessage & { [UNREAD]?: true };

/**
 * Stops receiving a request's body for good. Left alone, Node reads ("dumps") whatever is left of
 * a body nobody read once the answer is written, however large; pausing the socket does not stop
 * that. Piping the body into a sink that never accepts a chunk does: the request counts as read,
 * and backpressure stops reading from the socket after a few kilobytes. The connection is then not
 * reusable: the answer closes it (onSend), and onResponse cuts it.
 */
export function stopReading(raw: Unread): void {
  if (raw[UNREAD]) return;
  raw[UNREAD] = true;
  raw.pipe(new Writable({ highWaterMark: 1, write: () => undefined }));
}

/** The body as one Buffer, refused as soon as the bytes counted pass `limit`. */
function readLimited(payload: IncomingMessage, limit: number, limits: RouteLimits | undefined): Promise<Buffer> {
  const what = limits !== undefined && 'body' in limits && limits.body === 'package' ? 'package' : 'blob';
  const tooLarge = () => new DomainError('body_too_large', `${what} uploads are limited to ${limit} bytes`);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        payload.off('data', onData);
        payload.off('end', onEnd);
        stopReading(payload);
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => resolve(Buffer.concat(chunks, size));
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.once('error', reject);
  });
}
