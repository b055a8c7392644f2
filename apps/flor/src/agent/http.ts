import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type Agent } from 'node:https';
import { RetiredCredentialProblem } from '#contracts';
import { TlsRefusedError } from '#tls';
import { AgentError } from '../errors.js';
import { retiredMessage } from './retirement.js';

export interface HttpAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

export interface HttpOptions {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: unknown;
  /** The whole exchange, connect to last byte. */
  readonly timeoutMs: number;
  /** Answers larger than this are cut off as an error: a bundle is small. */
  readonly maxBytes?: number;
  /** For https: the agent that verifies the coordinator before the request is written (transport.ts). */
  readonly agent?: Agent;
  /** Ends the exchange early (a held watch the agent no longer needs): rejected with `aborted`. */
  readonly signal?: AbortSignal;
}

/**
 * One request with node:http (lighter than fetch on an idle agent): a hard deadline on the whole
 * exchange, a size cap, and typed errors for the daemon's backoff.
 */
export async function httpCall(url: URL, options: HttpOptions): Promise<HttpAnswer> {
  const deadline = Date.now() + options.timeoutMs;
  try {
    return await exchange(url, options, options.timeoutMs);
  } catch (err) {
    // A kept-alive connection the server closed as the request went out: the request never reached
    // it. A GET is asked again, once, on a new connection (a resumed session); anything else is not.
    if (!(err instanceof StaleConnection)) throw err;
    // A watch is not: one cut while held (a replica stopped) is watched again by the daemon after a
    // random delay, so a replica's watchers do not all land on the survivors at once.
    if ((options.method ?? 'GET') !== 'GET' || options.headers?.prefer !== undefined) throw err.error;
    return exchange(url, options, Math.max(1, deadline - Date.now()), true);
  }
}

/** The request failed before any answer, on a pooled connection the server had closed (ECONNRESET, EPIPE). */
class StaleConnection extends Error {
  constructor(readonly error: AgentError) {
    super(error.message);
  }
}

function exchange(url: URL, options: HttpOptions, timeoutMs: number, retried = false): Promise<HttpAnswer> {
  const headers: Record<string, string> = { accept: '*/*', ...options.headers };
  let payload: Buffer | undefined;
  if (options.body !== undefined) {
    payload = Buffer.from(JSON.stringify(options.body), 'utf8');
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(payload.byteLength);
  }
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    let settled = false;
    let answered = false;
    const fail = (err: AgentError | StaleConnection) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(err);
    };
    const req = send(url, { method: options.method ?? 'GET', headers, ...(options.agent ? { agent: options.agent } : {}) }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.byteLength;
        if (size > maxBytes) fail(new AgentError('bad_response', `answer from ${url.origin} is larger than ${maxBytes} bytes`));
        else chunks.push(c);
      });
      res.on('error', (cause) => fail(new AgentError('unreachable', `${url.origin}: ${cause.message}`, { cause })));
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      });
    });
    const timer = setTimeout(
      () => fail(new AgentError('timeout', `${options.method ?? 'GET'} ${url.pathname} on ${url.origin} took longer than ${options.timeoutMs} ms`)),
      timeoutMs,
    );
    req.on('error', (cause) => {
      if (cause instanceof TlsRefusedError)
        fail(new AgentError(cause.code === 'pin_mismatch' ? 'tls_pin_mismatch' : 'tls_untrusted', cause.message, { cause }));
      else {
        const error = new AgentError('unreachable', `cannot reach ${url.origin}: ${cause.message}`, { cause });
        const code = (cause as NodeJS.ErrnoException).code;
        const stale = !retried && !answered && req.reusedSocket && (code === 'ECONNRESET' || code === 'EPIPE');
        fail(stale ? new StaleConnection(error) : error);
      }
    });
    if (options.signal) {
      const signal = options.signal;
      const onAbort = () => fail(new AgentError('aborted', `${options.method ?? 'GET'} ${url.pathname} on ${url.origin} was cancelled`));
      if (signal.aborted) onAbort();
      else {
        signal.addEventListener('abort', onAbort, { once: true });
        req.once('close', () => signal.removeEventListener('abort', onAbort));
      }
    }
    req.end(payload);
  });
}

/** Retry-After as milliseconds from now: delta-seconds or an HTTP date (RFC 9110 10.2.3). */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\s*\d+\s*$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function jsonOf(a: HttpAnswer): unknown {
  try {
    return JSON.parse(a.body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The detail of a problem+json answer, or the start of whatever else came back. */
export function describeAnswer(a: HttpAnswer): string {
  const p = jsonOf(a) as { detail?: unknown; code?: unknown } | undefined;
  if (typeof p?.detail === 'string') return `${a.status} ${typeof p.code === 'string' ? `${p.code}: ` : ''}${p.detail}`;
  return `${a.status} ${a.body.toString('utf8').slice(0, 200)}`.trim();
}

/**
 * Maps a non-success answer to the error the daemon reacts to (401: stop trusting the credential,
 * and a retired node's 401 says it was retired; 503: wait as told).
 */
export function answerError(a: HttpAnswer, what: string): AgentError {
  const detail = describeAnswer(a);
  const retired = a.status === 401 ? RetiredCredentialProblem.safeParse(jsonOf(a)) : null;
  if (retired?.success) {
    const { node, version, code } = retired.data;
    return new AgentError('node_retired', retiredMessage(what, node, version, `${a.status} ${code}`), { retiredVersion: version, status: a.status });
  }
  const status = a.status;
  if (a.status === 401)
    return new AgentError('unauthorized', `${what}: the coordinator refused the node credential (${detail}); re-enrol the node`, { status });
  if (a.status === 503 || a.status === 429) {
    return new AgentError('unavailable', `${what}: coordinator unavailable (${detail})`, {
      retryAfterMs: parseRetryAfter(a.headers['retry-after'], Date.now()),
      status,
    });
  }
  return new AgentError('http_error', `${what}: ${detail}`, { status });
}
