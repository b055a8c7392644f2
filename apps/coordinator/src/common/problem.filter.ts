import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { DomainError, type DomainErrorCode } from './domain-error.js';
import { boundProblem, clip, PROBLEM_LIMITS } from './problem-bounds.js';

const STATUS: Record<DomainErrorCode, number> = {
  invalid_body: 422,
  invalid_query: 422,
  invalid_path: 422,
  missing_blobs: 422,
  invalid_deb: 422,
  invalid_archive: 422,
  package_conflict: 409,
  digest_mismatch: 422,
  invalid_rollback_target: 422,
  ineligible_nodes: 422,
  stale_position: 409,
  node_retired: 409,
  unknown_node: 404,
  unknown_version: 404,
  unknown_publish: 404,
  unknown_rollout: 404,
  ambiguous_rollout: 409,
  rollout_in_progress: 409,
  rollout_state: 409,
  invalid_rollout: 400,
  not_confirmable: 409,
  already_confirmed: 409,
  witness_key_registered: 409,
  not_found: 404,
  unauthenticated: 401,
  retired_credential: 401,
  invalid_enrolment_token: 401,
  forbidden: 403,
  out_of_scope: 403,
  body_too_large: 413,
  unsupported_media_type: 415,
  unsupported_content_encoding: 415,
  ledger_busy: 503,
  rate_limited: 429,
  bad_url: 400,
  bad_request: 400,
  uri_too_long: 414,
  headers_too_large: 431,
  request_timeout: 408,
  unknown_key: 404,
  already_revoked: 409,
  token_expired: 401,
  token_revoked: 401,
  unknown_token: 404,
  ambiguous_token: 409,
  last_admin_token: 409,
  backup_unavailable: 409,
  invalid_prefer: 400,
  too_many_watches: 503,
  shutting_down: 503,
  database_unavailable: 503,
};

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  [extra: string]: unknown;
}

/** Maps anything thrown to application/problem+json. Nothing reaches a client as a stack trace. */
export function toProblem(error: unknown, log?: Logger): ProblemBody {
  if (error instanceof DomainError) {
    const status = STATUS[error.code];
    // Details first: none of them may overwrite a member of the problem itself (a `status` among them once made the answer a 500).
    return {
      ...(error.details ?? {}),
      type: `https://florete.dev/problems/${error.code}`,
      title: TITLES[status] ?? 'Error',
      status,
      detail: error.message,
      code: error.code,
    };
  }
  const status = error instanceof HttpException ? error.getStatus() : (error as { statusCode?: unknown } | null)?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const code = clientErrorCode(error, status);
    // An empty JSON body is a contract violation like any other: same code, same status.
    if (code === 'invalid_body') return toProblem(new DomainError('invalid_body', 'request body is empty: expected a JSON object'));
    const message = clip(String((error as Error).message), PROBLEM_LIMITS.message);
    const detail =
      code === 'malformed_json'
        ? `request body is not valid JSON: ${message}`
        : code === 'not_found'
          ? 'no such route'
          : code === 'unsupported_media_type'
            ? UNSUPPORTED_MEDIA_TYPE
            : code === 'body_too_large'
              ? 'request body is larger than this route accepts'
              : message;
    return { type: `https://florete.dev/problems/${code}`, title: TITLES[status] ?? 'Error', status, detail, code };
  }
  const unavailable = databaseUnavailable(error);
  if (unavailable !== null) {
    // The reason names the database's address: the log has it, the caller is told what to do.
    log?.warn({ err: unavailable }, 'the database did not answer a request');
    return toProblem(new DomainError('database_unavailable', 'this replica cannot reach its database: try again shortly, or through another replica'));
  }
  log?.error({ err: error }, 'unhandled error');
  return {
    type: 'https://florete.dev/problems/internal',
    title: TITLES[500],
    status: 500,
    detail: 'internal error; the coordinator log has the details',
    code: 'internal',
  };
}

/** SQLSTATE classes and codes that say the database itself is away, not that a statement was wrong. */
const UNAVAILABLE_SQLSTATE = /^(08|57P0[1-3]$|53300$)/;
/** The socket errors of a connection that could not be opened or was cut. */
const UNAVAILABLE_SOCKET = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);
/** What the PostgreSQL client says of a connection that ended or never opened. */
const UNAVAILABLE_MESSAGE = /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect)/;

/**
 * Why a request's database work failed because the database is away (stopped, restarting, out of
 * connections, unreachable): its message, or null for any other error. Such a request is not the
 * caller's fault nor the coordinator's: it is answered 503, to be tried again.
 */
export function databaseUnavailable(error: unknown): string | null {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_SOCKET.has(code))) return clip(e.message || code, 200);
    if (UNAVAILABLE_MESSAGE.test(e.message)) return clip(e.message, 200);
    // A connection refused on every address tried (IPv6 and IPv4 for a host name) comes as one AggregateError.
    if (e instanceof AggregateError && e.errors.some((inner) => databaseUnavailable(inner) !== null)) return clip(e.message || 'connection failed', 200);
  }
  return null;
}

const UNSUPPORTED_MEDIA_TYPE = 'this route takes application/json (blob and package uploads take application/octet-stream, blob archives application/x-tar)';

/** Framework errors (Fastify's body parsing, Nest's routing) get stable codes of their own. */
function clientErrorCode(error: unknown, status: number): string {
  const codes = [(error as { code?: unknown }).code, ((error as { cause?: { code?: unknown } }).cause ?? {}).code];
  const has = (c: string) => codes.includes(c);
  if (has('FST_ERR_CTP_BODY_TOO_LARGE') || status === 413) return 'body_too_large';
  if (has('FST_ERR_CTP_INVALID_MEDIA_TYPE') || status === 415) return 'unsupported_media_type';
  if (has('FST_ERR_CTP_EMPTY_JSON_BODY')) return 'invalid_body';
  if (has('FST_ERR_CTP_INVALID_JSON_BODY') || error instanceof SyntaxError || (status === 400 && /JSON/.test((error as Error).message)))
    return 'malformed_json';
  if (has('FST_ERR_BAD_URL')) return 'bad_url';
  if (has('FST_ERR_MAX_PARAM_LENGTH') || status === 414) return 'uri_too_long';
  if (status === 404) return 'not_found';
  if (status === 405) return 'method_not_allowed';
  if (status === 408) return 'request_timeout';
  if (status === 429) return 'rate_limited';
  if (status === 431) return 'headers_too_large';
  if (status === 400) return 'bad_request';
  return `http_${status}`;
}

/** How long a client is asked to wait before it tries a request the database could not serve. */
const DATABASE_RETRY_AFTER_SECONDS = 5;

/** Every problem leaves through here, bounded (see PROBLEM_LIMITS) whatever it carries. */
export function sendProblem(reply: FastifyReply, problem: ProblemBody): void {
  if (problem.code === 'database_unavailable') void reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
  void reply
    .status(problem.status)
    .header('content-type', 'application/problem+json')
    .send(JSON.stringify(boundProblem(problem)));
}

@Catch()
export class ProblemFilter implements ExceptionFilter {
  constructor(private readonly log: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    sendProblem(host.switchToHttp().getResponse<FastifyReply>(), toProblem(exception, this.log));
  }
}
