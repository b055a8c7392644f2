import { request } from 'node:http';
import { jest } from '@jest/globals';
import fc from 'fast-check';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client, STACK_TRACE } from './support/http.js';

jest.setTimeout(300_000);

/**
 * Requests generated for every route of the coordinator's own OpenAPI document (and the few routes
 * it leaves out): wrong types, huge and unicode strings, deep nesting, path traversal in path
 * parameters, wrong content-types, garbage credentials. Whatever arrives, the answer is never a
 * 5xx or a stack trace, every refusal is a bounded problem+json with a code, and the ledger does
 * not move.
 */
const RUNS = Number(process.env.FLORETE_FUZZ_RUNS ?? 400);
const MAX_PROBLEM_BYTES = 16 * 1024;

interface Op {
  readonly method: string;
  readonly path: string;
  readonly query: string[];
  readonly body: Record<string, unknown> | undefined;
}
interface Generated {
  readonly op: Op;
  readonly params: { value: string; raw: boolean }[];
  readonly query: [string, string][];
  readonly contentType: string | undefined;
  readonly body: string | undefined;
  readonly auth: string | undefined;
}
interface Answer {
  readonly status: number;
  readonly type: string | undefined;
  readonly text: string;
}

/** Routes outside the document (admin conveniences, the git mirror, the web console's files) are fuzzed too. */
const EXTRA: Op[] = [
  { method: 'POST', path: '/v1/projections/rebuild', query: [], body: undefined },
  { method: 'GET', path: '/audit.git/{rest}', query: [], body: undefined },
  { method: 'GET', path: '/ui/{rest}', query: [], body: undefined },
  { method: 'GET', path: '/no/such/{route}', query: [], body: undefined },
];

const nasty = fc.constantFrom(
  '..',
  '../../../etc/passwd',
  '..%2F..%2Fetc%2Fpasswd',
  '%2e%2e%2f',
  '%00',
  '%ff%fe',
  '%',
  '%zz',
  '\u0000',
  '\ud800',
  'a'.repeat(101),
  'a'.repeat(4000),
  '',
  ' ',
  '{}',
  '[]',
  'null',
  '-1',
  '0',
  '1e309',
  '99999999999999999999',
  'NaN',
  '$(id)',
  "' OR 1=1 --",
  '<script>',
  'alpha',
  'ALPHA',
  'é',
  '𝔘𝔫𝔦',
  '\u202e',
  'a/b',
  'a?b=c',
  'a#b',
);
const anyString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 50 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  nasty,
  fc.nat().map(String),
);
const jsonScalar = fc.oneof(anyString, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));

/** A body shaped like the route's contract with wrong values, or any JSON, or something that is not JSON. */
function bodyFor(op: Op): fc.Arbitrary<string | undefined> {
  const keys = Object.keys((op.body?.properties as Record<string, unknown> | undefined) ?? {});
  const shaped = keys.length
    ? fc
        .dictionary(fc.oneof(fc.constantFrom(...keys), anyString), fc.oneof(jsonScalar, fc.jsonValue({ maxDepth: 3 })), { maxKeys: keys.length + 2 })
        .map((v) => JSON.stringify(v))
    : fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v));
  return fc.oneof(
    { weight: 4, arbitrary: shaped },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }).map((n) => `{"a":${'{"a":'.repeat(n)}1${'}'.repeat(n)}}`) },
    { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 200_000 }).map((n) => JSON.stringify({ [keys[0] ?? 'x']: 'x'.repeat(n) })) },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 100, max: 5_000 }).map((n) => JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])))),
    },
    { weight: 1, arbitrary: anyString },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

function generated(ops: Op[], tokens: string[]): fc.Arbitrary<Generated> {
  return fc.constantFrom(...ops).chain((op) =>
    fc.record({
      op: fc.constant(op),
      params: fc.array(fc.record({ value: anyString, raw: fc.boolean() }), { minLength: 3, maxLength: 3 }),
      query: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...(op.query.length ? op.query : ['x'])), anyString), anyString), { maxLength: 4 }),
      contentType: fc.oneof(
        fc.constantFrom(
          'application/json',
          'application/json',
          'application/octet-stream',
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/json; charset=utf-16',
          'APPLICATION/JSON',
          '',
          'a/b; c',
        ),
        fc.constant(undefined),
      ),
      body: op.method === 'GET' ? fc.option(fc.constant('{}'), { nil: undefined }) : bodyFor(op),
      auth: fc.oneof(
        fc.constantFrom(...tokens.map((t) => `Bearer ${t}`)),
        fc.constantFrom(
          'Bearer',
          'Bearer ',
          'Bearer flt',
          'Bearer flt.x.y',
          'Bearer fln.0.0',
          'Bearer fle.a.b.c',
          `Bearer flt.${'a'.repeat(500)}.b`,
          'Basic Og==',
          'Basic !!!',
          'Digest x',
        ),
        fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 200 }),
        fc.constant(undefined),
      ),
    }),
  );
}

/** Percent-encodes what an HTTP/1.1 request line cannot carry; `raw` keeps / . % as they are. */
function pathValue(value: string, raw: boolean): string {
  if (!raw) return encodeURIComponent(value.isWellFormed() ? value : value.toWellFormed());
  return Array.from(Buffer.from(value.toWellFormed(), 'utf8'))
    .map((b) => (b > 0x20 && b < 0x7f && b !== 0x23 && b !== 0x3f ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0').toUpperCase()}`))
    .join('');
}

function send(baseUrl: string, g: Generated): Promise<Answer> {
  let i = 0;
  const path = g.op.path.replace(/\{\w+\}/g, () => pathValue(g.params[i].value, g.params[i++].raw));
  const query = g.query.map(([k, v]) => `${encodeURIComponent(k.toWellFormed())}=${encodeURIComponent(v.toWellFormed())}`).join('&');
  const headers: Record<string, string> = {};
  if (g.auth !== undefined) headers.authorization = g.auth;
  if (g.contentType !== undefined) headers['content-type'] = g.contentType;
  const body = g.body === undefined ? undefined : Buffer.from(g.body.toWellFormed(), 'utf8');
  if (body) headers['content-length'] = String(body.length);
  return new Promise((resolve, reject) => {
    const req = request(new URL(baseUrl), { method: g.op.method, path: `${path}${query ? `?${query}` : ''}`, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, type: res.headers['content-type'], text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A failure named in a few lines (generated bodies run to megabytes), with the seed to replay it. */
async function report(details: fc.RunDetails<[Generated]>): Promise<void> {
  if (!details.failed) return;
  const [g] = details.counterexample ?? [];
  const cut = (v: unknown) => (v === undefined ? 'none' : JSON.stringify(v).slice(0, 300));
  throw new Error(
    [
      `failed after ${details.numRuns} requests (seed ${details.seed}, path ${details.counterexamplePath}):`,
      g
        ? `${g.op.method} ${g.op.path} params=${cut(g.params)} query=${cut(g.query)} content-type=${cut(g.contentType)} auth=${cut(g.auth)} body=${cut(g.body)}`
        : 'no counterexample',
      String((details.errorInstance as Error | undefined)?.message ?? details.errorInstance).slice(0, 2000),
    ].join('\n'),
  );
}

describe('fuzzing every route of the OpenAPI document', () => {
  let coord: CoordinatorProcess;
  let admin: Client;
  const tokens: string[] = [];

  beforeAll(async () => {
    // The enrolment rate limit is part of what is fuzzed: 429s are answers like any other.
    coord = await startCoordinatorProcess({ env: { FLORETE_LOG_LEVEL: 'warn', FLORETE_ANON_RATE_LIMIT: '60' } });
    admin = new Client(coord.url, coord.adminToken);
    for (const role of ['reader', 'publisher']) tokens.push((await admin.post('/v1/api-tokens', { name: `fuzz-${role}`, role })).body.token as string);
    // A real node credential, so node routes get past authentication and into their contracts.
    const enrolment = (await admin.post('/v1/enrolment-tokens', { node: 'fuzzed' })).body.token as string;
    const profile = { hostname: 'h', os: 'linux', arch: 'x64', agent_version: 'fuzz', clock: new Date().toISOString() };
    tokens.push((await admin.as(undefined).post('/v1/enrol', { token: enrolment, profile, inventory: {} })).body.credential as string);
  });
  afterAll(async () => {
    await coord?.stop();
  });

  it('answers every generated request with no 5xx, no stack trace, and a bounded problem+json for every refusal; the ledger does not move', async () => {
    const doc = (await admin.get('/docs/json')).body as {
      paths: Record<
        string,
        Record<string, { parameters?: { name: string; in: string }[]; requestBody?: { content: Record<string, { schema: Record<string, unknown> }> } }>
      >;
    };
    const ops: Op[] = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => ({
        method: method.toUpperCase(),
        path,
        query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
        body: op.requestBody?.content['application/json']?.schema,
      })),
    );
    expect(ops.length).toBeGreaterThan(20);
    const before = (await admin.get('/v1/ledger/head')).body;
    const seen = new Map<string, number>();

    await fc.assert(
      fc.asyncProperty(generated([...ops, ...EXTRA], tokens), async (g) => {
        const a = await send(coord.url, g);
        seen.set(`${g.op.method} ${g.op.path} ${a.status}`, (seen.get(`${g.op.method} ${g.op.path} ${a.status}`) ?? 0) + 1);
        expect(a.status).toBeLessThan(500);
        expect(a.text).not.toMatch(STACK_TRACE);
        if (a.status >= 400) {
          expect(a.type).toMatch(/^application\/problem\+json/);
          const problem = JSON.parse(a.text) as { code?: unknown; status?: unknown; detail?: unknown };
          expect(problem).toEqual(expect.objectContaining({ code: expect.stringMatching(/^[a-z_0-9]+$/), status: a.status, detail: expect.any(String) }));
          expect(Buffer.byteLength(a.text)).toBeLessThan(MAX_PROBLEM_BYTES);
        }
      }),
      { numRuns: RUNS, endOnFailure: true, asyncReporter: report },
    );

    const statuses = [...seen.keys()].map((k) => Number(k.split(' ').at(-1)));
    process.stdout.write(`fuzz: ${RUNS} requests over ${ops.length + EXTRA.length} routes; statuses ${[...new Set(statuses)].sort().join(', ')}\n`);
    // The generator reaches past authentication and into the contracts, not just 401s.
    expect(statuses).toEqual(expect.arrayContaining([401, 422]));
    const after = (await admin.get('/v1/ledger/head')).body;
    expect(after).toEqual(before);
    expect((await admin.post('/v1/ledger/verify')).body).toEqual(expect.objectContaining({ ok: true }));
  });
});
