import { connect } from 'node:net';
import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client, expectProblem, type Reply } from './support/http.js';

jest.setTimeout(120_000);

/** Sends raw bytes on one connection and collects everything the coordinator writes until it closes (or `ms` passes). */
function rawExchange(url: string, bytes: string, ms = 3000): Promise<{ text: string; closed: boolean }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false });
    }, ms);
    socket.on('data', (d) => (text += d.toString('utf8')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
    socket.on('error', () => undefined);
    socket.write(bytes);
  });
}

/** Parses one raw HTTP/1.1 answer into the same shape the fetch client gives. */
function parseRaw(text: string): Reply & { connection: string | null } {
  const [head, ...rest] = text.split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = new Headers(lines.map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()] as [string, string]));
  const body = rest.join('\r\n\r\n');
  return { status: Number(statusLine.split(' ')[1]), headers, text: body, body: JSON.parse(body), connection: headers.get('connection') };
}

/**
 * Requests the framework or Node's HTTP parser refuse before any route runs still get a problem
 * with a stable code, and a protocol error says Connection: close before the socket closes.
 */
describe('errors answered before any route runs', () => {
  let coord: CoordinatorProcess;
  let anon: Client;

  beforeAll(async () => {
    coord = await startCoordinatorProcess({ env: { FLORETE_LOG_LEVEL: 'warn', FLORETE_ANON_RATE_LIMIT: '5' } });
    anon = new Client(coord.url);
  });
  afterAll(async () => {
    await coord?.stop();
  });

  it('a URL whose escapes do not decode is bad_url', async () => {
    expectProblem(await anon.get('/v1/nodes/%ff%fe/versions'), 400, 'bad_url');
  });

  it('a path parameter over 100 characters is uri_too_long', async () => {
    expectProblem(await anon.get(`/v1/nodes/${'a'.repeat(101)}/versions`), 414, 'uri_too_long');
  });

  it('headers over 16 KiB are headers_too_large, and the connection is closed', async () => {
    const { text, closed } = await rawExchange(coord.url, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const reply = parseRaw(text);
    expectProblem(reply, 431, 'headers_too_large');
    expect(reply.connection).toBe('close');
    expect(closed).toBe(true);
  });

  it('Content-Length with Transfer-Encoding is bad_request with Connection: close, and a keep-alive client carries on on a new connection', async () => {
    const smuggled = 'POST /v1/enrol HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n';
    const { text, closed } = await rawExchange(coord.url, smuggled);
    const reply = parseRaw(text);
    expectProblem(reply, 400, 'bad_request');
    expect(reply.connection).toBe('close');
    expect(closed).toBe(true);
    // fetch keeps connections alive: told to close, it opens a new one for the next request.
    expect((await anon.get('/.well-known/jwks.json')).status).toBe(200);
  });

  it('refuses anonymous requests past the per-address rate limit with 429, Retry-After and a problem', async () => {
    const replies: Reply[] = [];
    for (let i = 0; i < 7; i++) replies.push(await anon.get('/readyz'));
    expect(replies.slice(0, 5).map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const limited = replies[6];
    expectProblem(limited, 429, 'rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.body.retry_after_seconds).toBe(Number(limited.headers.get('retry-after')));
    // Each anonymous route counts on its own, and authenticated routes are not limited.
    expect((await anon.get('/healthz')).status).toBe(200);
    const admin = anon.as(coord.adminToken);
    for (let i = 0; i < 7; i++) expect((await admin.get('/v1/ledger/head')).status).toBe(200);
  });

  it('refuses a wrong content-type with 415 before reading the body, on every JSON route', async () => {
    const admin = anon.as(coord.adminToken);
    for (const type of ['application/octet-stream', 'text/plain', 'application/x-www-form-urlencoded']) {
      expectProblem(
        await admin.request('POST', '/v1/api-tokens', { raw: 'name=x&role=reader', headers: { 'content-type': type } }),
        415,
        'unsupported_media_type',
      );
    }
  });

  it('reads a large upload only for a publisher: a stranger sending megabytes is refused before the body', async () => {
    const body = new Uint8Array(3 * 1024 * 1024);
    expectProblem(
      await anon.request('PUT', `/v1/blobs/${'0'.repeat(64)}`, { raw: body, headers: { 'content-type': 'application/octet-stream' } }),
      401,
      'unauthenticated',
    );
    expectProblem(
      await anon.request('POST', '/v1/publishes', {
        raw: JSON.stringify({ message: 'x'.repeat(1024 * 1024) }),
        headers: { 'content-type': 'application/json' },
      }),
      401,
      'unauthenticated',
    );
    // A publisher's tree may be far larger than the 64 KiB every other route takes.
    const admin = anon.as(coord.adminToken);
    const big = await admin.post('/v1/publishes', {
      message: 'm',
      nodes: Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`node-${i}`, { artifacts: { 'a.json': i.toString(16).padStart(64, '0') } }])),
    });
    expectProblem(big, 422, 'missing_blobs');
    expect(big.body.missing_count).toBe(2000);
    expect(big.body.missing).toHaveLength(20);
    expect(big.text.length).toBeLessThan(16 * 1024);
    expectProblem(await admin.post('/v1/api-tokens', { name: 'n'.repeat(70 * 1024), role: 'reader' }), 413, 'body_too_large');
  });
});
