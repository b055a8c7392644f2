import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

export interface HttpResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  /** Wall time of the request, ms: from sending to the last byte of the answer. */
  readonly ms: number;
  json<T = unknown>(): T;
}

export interface RequestOptions {
  readonly token?: string;
  readonly headers?: Record<string, string>;
  /** An object is sent as JSON, a Buffer as application/octet-stream. */
  readonly body?: unknown;
}

/**
 * A small keep-alive HTTP/1.1 client for the coordinator's API: no timeouts, so a slow publish is
 * measured, not cut off. An https base URL is trusted by `ca` (PEM).
 */
export class HttpClient {
  private readonly agent: Agent;
  private readonly send: typeof httpRequest;

  constructor(
    readonly baseUrl: string,
    maxSockets = 16,
    ca?: string,
  ) {
    const https = new URL(baseUrl).protocol === 'https:';
    this.agent = https ? new HttpsAgent({ keepAlive: true, maxSockets, ca }) : new Agent({ keepAlive: true, maxSockets });
    this.send = https ? httpsRequest : httpRequest;
  }

  request(method: string, path: string, options: RequestOptions = {}): Promise<HttpResponse> {
    const url = new URL(path, this.baseUrl);
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let payload: Buffer | undefined;
    if (Buffer.isBuffer(options.body)) {
      payload = options.body;
      headers['content-type'] ??= 'application/octet-stream';
    } else if (options.body !== undefined) {
      payload = Buffer.from(JSON.stringify(options.body), 'utf8');
      headers['content-type'] ??= 'application/json';
    }
    if (payload) headers['content-length'] = String(payload.byteLength);
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const req = this.send(url, { method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            ms: performance.now() - started,
            json: <T>() => JSON.parse(body.toString('utf8')) as T,
          });
        });
      });
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Like request, but throws with the problem body unless the status is one of `expected`. */
  async expect(expected: number | readonly number[], method: string, path: string, options: RequestOptions = {}): Promise<HttpResponse> {
    const res = await this.request(method, path, options);
    const ok = typeof expected === 'number' ? res.status === expected : expected.includes(res.status);
    if (!ok) {
      const detail = res.body.toString('utf8').slice(0, 2000);
      throw new Error(`${method} ${path} answered ${res.status}, expected ${String(expected)}: ${detail}`);
    }
    return res;
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Runs `fn` over `items` with at most `limit` in flight; rejects on the first failure. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
