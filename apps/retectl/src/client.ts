import type { Readable } from 'node:stream';
import { request as httpsRequest, type Agent } from 'node:https';
import { Problem } from '#contracts';
import { CaFileError, TlsRefusedError, trustAnchors, VerifyingAgent } from '#tls';
import type { z } from 'zod';
import type { Connection } from './config.js';
import { RetectlError } from './errors.js';
import { trace, traceMs } from './output.js';

const TIMEOUT_MS = 60_000;
/**
 * node:http's own exports, not an ES module import of it: building that module's namespace reads every
 * export, WebSocket and fetch's among them, which loads the undici bundle (50-70 ms of CPU at the start
 * of every command that talks to a coordinator, for nothing retectl uses).
 */
const { request: httpRequest } = process.getBuiltinModule('node:http');

export interface RequestOptions {
  readonly json?: unknown;
  readonly raw?: Uint8Array;
  /** A body sent as it is produced (chunked, no length), with its content type. */
  readonly stream?: { readonly body: Readable; readonly contentType: string };
  /** How long to wait for the answer; uploads of large packages need longer than the default. */
  readonly timeoutMs?: number;
}

/**
 * The coordinator's REST API as retectl uses it. Every answer is parsed by its contract at this edge;
 * every failure becomes one RetectlError line that never carries the token.
 */
export class CoordinatorClient {
  private agent: Agent | undefined;

  /** Without a token, only `fetchPublic` may be used: it sends none. */
  constructor(private readonly connection: Omit<Connection, 'token'> & { readonly token?: string }) {}

  /** For https: verifies the coordinator before a request (and its token) is written; kept alive across calls. */
  private agentFor(url: URL): Agent | undefined {
    if (url.protocol !== 'https:') return undefined;
    if (!this.agent) {
      let anchors;
      try {
        anchors = trustAnchors(this.connection.caFile, this.connection.caFrom ?? 'the CA file');
      } catch (err) {
        if (err instanceof CaFileError) throw new RetectlError('config', err.message);
        throw err;
      }
      this.agent = new VerifyingAgent({ anchors }, { keepAlive: true });
    }
    return this.agent;
  }

  /** A failed exchange as one line: which TLS check refused the coordinator, or why it was not reached. */
  private networkError(e: unknown, timeoutMs: number): RetectlError {
    if (e instanceof TlsRefusedError) {
      const hint =
        this.connection.caFile === undefined
          ? 'give its CA with --cacert FILE or `retectl config set ca_file FILE`'
          : `check that ${this.connection.caFrom} names the CA of ${this.connection.url}`;
      return new RetectlError('tls', `${e.message}: ${hint}`, { cause: e });
    }
    return new RetectlError('network', `cannot reach the coordinator at ${this.connection.url}: ${networkReason(e, timeoutMs)}`, { cause: e });
  }

  /** A file anyone may read (the repository's key), as bytes; no token is sent. */
  async fetchPublic(path: string): Promise<Buffer> {
    const target = new URL(`${this.connection.url}${path}`);
    let res: { status: number; bytes: Buffer };
    try {
      res = await exchange({ url: target, method: 'GET', headers: {}, agent: this.agentFor(target), timeoutMs: TIMEOUT_MS });
    } catch (e) {
      throw this.networkError(e, TIMEOUT_MS);
    }
    if (res.status >= 400) throw failure(res.status, res.bytes.toString('utf8'), `GET ${path}`);
    return res.bytes;
  }

  /** A JSON document anyone may read (the trust chain), checked against its schema; no token is sent. */
  async getPublic<S extends z.ZodType>(path: string, schema: S): Promise<z.infer<S>> {
    return parseAnswer(await this.fetchPublic(path), 200, 'GET', path, schema);
  }

  /** An authenticated GET of a file that is not JSON (a signed note, a tile), as bytes; 404 and the like as errors. */
  async getBytes(path: string): Promise<Buffer> {
    if (this.connection.token === undefined) throw new Error('CoordinatorClient.getBytes needs a token');
    const target = new URL(`${this.connection.url}${path}`);
    let res: { status: number; bytes: Buffer };
    try {
      res = await exchange({
        url: target,
        method: 'GET',
        headers: { authorization: `Bearer ${this.connection.token}` },
        agent: this.agentFor(target),
        timeoutMs: TIMEOUT_MS,
      });
    } catch (e) {
      throw this.networkError(e, TIMEOUT_MS);
    }
    if (res.status >= 400) throw failure(res.status, res.bytes.toString('utf8'), `GET ${path}`);
    return res.bytes;
  }

  get url(): string {
    return this.connection.url;
  }

  async call<S extends z.ZodType>(method: string, path: string, schema: S, options: RequestOptions = {}): Promise<{ status: number; body: z.infer<S> }> {
    if (this.connection.token === undefined) throw new Error('CoordinatorClient.call needs a token');
    const headers: Record<string, string> = { authorization: `Bearer ${this.connection.token}`, accept: 'application/json' };
    let body: string | Uint8Array | Readable | undefined;
    if (options.stream !== undefined) {
      headers['content-type'] = options.stream.contentType;
      body = options.stream.body;
    } else if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.raw !== undefined) {
      headers['content-type'] = 'application/octet-stream';
      body = options.raw;
    }
    const target = new URL(`${this.connection.url}${path}`);
    let res: { status: number; bytes: Buffer };
    try {
      res = await exchange({ url: target, method, headers, body, agent: this.agentFor(target), timeoutMs: options.timeoutMs ?? TIMEOUT_MS });
    } catch (e) {
      throw this.networkError(e, options.timeoutMs ?? TIMEOUT_MS);
    }
    if (res.status >= 400) throw failure(res.status, res.bytes.toString('utf8'), `${method} ${path}`);
    return { status: res.status, body: parseAnswer(res.bytes, res.status, method, path, schema) };
  }
}

/** A successful answer's body as its schema says, or a `bad_response` naming the route and what is wrong. */
function parseAnswer<S extends z.ZodType>(bytes: Buffer, status: number, method: string, path: string, schema: S): z.infer<S> {
  const text = bytes.toString('utf8');
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    throw new RetectlError('bad_response', `the coordinator answered ${method} ${path} with HTTP ${status} and a body that is not JSON`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new RetectlError('bad_response', `unexpected answer to ${method} ${path}: ${issue.path.join('.') || '(body)'}: ${issue.message}`);
  }
  return parsed.data;
}

class TimeoutError extends Error {}

/** One request to the coordinator: a stream body is sent as it is produced, any other with its length. */
interface Exchange {
  readonly url: URL;
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body?: string | Uint8Array | Readable;
  readonly agent: Agent | undefined;
  readonly timeoutMs: number;
}

/**
 * exchangeOnce, and with `--verbose` one line for it: the method, the coordinator's origin and path
 * (never the token, which travels in a header), the status, the bytes each way and the milliseconds
 * from the first byte written to the last one read; a failed exchange says why.
 */
async function exchange(x: Exchange): Promise<{ status: number; bytes: Buffer }> {
  const started = performance.now();
  const target = `${x.method} ${x.url.origin}${x.url.pathname}${x.url.search}`;
  try {
    const res = await exchangeOnce(x);
    trace(() => `${target} ${res.status} in ${traceMs(performance.now() - started)} ms (sent ${res.sent} B, received ${res.bytes.length} B)`);
    return res;
  } catch (e) {
    trace(() => `${target} failed after ${traceMs(performance.now() - started)} ms: ${networkReason(e, x.timeoutMs)}`);
    throw e;
  }
}

/**
 * One request, its answer read whole; rejects on a network failure or after `timeoutMs`. A stream
 * body is sent chunked; when the coordinator answers before reading all of it (a refusal), the
 * answer counts, not the write that failed after it.
 */
function exchangeOnce({ url, method, headers, body, agent, timeoutMs }: Exchange): Promise<{ status: number; bytes: Buffer; sent: number }> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const streamed = body !== undefined && typeof body !== 'string' && !(body instanceof Uint8Array) ? body : undefined;
  let sent = body !== undefined && !streamed ? Buffer.byteLength(body as string | Uint8Array) : 0;
  if (body !== undefined && !streamed) headers['content-length'] = String(sent);
  let answered = false;
  return new Promise((resolve, reject) => {
    const req = send(url, { method, headers, ...(agent ? { agent } : {}) }, (res) => {
      answered = true;
      streamed?.unpipe(req);
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, bytes: Buffer.concat(chunks), sent });
      });
    });
    const timer = setTimeout(() => req.destroy(new TimeoutError()), timeoutMs);
    req.on('error', (err) => {
      if (answered) return;
      clearTimeout(timer);
      reject(err);
    });
    if (streamed) {
      streamed.once('error', (err) => req.destroy(err));
      // Counted as it goes out: a listener beside the pipe, attached in the same turn, sees every chunk.
      streamed.on('data', (c: Buffer) => (sent += c.length));
      streamed.pipe(req);
    } else req.end(body);
  });
}

function networkReason(e: unknown, timeoutMs: number): string {
  if (e instanceof TimeoutError) return `no answer within ${timeoutMs / 1000} s`;
  const err = e as { code?: string; message?: string };
  return err.code ?? err.message ?? 'unknown network error';
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
      // Not a typo in the token: it was good once. Who holds it needs a new one.
      if (problem?.code === 'token_expired' || problem?.code === 'token_revoked') {
        return new RetectlError(
          'unauthenticated',
          `the coordinator refused the API token: ${detail}; give the new one with retectl config set token (or --token, FLORETE_TOKEN)`,
          options,
        );
      }
      return new RetectlError(
        'unauthenticated',
        `the coordinator did not accept the API token: ${detail}; check --token, FLORETE_TOKEN or the config file`,
        options,
      );
    case 403:
      if (problem?.code === 'out_of_scope') return new RetectlError('forbidden', `the API token's scope does not cover this: ${detail}`, options);
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
