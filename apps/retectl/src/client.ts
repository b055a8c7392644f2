import { Problem } from '#contracts';
import type { z } from 'zod';
import type { Connection } from './config.js';
import { RetectlError } from './errors.js';

const TIMEOUT_MS = 60_000;

export interface RequestOptions {
  readonly json?: unknown;
  readonly raw?: Uint8Array;
  /** How long to wait for the answer; uploads of large packages need longer than the default. */
  readonly timeoutMs?: number;
}

/**
 * The coordinator's REST API as retectl uses it. Every answer is parsed by its contract at this edge;
 * every failure becomes one RetectlError line that never carries the token.
 */
export class CoordinatorClient {
  constructor(private readonly connection: Connection) {}

  get url(): string {
    return this.connection.url;
  }

  async call<S extends z.ZodType>(method: string, path: string, schema: S, options: RequestOptions = {}): Promise<{ status: number; body: z.infer<S> }> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.connection.token}`, accept: 'application/json' };
    let body: string | Uint8Array | undefined;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.raw !== undefined) {
      headers['content-type'] = 'application/octet-stream';
      body = options.raw;
    }
    const target = `${this.connection.url}${path}`;
    let res: Response;
    try {
      res = await fetch(target, { method, headers, body, signal: AbortSignal.timeout(options.timeoutMs ?? TIMEOUT_MS) });
    } catch (e) {
      throw new RetectlError('network', `cannot reach the coordinator at ${this.connection.url}: ${networkReason(e, options.timeoutMs ?? TIMEOUT_MS)}`, { cause: e });
    }
    const text = await res.text().catch(() => '');
    if (res.status >= 400) throw failure(res.status, text, `${method} ${path}`);
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      throw new RetectlError('bad_response', `the coordinator answered ${method} ${path} with HTTP ${res.status} and a body that is not JSON`);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new RetectlError('bad_response', `unexpected answer to ${method} ${path}: ${issue.path.join('.') || '(body)'}: ${issue.message}`);
    }
    return { status: res.status, body: parsed.data };
  }
}

/** A file anyone may read (no token is sent), as bytes. */
export async function fetchPublic(url: string, path: string): Promise<Buffer> {
  let res: Response;
  try {
    res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (e) {
    throw new RetectlError('network', `cannot reach the coordinator at ${url}: ${networkReason(e, TIMEOUT_MS)}`, { cause: e });
  }
  const bytes = Buffer.from(await res.arrayBuffer().catch(() => new ArrayBuffer(0)));
  if (res.status >= 400) throw failure(res.status, bytes.toString('utf8'), `GET ${path}`);
  return bytes;
}

function networkReason(e: unknown, timeoutMs: number): string {
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (err.name === 'TimeoutError') return `no answer within ${timeoutMs / 1000} s`;
  return err.cause?.code ?? err.cause?.message ?? err.message ?? 'unknown network error';
}

function failure(status: number, text: string, what: string): RetectlError {
  let problem: (Problem & Record<string, unknown>) | undefined;
  try {
    const json: unknown = JSON.parse(text);
    // Problem strips what it does not name; commands need the extras (the nodes of ineligible_nodes, …).
    if (Problem.safeParse(json).success) problem = json as Problem & Record<string, unknown>;
  } catch {
    problem = undefined;
  }
  const detail = problem ? `${problem.detail} (${status} ${problem.code})` : `HTTP ${status} to ${what}`;
  const options = problem ? { problem } : {};
  switch (status) {
    case 401:
      return new RetectlError('unauthenticated', `the coordinator did not accept the API token: ${detail}; check --token, FLORETE_TOKEN or the config file`, options);
    case 403:
      return new RetectlError('forbidden', `the API token's role may not do this: ${detail}`, options);
    case 404:
      return new RetectlError('not_found', detail, options);
    case 409:
      return new RetectlError('conflict', detail, options);
    case 422:
      return new RetectlError('rejected', `the coordinator rejected the request: ${detail}`, options);
    default:
      return new RetectlError(status >= 500 ? 'server' : 'rejected', `the coordinator failed: ${detail}`, options);
  }
}
