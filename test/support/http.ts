import { sha256Hex } from '#bundle';

/** One HTTP answer, read whole: status, headers, raw text and (when it parses) the JSON body. */
export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly body: any; // tests poke into bodies of every shape
}

export interface RequestOptions {
  /** Serialised as JSON with content-type application/json. */
  readonly json?: unknown;
  /** Sent as is; give the content-type in headers. */
  readonly raw?: string | Uint8Array;
  readonly headers?: Record<string, string>;
  /** Overrides the client's bearer; null sends no Authorization header. */
  readonly token?: string | null;
}

/** The headers and body a request sends: the bearer (the client's, or the one the options give), then JSON or raw bytes, then any extra headers. */
export function requestParts(
  clientToken: string | undefined,
  options: RequestOptions,
): { headers: Record<string, string>; body: string | Uint8Array | undefined } {
  const headers: Record<string, string> = {};
  const token = options.token === undefined ? clientToken : options.token;
  if (token) headers.authorization = `Bearer ${token}`;
  let body: string | Uint8Array | undefined;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.raw !== undefined) {
    body = options.raw;
  }
  Object.assign(headers, options.headers);
  return { headers, body };
}

/** An answer's text as JSON, or undefined when it is empty or not JSON. */
export function jsonOrUndefined(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

/** A tiny fetch client for the real coordinator process: a base URL and an optional bearer. */
export class Client {
  constructor(
    readonly baseUrl: string,
    readonly token?: string,
  ) {}

  as(token: string | undefined): Client {
    return new Client(this.baseUrl, token);
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<Reply> {
    const { headers, body } = requestParts(this.token, options);
    const res = await fetch(new URL(path, this.baseUrl), { method, headers, body });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, body: jsonOrUndefined(text) };
  }

  get(path: string, options?: RequestOptions): Promise<Reply> {
    return this.request('GET', path, options);
  }

  post(path: string, json?: unknown, options: RequestOptions = {}): Promise<Reply> {
    return this.request('POST', path, json === undefined ? options : { ...options, json });
  }

  delete(path: string, options?: RequestOptions): Promise<Reply> {
    return this.request('DELETE', path, options);
  }

  /** Uploads a blob (publisher) and returns its sha256; 201 new or 200 already stored. */
  async putBlob(content: string | Uint8Array): Promise<string> {
    const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
    const sha = sha256Hex(bytes);
    const r = await this.request('PUT', `/v1/blobs/${sha}`, { raw: bytes, headers: { 'content-type': 'application/octet-stream' } });
    if (r.status !== 201 && r.status !== 200) throw new Error(`PUT /v1/blobs/${sha} answered ${r.status}: ${r.text}`);
    return sha;
  }
}

/** Any sign of a stack trace leaking to a client: "at fn (file:line:col)" frames or module paths. */
export const STACK_TRACE = /(^|\n)\s*at .+[:(]\d+:\d+|node_modules|file:\/\/|\.js:\d+/;

/** Asserts an RFC 9457 problem answer with a stable code, a useful detail and no internals. */
export function expectProblem(reply: Reply, status: number, code: string): void {
  const summary = `${reply.status} ${reply.text.slice(0, 500)}`;
  expect({ status: reply.status, code: reply.body?.code, summary }).toEqual({ status, code, summary });
  expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json\b/);
  expect(reply.body).toEqual(expect.objectContaining({ type: expect.any(String), title: expect.any(String), status, code, detail: expect.any(String) }));
  expect(reply.body.title.length).toBeGreaterThan(0);
  expect(reply.body.detail.trim().length).toBeGreaterThan(0);
  expect(reply.text).not.toMatch(STACK_TRACE);
}

/** An enrolling agent's profile; its clock is read when the profile is sent, as a real agent's would be. */
export const AGENT_PROFILE = {
  hostname: 'host-1',
  os: 'linux',
  arch: 'x86_64',
  agent_version: '0.1.0',
  get clock() {
    return new Date().toISOString();
  },
};
