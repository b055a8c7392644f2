import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { jest } from '@jest/globals';
import pg from 'pg';
import { sha256Hex } from '#bundle';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { AGENT_PROFILE, Client, expectProblem, type Reply } from './support/http.js';

jest.setTimeout(120_000);

/**
 * Every bad request gets a problem+json answer with a stable code, a useful detail and no stack
 * trace, and leaves the ledger exactly where it was. Nothing a client sends may produce a 500.
 */

const BODY_LIMIT = 65_536;
const LONG_NAME = 'a'.repeat(64);
const HUGE = 99_999_999_999; // a safe integer, far beyond any version or int4 column

interface Ctx {
  readonly anon: Client;
  readonly admin: Client;
  readonly publisher: Client;
  readonly reader: Client;
  /** Credential of the enrolled node `own`. */
  readonly own: Client;
  /** An uploaded blob. */
  readonly blob: string;
  /** The token `own` enrolled with: already used. */
  readonly usedToken: string;
  /** A valid, unused enrolment token for `spare`; no case may use it up. */
  readonly spareToken: string;
  /** An enrolment token whose expiry lies in the past (PostgreSQL only: set through SQL). */
  readonly expiredToken?: string;
  readonly head: () => Promise<{ position: number; hash: string }>;
}

interface Case {
  readonly name: string;
  readonly status: number;
  readonly code: string;
  readonly send: (c: Ctx) => Promise<Reply>;
  /** Further checks on the answer or on state. */
  readonly then?: (reply: Reply, c: Ctx) => Promise<void> | void;
  readonly postgresOnly?: boolean;
}

/** A tree that would publish (and move the ledger) if the coordinator let it through. */
const wouldPublish = (c: Ctx, patch: Record<string, unknown> = {}) => ({
  message: 'must not land',
  nodes: { fresh: { artifacts: { 'a.json': c.blob } } },
  ...patch,
});
const withArtifact = (c: Ctx, name: string) => ({ message: 'must not land', nodes: { fresh: { artifacts: { [name]: c.blob } } } });
const withNode = (c: Ctx, node: string) => ({ message: 'must not land', nodes: { [node]: { artifacts: { 'a.json': c.blob } } } });
const rawJson = (client: Client, method: string, path: string, raw: string) =>
  client.request(method, path, { raw, headers: { 'content-type': 'application/json' } });
const enrolWith = (c: Ctx, token: string, patch: Record<string, unknown> = {}) =>
  c.anon.post('/v1/enrol', { token, profile: AGENT_PROFILE, inventory: {}, ...patch });
const flip = (s: string) => `${s.slice(0, -1)}${s.endsWith('A') ? 'B' : 'A'}`;
/** JSON.stringify cannot write an unpaired surrogate escape, so it is spliced into the text. */
const splice = (json: string, placeholder: string, raw: string) => {
  if (!json.includes(placeholder)) throw new TypeError(`${placeholder} is not in ${json}`);
  return json.replace(placeholder, raw);
};
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

const cases: Case[] = [
  // Malformed JSON and bodies that are not objects
  {
    name: 'publish with truncated JSON',
    status: 400,
    code: 'malformed_json',
    send: (c) => rawJson(c.publisher, 'POST', '/v1/publishes', '{"message": "x", "nodes": {'),
  },
  { name: 'enrol with JSON that is not JSON', status: 400, code: 'malformed_json', send: (c) => rawJson(c.anon, 'POST', '/v1/enrol', "{token: 'fle'}") },
  {
    name: 'publish with an empty body sent as application/json',
    status: 422,
    code: 'invalid_body',
    send: (c) => rawJson(c.publisher, 'POST', '/v1/publishes', ''),
  },
  { name: 'publish with a JSON null body', status: 422, code: 'invalid_body', send: (c) => rawJson(c.publisher, 'POST', '/v1/publishes', 'null') },
  { name: 'publish with a JSON array body', status: 422, code: 'invalid_body', send: (c) => c.publisher.post('/v1/publishes', [wouldPublish(c)]) },
  { name: 'publish with a JSON string body', status: 422, code: 'invalid_body', send: (c) => c.publisher.post('/v1/publishes', 'publish please') },
  {
    name: 'publish sent as text/xml',
    status: 415,
    code: 'unsupported_media_type',
    send: (c) => c.publisher.request('POST', '/v1/publishes', { raw: '<publish/>', headers: { 'content-type': 'text/xml' } }),
  },

  // Wrong types
  {
    name: 'publish with a numeric message',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { message: 42 })),
  },
  { name: 'publish without a message', status: 422, code: 'invalid_body', send: (c) => c.publisher.post('/v1/publishes', { nodes: wouldPublish(c).nodes }) },
  {
    name: 'publish with nodes as an array',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { nodes: [wouldPublish(c).nodes] })),
  },
  {
    name: 'publish with expected_position as a string',
    status: 422,
    code: 'invalid_body',
    send: async (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { expected_position: String((await c.head()).position) })),
  },
  {
    name: 'publish with a negative expected_position',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { expected_position: -1 })),
  },
  {
    name: 'publish with a fractional expected_position',
    status: 422,
    code: 'invalid_body',
    send: async (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { expected_position: (await c.head()).position + 0.5 })),
  },
  {
    name: 'publish with prune as a string',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { prune: 'yes' })),
  },
  {
    name: 'publish with artifacts as a list',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { nodes: { fresh: { artifacts: [c.blob] } } })),
  },
  {
    name: 'enrolment token with ttl_seconds as a string',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.admin.post('/v1/enrolment-tokens', { node: 'fresh', ttl_seconds: '3600' }),
  },
  {
    name: 'enrolment token with ttl_seconds below the minimum',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.admin.post('/v1/enrolment-tokens', { node: 'fresh', ttl_seconds: 59 }),
  },
  { name: 'api token with an unknown role', status: 422, code: 'invalid_body', send: (c) => c.admin.post('/v1/api-tokens', { name: 'x', role: 'root' }) },
  { name: 'api token with an empty name', status: 422, code: 'invalid_body', send: (c) => c.admin.post('/v1/api-tokens', { name: '', role: 'reader' }) },
  {
    name: 'rollback with to_version as a string',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/nodes/known/rollback', { to_version: '1', message: 'x' }),
  },
  {
    name: 'rollback to version 0',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/nodes/known/rollback', { to_version: 0, message: 'x' }),
  },
  { name: 'rollback without a message', status: 422, code: 'invalid_body', send: (c) => c.publisher.post('/v1/nodes/known/rollback', { to_version: 1 }) },
  { name: 'retire with a numeric message', status: 422, code: 'invalid_body', send: (c) => c.publisher.post('/v1/nodes/known/retire', { message: 7 }) },
  {
    name: 'report with an unknown result',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.own.post('/v1/nodes/own/reports', { active_version: 1, result: 'bogus' }),
  },
  {
    name: 'report with a negative active_version',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.own.post('/v1/nodes/own/reports', { active_version: -1, result: 'applied' }),
  },
  {
    name: 'report with an active_version beyond any version',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.own.post('/v1/nodes/own/reports', { active_version: HUGE, result: 'applied' }),
  },
  {
    name: 'blobs/missing with digests as a string',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/blobs/missing', { digests: c.blob }),
  },
  { name: 'enrol without a profile', status: 422, code: 'invalid_body', send: (c) => c.anon.post('/v1/enrol', { token: c.spareToken, inventory: {} }) },
  { name: 'enrol with an overlong token', status: 422, code: 'invalid_body', send: (c) => enrolWith(c, `${c.spareToken}.${'A'.repeat(600)}`) },

  // Unknown fields
  {
    name: 'publish with an unknown top-level field',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { dry_run: true })),
  },
  {
    name: 'publish with an unknown field on a node',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { nodes: { fresh: { artifacts: { 'a.json': c.blob }, owner: 'x' } } })),
  },
  {
    name: 'enrolment token with an unknown field',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.admin.post('/v1/enrolment-tokens', { node: 'fresh', ttl: 60 }),
  },
  { name: 'enrol with an unknown field', status: 422, code: 'invalid_body', send: (c) => enrolWith(c, c.spareToken, { role: 'admin' }) },
  {
    name: 'rollback with an unknown field',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/nodes/known/rollback', { to_version: 1, message: 'x', force: true }),
  },
  { name: 'retire with an unknown field', status: 422, code: 'invalid_body', send: (c) => c.publisher.post('/v1/nodes/known/retire', { reason: 'x' }) },
  {
    name: 'report with an unknown field',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.own.post('/v1/nodes/own/reports', { active_version: 1, result: 'applied', node: 'known' }),
  },
  {
    name: 'api token with an unknown field',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.admin.post('/v1/api-tokens', { name: 'x', role: 'reader', expires: 1 }),
  },

  // Sizes
  {
    name: 'publish over the body limit',
    status: 413,
    code: 'body_too_large',
    send: (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { message: 'x'.repeat(BODY_LIMIT + 1024) })),
  },
  {
    name: 'enrol over the body limit',
    status: 413,
    code: 'body_too_large',
    send: (c) => enrolWith(c, c.spareToken, { inventory: { blob: 'x'.repeat(BODY_LIMIT * 2) } }),
  },
  {
    name: 'publish with a message over 4096 characters',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { message: 'm'.repeat(4097) })),
  },
  {
    name: 'publish with more than 256 artifacts on a node',
    status: 422,
    code: 'invalid_body',
    send: (c) =>
      c.publisher.post(
        '/v1/publishes',
        wouldPublish(c, { nodes: { fresh: { artifacts: Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`f${i}.json`, c.blob])) } } }),
      ),
  },
  {
    name: 'publish with deeply nested JSON inside the body limit',
    status: 422,
    code: 'invalid_body',
    send: (c) => rawJson(c.publisher, 'POST', '/v1/publishes', `{"message":${nested(30_000)},"nodes":{}}`),
  },

  // Digests and blobs
  {
    name: 'blob whose bytes hash to another digest',
    status: 422,
    code: 'digest_mismatch',
    send: (c) =>
      c.publisher.request('PUT', `/v1/blobs/${sha256Hex('claimed')}`, { raw: 'actual bytes', headers: { 'content-type': 'application/octet-stream' } }),
    then: async (r, c) => {
      expect(r.body).toEqual(expect.objectContaining({ expected: sha256Hex('claimed'), actual: sha256Hex('actual bytes') }));
      expect((await c.publisher.post('/v1/blobs/missing', { digests: [sha256Hex('claimed'), sha256Hex('actual bytes')] })).body.missing).toHaveLength(2);
    },
  },
  {
    name: 'blob under a digest that is not lowercase hex',
    status: 422,
    code: 'invalid_path',
    send: (c) => c.publisher.request('PUT', `/v1/blobs/${sha256Hex('x').toUpperCase()}`, { raw: 'x', headers: { 'content-type': 'application/octet-stream' } }),
  },
  {
    name: 'blob sent as application/json',
    status: 415,
    code: 'unsupported_media_type',
    send: (c) => c.publisher.request('PUT', `/v1/blobs/${sha256Hex('"x"')}`, { raw: '"x"', headers: { 'content-type': 'application/json' } }),
  },
  // Content codings: the coordinator decodes none, so a coded body is refused before it is read,
  // whether its bytes are coded or (the client's mistake) plain JSON under the header.
  ...(
    [
      [
        'publish: plain JSON sent under Content-Encoding: gzip',
        (c: Ctx) =>
          c.publisher.request('POST', '/v1/publishes', {
            raw: JSON.stringify(wouldPublish(c)),
            headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
          }),
      ],
      [
        'publish: a gzip-coded body',
        (c: Ctx) =>
          c.publisher.request('POST', '/v1/publishes', {
            raw: gzipSync(JSON.stringify(wouldPublish(c))),
            headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
          }),
      ],
      [
        'publish: gzip after identity in a list',
        (c: Ctx) =>
          c.publisher.request('POST', '/v1/publishes', {
            raw: JSON.stringify(wouldPublish(c)),
            headers: { 'content-type': 'application/json', 'content-encoding': 'identity, gzip' },
          }),
      ],
      [
        'blob upload under Content-Encoding: deflate',
        (c: Ctx) =>
          c.publisher.request('PUT', `/v1/blobs/${sha256Hex('coded')}`, {
            raw: 'coded',
            headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'deflate' },
          }),
      ],
      [
        'enrol (anonymous) under Content-Encoding: br, with the spare token',
        (c: Ctx) =>
          c.anon.request('POST', '/v1/enrol', {
            raw: JSON.stringify({ token: c.spareToken, profile: AGENT_PROFILE, inventory: {} }),
            headers: { 'content-type': 'application/json', 'content-encoding': 'br' },
          }),
      ],
      [
        "a node's report under Content-Encoding: x-gzip",
        (c: Ctx) =>
          c.own.request('POST', '/v1/nodes/own/reports', {
            raw: JSON.stringify({ active_version: 1, result: 'applied' }),
            headers: { 'content-type': 'application/json', 'content-encoding': 'x-gzip' },
          }),
      ],
    ] as const
  ).map(([name, send]): Case => ({
    name,
    status: 415,
    code: 'unsupported_content_encoding',
    send,
    then: (r) => {
      expect(r.headers.get('accept-encoding')).toBe('identity');
      expect(r.body.accepted_encodings).toEqual(['identity']);
      expect(r.body.detail).toMatch(
        /^the body is sent with Content-Encoding "[^"]+"; the coordinator decodes no content coding: send the body as is \(identity\), without Content-Encoding$/,
      );
    },
  })),
  // identity is no coding at all: the body is read and judged on its own (here: invalid).
  {
    name: 'publish under Content-Encoding: identity, judged on its body',
    status: 422,
    code: 'invalid_body',
    send: (c) =>
      c.publisher.request('POST', '/v1/publishes', {
        raw: JSON.stringify({ message: 'x' }),
        headers: { 'content-type': 'application/json', 'content-encoding': 'Identity' },
      }),
  },
  {
    name: 'blobs/missing with an uppercase digest',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/blobs/missing', { digests: [c.blob.toUpperCase()] }),
  },
  {
    name: 'publish with an artifact digest that is not a sha256',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { nodes: { fresh: { artifacts: { 'a.json': c.blob.slice(1) } } } })),
  },
  {
    name: 'publish referencing a blob never uploaded',
    status: 422,
    code: 'missing_blobs',
    send: (c) =>
      c.publisher.post('/v1/publishes', { message: 'x', nodes: { fresh: { artifacts: { 'a.json': c.blob, 'b.json': sha256Hex('never uploaded') } } } }),
    then: (r) => expect(r.body.missing).toEqual([sha256Hex('never uploaded')]),
  },

  // Node names: DNS labels only, in bodies and in paths
  ...['Bad_Name', '-x', 'x-', LONG_NAME, 'UPPER', 'a.b', ''].map((node): Case => ({
    name: `publish with node name ${JSON.stringify(node.length > 20 ? `${node.length} chars` : node)}`,
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/publishes', withNode(c, node)),
  })),
  { name: 'enrolment token for node Bad_Name', status: 422, code: 'invalid_body', send: (c) => c.admin.post('/v1/enrolment-tokens', { node: 'Bad_Name' }) },
  {
    name: 'enrolment token for a 64-character node name',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.admin.post('/v1/enrolment-tokens', { node: LONG_NAME }),
  },
  { name: 'versions of node Bad_Name', status: 422, code: 'invalid_path', send: (c) => c.reader.get('/v1/nodes/Bad_Name/versions') },
  { name: 'rollback of node -x', status: 422, code: 'invalid_path', send: (c) => c.publisher.post('/v1/nodes/-x/rollback', { to_version: 1, message: 'x' }) },
  { name: 'retire of a 64-character node name', status: 422, code: 'invalid_path', send: (c) => c.publisher.post(`/v1/nodes/${LONG_NAME}/retire`, {}) },
  { name: 'revoke the credential of node Bad_Name', status: 422, code: 'invalid_path', send: (c) => c.admin.delete('/v1/nodes/Bad_Name/credential') },
  { name: 'bundle of node Bad_Name', status: 422, code: 'invalid_path', send: (c) => c.own.get('/v1/nodes/Bad_Name/bundle') },

  // Artifact names: plain file names only
  ...['../etc/passwd', '.hidden', 'a/b.json', 'VERSION', '', 'x'.repeat(129)].map((name): Case => ({
    name: `publish with artifact name ${JSON.stringify(name.length > 20 ? `${name.length} chars` : name)}`,
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/publishes', withArtifact(c, name)),
  })),

  // Unknown nodes, versions and publishes
  {
    name: 'rollback of an unknown node',
    status: 404,
    code: 'unknown_node',
    send: (c) => c.publisher.post('/v1/nodes/nobody/rollback', { to_version: 1, message: 'x' }),
  },
  { name: 'retire of an unknown node', status: 404, code: 'unknown_node', send: (c) => c.publisher.post('/v1/nodes/nobody/retire', { message: 'x' }) },
  { name: 'versions of an unknown node', status: 404, code: 'unknown_node', send: (c) => c.reader.get('/v1/nodes/nobody/versions') },
  { name: 'a version of an unknown node', status: 404, code: 'unknown_node', send: (c) => c.reader.get('/v1/nodes/nobody/versions/1') },
  { name: 'diff of an unknown node', status: 404, code: 'unknown_node', send: (c) => c.reader.get('/v1/nodes/nobody/diff?from=0&to=1') },
  { name: 'a version a known node does not have', status: 404, code: 'unknown_version', send: (c) => c.reader.get('/v1/nodes/known/versions/99') },
  { name: 'a version number beyond any version', status: 422, code: 'invalid_path', send: (c) => c.reader.get(`/v1/nodes/known/versions/${HUGE}`) },
  {
    name: 'diff to a version number beyond any version',
    status: 422,
    code: 'invalid_query',
    send: (c) => c.reader.get(`/v1/nodes/known/diff?from=1&to=${HUGE}`),
  },
  {
    name: 'rollback to a version the node does not have',
    status: 404,
    code: 'unknown_version',
    send: (c) => c.publisher.post('/v1/nodes/known/rollback', { to_version: 99, message: 'x' }),
  },
  {
    name: 'rollback to a version number beyond any version',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/nodes/known/rollback', { to_version: HUGE, message: 'x' }),
  },
  { name: 'an unknown publish', status: 404, code: 'unknown_publish', send: (c) => c.reader.get('/v1/publishes/00000000-0000-4000-8000-000000000000') },
  { name: 'a publish id that is not a uuid', status: 422, code: 'invalid_path', send: (c) => c.reader.get('/v1/publishes/latest') },
  { name: 'a version that is not a number', status: 422, code: 'invalid_path', send: (c) => c.reader.get('/v1/nodes/known/versions/abc') },
  { name: 'version 0', status: 422, code: 'invalid_path', send: (c) => c.reader.get('/v1/nodes/known/versions/0') },
  { name: 'a version written in hex', status: 422, code: 'invalid_path', send: (c) => c.reader.get('/v1/nodes/known/versions/0x1') },
  { name: 'a version written with an exponent', status: 422, code: 'invalid_path', send: (c) => c.reader.get('/v1/nodes/known/versions/1e0') },
  { name: 'revoke the credential of a node that holds none', status: 404, code: 'not_found', send: (c) => c.admin.delete('/v1/nodes/known/credential') },

  // Rollback and retire rules
  {
    name: 'rollback to the head version (not older)',
    status: 422,
    code: 'invalid_rollback_target',
    send: (c) => c.publisher.post('/v1/nodes/known/rollback', { to_version: 2, message: 'x' }),
  },
  {
    name: 'rollback to a retirement',
    status: 422,
    code: 'invalid_rollback_target',
    send: (c) => c.publisher.post('/v1/nodes/phoenix/rollback', { to_version: 2, message: 'x' }),
  },
  { name: 'retire a node twice', status: 409, code: 'node_retired', send: (c) => c.publisher.post('/v1/nodes/gone/retire', { message: 'again' }) },

  // Optimistic concurrency
  {
    name: 'publish with a stale expected_position',
    status: 409,
    code: 'stale_position',
    send: async (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { expected_position: (await c.head()).position - 1 })),
    then: async (r, c) => expect(r.body.position).toBe((await c.head()).position),
  },
  {
    name: 'publish with an expected_position ahead of the ledger',
    status: 409,
    code: 'stale_position',
    send: async (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { expected_position: (await c.head()).position + 1 })),
  },
  {
    name: 'rollback with a stale expected_position',
    status: 409,
    code: 'stale_position',
    send: async (c) => c.publisher.post('/v1/nodes/known/rollback', { to_version: 1, message: 'x', expected_position: (await c.head()).position - 1 }),
  },
  {
    name: 'retire with a stale expected_position',
    status: 409,
    code: 'stale_position',
    send: async (c) => c.publisher.post('/v1/nodes/known/retire', { expected_position: (await c.head()).position - 1 }),
  },

  // Roles and credentials
  { name: 'publish without a token', status: 401, code: 'unauthenticated', send: (c) => c.anon.post('/v1/publishes', wouldPublish(c)) },
  {
    name: 'publish with an unknown token',
    status: 401,
    code: 'unauthenticated',
    send: (c) => c.anon.post('/v1/publishes', wouldPublish(c), { token: `flt.${'0'.repeat(18)}.${'A'.repeat(43)}` }),
  },
  {
    name: 'publish with a token whose secret is wrong',
    status: 401,
    code: 'unauthenticated',
    send: (c) => c.anon.post('/v1/publishes', wouldPublish(c), { token: flip(c.publisher.token as string) }),
  },
  {
    name: 'publish with an enrolment token as bearer',
    status: 401,
    code: 'unauthenticated',
    send: (c) => c.anon.post('/v1/publishes', wouldPublish(c), { token: c.spareToken }),
  },
  { name: 'publish as a reader', status: 403, code: 'forbidden', send: (c) => c.reader.post('/v1/publishes', wouldPublish(c)) },
  { name: 'retire as a reader', status: 403, code: 'forbidden', send: (c) => c.reader.post('/v1/nodes/known/retire', {}) },
  { name: 'api token as a reader', status: 403, code: 'forbidden', send: (c) => c.reader.post('/v1/api-tokens', { name: 'x', role: 'admin' }) },
  { name: 'api token as a publisher', status: 403, code: 'forbidden', send: (c) => c.publisher.post('/v1/api-tokens', { name: 'x', role: 'admin' }) },
  { name: 'enrolment token as a publisher', status: 403, code: 'forbidden', send: (c) => c.publisher.post('/v1/enrolment-tokens', { node: 'fresh' }) },
  { name: 'revoke a credential as a publisher', status: 403, code: 'forbidden', send: (c) => c.publisher.delete('/v1/nodes/own/credential') },
  { name: 'publish with a node credential', status: 403, code: 'forbidden', send: (c) => c.own.post('/v1/publishes', wouldPublish(c)) },
  { name: 'ledger head with a node credential', status: 403, code: 'forbidden', send: (c) => c.own.get('/v1/ledger/head') },
  { name: "another node's bundle", status: 403, code: 'forbidden', send: (c) => c.own.get('/v1/nodes/known/bundle') },
  {
    name: 'a report for another node',
    status: 403,
    code: 'forbidden',
    send: (c) => c.own.post('/v1/nodes/known/reports', { active_version: 1, result: 'applied' }),
  },

  // Enrolment tokens
  { name: 'enrol with a used token', status: 401, code: 'invalid_enrolment_token', send: (c) => enrolWith(c, c.usedToken) },
  { name: 'enrol with a malformed token', status: 401, code: 'invalid_enrolment_token', send: (c) => enrolWith(c, 'fle.nope') },
  { name: 'enrol with an API token', status: 401, code: 'invalid_enrolment_token', send: (c) => enrolWith(c, c.publisher.token as string) },
  {
    name: 'enrol with a tampered secret',
    status: 401,
    code: 'invalid_enrolment_token',
    send: (c) => {
      const [k, id, secret, tp] = c.spareToken.split('.');
      return enrolWith(c, `${k}.${id}.${flip(secret)}.${tp}`);
    },
  },
  { name: 'enrol with a tampered thumbprint', status: 401, code: 'invalid_enrolment_token', send: (c) => enrolWith(c, flip(c.spareToken)) },
  {
    name: 'enrol with the thumbprint left off',
    status: 401,
    code: 'invalid_enrolment_token',
    send: (c) => enrolWith(c, c.spareToken.split('.').slice(0, 3).join('.')),
  },
  {
    name: 'enrol with an unknown token id',
    status: 401,
    code: 'invalid_enrolment_token',
    send: (c) => {
      const [k, , secret, tp] = c.spareToken.split('.');
      return enrolWith(c, `${k}.${'0'.repeat(18)}.${secret}.${tp}`);
    },
  },
  {
    name: 'enrol with an expired token',
    status: 401,
    code: 'invalid_enrolment_token',
    postgresOnly: true,
    send: (c) => enrolWith(c, c.expiredToken as string),
  },

  // NUL characters and unpaired surrogates, which PostgreSQL text and jsonb cannot hold
  {
    name: 'publish with a NUL in the message',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.publisher.post('/v1/publishes', wouldPublish(c, { message: 'before\u0000after' })),
  },
  { name: 'publish with a NUL in a node name', status: 422, code: 'invalid_body', send: (c) => c.publisher.post('/v1/publishes', withNode(c, 'fresh\u0000')) },
  {
    name: 'enrol with a NUL in the hostname',
    status: 422,
    code: 'invalid_body',
    send: (c) => enrolWith(c, c.spareToken, { profile: { ...AGENT_PROFILE, hostname: 'host\u0000' } }),
  },
  {
    name: 'report with a NUL in the error',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.own.post('/v1/nodes/own/reports', { active_version: 1, result: 'failed', error: 'boom\u0000' }),
  },
  {
    name: 'api token with a NUL in the name',
    status: 422,
    code: 'invalid_body',
    send: (c) => c.admin.post('/v1/api-tokens', { name: 'x\u0000', role: 'reader' }),
  },
  { name: 'publishes with a NUL in the cursor', status: 422, code: 'invalid_query', send: (c) => c.reader.get('/v1/publishes?cursor=%00') },
  { name: 'versions of a node named NUL', status: 422, code: 'invalid_path', send: (c) => c.reader.get('/v1/nodes/%00/versions') },
  {
    name: 'publish with an unpaired surrogate in the message',
    status: 422,
    code: 'invalid_body',
    send: (c) => rawJson(c.publisher, 'POST', '/v1/publishes', splice(JSON.stringify(wouldPublish(c)), '"must not land"', '"\\ud800"')),
  },
  {
    name: 'enrol with an unpaired surrogate in the hostname',
    status: 422,
    code: 'invalid_body',
    send: (c) =>
      rawJson(
        c.anon,
        'POST',
        '/v1/enrol',
        splice(JSON.stringify({ token: c.spareToken, profile: { ...AGENT_PROFILE, hostname: 'HOST' }, inventory: {} }), '"HOST"', '"\\udc00"'),
      ),
  },
  {
    name: 'report with an unpaired surrogate in installed',
    status: 422,
    code: 'invalid_body',
    send: (c) => rawJson(c.own, 'POST', '/v1/nodes/own/reports', '{"active_version":1,"result":"applied","installed":["\\ud800"]}'),
  },

  // Query parameters
  { name: 'ledger events with limit=0', status: 422, code: 'invalid_query', send: (c) => c.reader.get('/v1/ledger/events?limit=0') },
  { name: 'ledger events with limit=1001', status: 422, code: 'invalid_query', send: (c) => c.reader.get('/v1/ledger/events?limit=1001') },
  { name: 'ledger events with limit=abc', status: 422, code: 'invalid_query', send: (c) => c.reader.get('/v1/ledger/events?limit=abc') },
  { name: 'ledger events with after=-1', status: 422, code: 'invalid_query', send: (c) => c.reader.get('/v1/ledger/events?after=-1') },
  { name: 'ledger events with an unknown parameter', status: 422, code: 'invalid_query', send: (c) => c.reader.get('/v1/ledger/events?before=3') },
  { name: 'publishes with cursor=abc', status: 422, code: 'invalid_query', send: (c) => c.reader.get('/v1/publishes?cursor=abc') },
  {
    name: 'publishes with a cursor no page returned',
    status: 422,
    code: 'invalid_query',
    send: (c) => c.reader.get('/v1/publishes?cursor=99999999999999999999999'),
  },
  { name: 'versions with cursor=abc', status: 422, code: 'invalid_query', send: (c) => c.reader.get('/v1/nodes/known/versions?cursor=abc') },
  { name: 'versions with a cursor no page returned', status: 422, code: 'invalid_query', send: (c) => c.reader.get(`/v1/nodes/known/versions?cursor=${HUGE}`) },
  { name: 'versions with limit=0', status: 422, code: 'invalid_query', send: (c) => c.reader.get('/v1/nodes/known/versions?limit=0') },
  { name: 'node list with a parameter it does not take', status: 422, code: 'invalid_query', send: (c) => c.reader.get('/v1/nodes?node=known') },
  { name: 'diff without to', status: 422, code: 'invalid_query', send: (c) => c.reader.get('/v1/nodes/known/diff?from=1') },
  { name: 'diff with from=abc', status: 422, code: 'invalid_query', send: (c) => c.reader.get('/v1/nodes/known/diff?from=abc&to=1') },
  { name: 'ledger verify with mirror=maybe', status: 422, code: 'invalid_query', send: (c) => c.reader.post('/v1/ledger/verify?mirror=maybe') },

  // Unknown routes
  { name: 'an unknown route', status: 404, code: 'not_found', send: (c) => c.reader.get('/v1/nope') },
  { name: 'an unknown API version', status: 404, code: 'not_found', send: (c) => c.publisher.post('/v2/publishes', wouldPublish(c)) },
  { name: 'an unknown route without a token', status: 404, code: 'not_found', send: (c) => c.anon.get('/admin') },
];

const targets = [{ database: 'pglite' as const }, ...(hasPostgres ? [{ database: 'postgres' as const }] : [])];

describe.each(targets)('bad input on $database', ({ database }) => {
  let coordinator: CoordinatorProcess;
  let dataDir: string;
  let ctx: Ctx;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'florete-bad-input-'));
    const databaseUrl = database === 'postgres' ? await createPostgresDatabase() : undefined;
    coordinator = await startCoordinatorProcess({ databaseUrl, dataDir, env: { FLORETE_BODY_LIMIT: String(BODY_LIMIT) } });
    const anon = new Client(coordinator.url);
    const admin = anon.as(coordinator.adminToken!);
    const token = async (role: string) => {
      const r = await admin.post('/v1/api-tokens', { name: `${role}-bad-input`, role });
      if (r.status !== 201) throw new Error(`creating a ${role} token answered ${r.status}: ${r.text}`);
      return r.body.token as string;
    };
    const publisher = anon.as(await token('publisher'));
    const reader = anon.as(await token('reader'));
    const blob = await publisher.putBlob('{"bad":"input"}\n');
    const other = await publisher.putBlob('{"other":"blob"}\n');
    const ok = async (r: Promise<Reply>, status = 201) => {
      const reply = await r;
      if (reply.status !== status) throw new Error(`setup step answered ${reply.status}: ${reply.text}`);
      return reply;
    };
    const publish = (nodes: Record<string, Record<string, string>>) =>
      ok(publisher.post('/v1/publishes', { message: 'setup', nodes: Object.fromEntries(Object.entries(nodes).map(([n, artifacts]) => [n, { artifacts }])) }));
    // known: versions 1 and 2. gone: retired at 2. phoenix: retired at 2, back at 3.
    await publish({ known: { 'a.json': blob }, gone: { 'a.json': blob }, phoenix: { 'a.json': blob } });
    await publish({ known: { 'a.json': blob, 'b.json': other } });
    await ok(publisher.post('/v1/nodes/gone/retire', {}));
    await ok(publisher.post('/v1/nodes/phoenix/retire', {}));
    await publish({ phoenix: { 'a.json': other } });
    const enrolmentToken = async (node: string) => (await ok(admin.post('/v1/enrolment-tokens', { node }))).body.token as string;
    const usedToken = await enrolmentToken('own');
    const own = anon.as((await ok(anon.post('/v1/enrol', { token: usedToken, profile: AGENT_PROFILE, inventory: {} }))).body.credential);
    const spareToken = await enrolmentToken('spare');
    let expiredToken: string | undefined;
    if (databaseUrl) {
      // A token's shortest life is 60 s; rather than wait, move its expiry into the past.
      expiredToken = await enrolmentToken('late');
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        const updated = await client.query(`UPDATE enrolment_tokens SET expires_at = now() - interval '1 minute' WHERE id = $1`, [expiredToken.split('.')[1]]);
        if (updated.rowCount !== 1) throw new Error('could not expire the enrolment token');
      } finally {
        await client.end();
      }
    }
    const head = async () => (await ok(reader.get('/v1/ledger/head'), 200)).body as { position: number; hash: string };
    ctx = { anon, admin, publisher, reader, own, blob, usedToken, spareToken, expiredToken, head };
  });

  afterAll(async () => {
    await coordinator?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const applicable = cases.filter((c) => !c.postgresOnly || database === 'postgres');

  /** The message of the coordinator's last logged unhandled error: what a 500 hid from the client. */
  const lastUnhandled = (): string => {
    for (const line of [...coordinator.output].reverse()) {
      if (!line.includes('"unhandled error"')) continue;
      try {
        return String((JSON.parse(line) as { err?: { message?: string } }).err?.message);
      } catch {
        return line.slice(0, 300);
      }
    }
    return '(nothing logged)';
  };

  it.each(applicable)('$name → $status $code', async ({ send, status, code, then }) => {
    const before = await ctx.head();
    const reply = await send(ctx);
    const after = await ctx.head();
    if (reply.status >= 500)
      throw new Error(
        `expected ${status} ${code}, got ${reply.status} ${reply.text}\ncoordinator log: ${lastUnhandled()}\nledger head ${JSON.stringify(after) === JSON.stringify(before) ? 'did not move' : 'MOVED'}`,
      );
    expectProblem(reply, status, code);
    await then?.(reply, ctx);
    expect(after).toEqual(before);
  });

  it('still verifies its ledger, and the spare token still enrols, after every bad request', async () => {
    expect((await ctx.reader.post('/v1/ledger/verify')).body).toEqual(expect.objectContaining({ ok: true, position: (await ctx.head()).position }));
    const enrolled = await enrolWith(ctx, ctx.spareToken);
    expect(enrolled.status).toBe(201);
    expect(enrolled.body.node).toBe('spare');
    // None of the trees meant to be refused landed.
    expectProblem(await ctx.reader.get('/v1/nodes/fresh/versions'), 404, 'unknown_node');
    // The credential the bad requests were sent with was never revoked or replaced by any of them.
    expect((await ctx.own.post('/v1/nodes/own/reports', { active_version: 0, result: 'up_to_date' })).status).toBe(204);
  });
});
