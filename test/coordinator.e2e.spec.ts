import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import * as jose from 'jose';
import { BundlePayload } from '#contracts';
import { canonicalJson, setDigest, sha256Hex, verifyBundleSignature, EMPTY_SET_DIGEST } from '#bundle';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { AGENT_PROFILE, Client, expectProblem, type Reply } from './support/http.js';

jest.setTimeout(120_000);

type Files = Record<string, string>;
type Jwks = jose.JSONWebKeySet;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const API_TOKEN = /^flt\.[0-9a-f]{18}\.[A-Za-z0-9_-]{43}$/;
const NODE_CREDENTIAL = /^fln\.[0-9a-f]{18}\.[A-Za-z0-9_-]{43}$/;
const ENROLMENT_TOKEN = /^fle\.[0-9a-f]{18}\.[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{43}$/;

const targets = [{ database: 'pglite' as const }, ...(hasPostgres ? [{ database: 'postgres' as const }] : [])];

const refsOf = (files: Files) => Object.entries(files).map(([name, content]) => ({ name, sha256: sha256Hex(content) }));

/** Verifies a served bundle against a JWKS and parses its payload against the contract. */
async function openBundle(jws: string, jwks: Jwks) {
  const { payload, kid } = await verifyBundleSignature(jws, jwks);
  const text = Buffer.from(payload).toString('utf8');
  // The signed bytes are canonical JSON: re-serialising must not change a byte.
  expect(canonicalJson(JSON.parse(text))).toBe(text);
  return { kid, header: jose.decodeProtectedHeader(jws), bundle: BundlePayload.parse(JSON.parse(text)) };
}

/** The decoded artifacts of a bundle, checked against their own digests and sizes. */
function filesOf(bundle: BundlePayload): Files {
  const out: Files = {};
  for (const a of bundle.artifacts) {
    const bytes = Buffer.from(a.content, 'base64');
    expect(sha256Hex(bytes)).toBe(a.sha256);
    expect(bytes.byteLength).toBe(a.size);
    out[a.name] = bytes.toString('utf8');
  }
  return out;
}

describe.each(targets)('coordinator on $database', ({ database }) => {
  let coordinator: CoordinatorProcess;
  let dataDir: string;
  let databaseUrl: string | undefined;
  let anon: Client;
  let admin: Client;
  let publisher: Client;
  let reader: Client;

  const jwks = async (): Promise<Jwks> => (await anon.get('/.well-known/jwks.json')).body as Jwks;
  const head = async (): Promise<{ position: number; hash: string }> => (await reader.get('/v1/ledger/head')).body;

  async function createApiToken(role: 'admin' | 'publisher' | 'reader', name: string): Promise<string> {
    const r = await admin.post('/v1/api-tokens', { name, role });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      id: expect.any(String),
      name,
      role,
      token: expect.stringMatching(API_TOKEN),
      created_at: expect.any(String),
      created_by: 'admin',
      expires_at: expect.any(String),
      scope: null,
      default_expiry: true,
    });
    return r.body.token as string;
  }

  /** Uploads each file's bytes, then publishes the tree; the reply is returned unchecked. */
  async function publish(tree: Record<string, Files>, message = 'e2e publish', extra: Record<string, unknown> = {}, as = publisher): Promise<Reply> {
    const nodes: Record<string, { artifacts: Record<string, string> }> = {};
    for (const [node, files] of Object.entries(tree)) {
      nodes[node] = { artifacts: {} };
      for (const [name, content] of Object.entries(files)) nodes[node].artifacts[name] = await publisher.putBlob(content);
    }
    return as.post('/v1/publishes', { message, nodes, ...extra });
  }

  async function enrolmentToken(node: string): Promise<string> {
    const r = await admin.post('/v1/enrolment-tokens', { node });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ token: expect.stringMatching(ENROLMENT_TOKEN), node, expires_at: expect.stringMatching(ISO) });
    return r.body.token as string;
  }

  /** Enrols a node the way an agent does and returns a client holding its credential. */
  async function enrol(node: string): Promise<Client> {
    const r = await anon.post('/v1/enrol', { token: await enrolmentToken(node), profile: AGENT_PROFILE, inventory: {} });
    expect(r.status).toBe(201);
    expect(r.body.credential).toMatch(NODE_CREDENTIAL);
    return anon.as(r.body.credential);
  }

  const poll = (client: Client, node: string, etag?: string | null) =>
    client.get(`/v1/nodes/${node}/bundle`, etag ? { headers: { 'if-none-match': etag } } : {});

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'florete-e2e-'));
    databaseUrl = database === 'postgres' ? await createPostgresDatabase() : undefined;
    coordinator = await startCoordinatorProcess({ databaseUrl, dataDir });
    const adminToken = coordinator.adminToken;
    expect(adminToken).toMatch(API_TOKEN);
    anon = new Client(coordinator.url);
    admin = anon.as(adminToken);
    publisher = anon.as(await createApiToken('publisher', 'publisher-e2e'));
    reader = anon.as(await createApiToken('reader', 'reader-e2e'));
  });

  afterAll(async () => {
    await coordinator?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  describe('publish and poll', () => {
    it('serves an enrolled node its bundle, signed with a JWKS key and carrying the published bytes', async () => {
      const alpha = { 'agent.json': '{\n  "poll_interval": 30\n}\n', 'flor.json': '{\n  "acl": []\n}\n' };
      const pub = await publish({ alpha, beta: { 'flor.json': '{"beta":1}\n' } }, 'first publish');
      expect(pub.status).toBe(201);
      expect(pub.body).toEqual({
        publish_id: expect.stringMatching(UUID),
        position: expect.any(Number),
        changed: [
          { node: 'alpha', from: 0, to: 1 },
          { node: 'beta', from: 0, to: 1 },
        ],
        unchanged: 0,
      });
      expect((await head()).position).toBe(pub.body.position);

      const token = await enrolmentToken('alpha');
      const enrolled = await anon.post('/v1/enrol', { token, profile: AGENT_PROFILE, inventory: { cpus: 2 } });
      expect(enrolled.status).toBe(201);
      const keys = await jwks();
      expect(enrolled.body).toEqual({
        node: 'alpha',
        credential: expect.stringMatching(NODE_CREDENTIAL),
        jwks: keys,
        briefing: expect.objectContaining({ outcome: 'pass' }),
        installed: null,
        owned: null,
      });
      const node = anon.as(enrolled.body.credential);

      // A publish signs nothing: the bundle is signed as its node fetches it, once per fetch of a 200.
      const signed = async () => Number(/^florete_bundles_signed_total (\d+)$/m.exec((await reader.get('/metrics')).text)?.[1]);
      const signedBefore = await signed();
      const served = await poll(node, 'alpha');
      expect(served.status).toBe(200);
      expect(await signed()).toBe(signedBefore + 1);
      expect(served.headers.get('content-type')).toMatch(/^application\/jose\b/);
      const etag = served.headers.get('etag');
      expect(etag).toMatch(/^"[^"]+"$/); // strong: no W/ prefix

      const { header, kid, bundle } = await openBundle(served.text, keys);
      expect(header).toEqual({ alg: 'EdDSA', kid, typ: 'florete-bundle+jws' });
      expect(bundle).toEqual(
        expect.objectContaining({ node: 'alpha', version: 1, retired: false, publish_id: pub.body.publish_id, issued_at: expect.stringMatching(ISO) }),
      );
      expect(bundle.position).toBeLessThanOrEqual(pub.body.position);
      expect(bundle.artifacts.map((a) => a.name)).toEqual(['agent.json', 'flor.json']);
      expect(filesOf(bundle)).toEqual(alpha);
      expect(bundle.set_digest).toBe(setDigest(refsOf(alpha)));

      // The enrolment token pins the key that signs new bundles (RFC 7638 thumbprint).
      const signer = keys.keys.find((k) => k.kid === kid);
      expect(signer).toBeDefined();
      expect(token.split('.')[3]).toBe(await jose.calculateJwkThumbprint(signer as jose.JWK, 'sha256'));

      const notModified = await poll(node, 'alpha', etag);
      expect(notModified.status).toBe(304);
      expect(notModified.text).toBe('');
      expect(notModified.headers.get('etag')).toBe(etag);

      const otherTag = await poll(node, 'alpha', '"not-the-current-etag"');
      expect(otherTag.status).toBe(200);
      expect(otherTag.text).toBe(served.text);

      // RFC 9110: a list of tags, weak comparison, and `*` all match the current representation.
      expect((await poll(node, 'alpha', `"stale", ${etag}`)).status).toBe(304);
      expect((await poll(node, 'alpha', `W/${etag}`)).status).toBe(304);
      expect((await poll(node, 'alpha', '*')).status).toBe(304);
      expect((await poll(node, 'alpha', '"stale", W/"older"')).status).toBe(200);
      // Two 200s since the first, the 304s signing nothing.
      expect(await signed()).toBe(signedBefore + 3);
    });

    it('stamps version+1 and a new ETag only on the nodes a publish changes', async () => {
      const pub1 = await publish({ gamma: { 'flor.json': 'gamma one\n' }, delta: { 'flor.json': 'delta one\n' } });
      expect(pub1.status).toBe(201);
      const node = await enrol('gamma');
      const first = await poll(node, 'gamma');
      expect(first.status).toBe(200);
      const etag1 = first.headers.get('etag');

      const at = await head();
      const pub2 = await publish({ gamma: { 'flor.json': 'gamma two\n' }, delta: { 'flor.json': 'delta one\n' } }, 'change gamma', {
        expected_position: at.position,
      });
      expect(pub2.status).toBe(201);
      expect(pub2.body.changed).toEqual([{ node: 'gamma', from: 1, to: 2 }]);
      expect(pub2.body.unchanged).toBe(1);

      const second = await poll(node, 'gamma', etag1);
      expect(second.status).toBe(200);
      const etag2 = second.headers.get('etag');
      expect(etag2).toMatch(/^"[^"]+"$/);
      expect(etag2).not.toBe(etag1);
      const { bundle } = await openBundle(second.text, await jwks());
      expect(bundle).toEqual(expect.objectContaining({ node: 'gamma', version: 2, publish_id: pub2.body.publish_id }));
      expect(filesOf(bundle)).toEqual({ 'flor.json': 'gamma two\n' });

      const onlyDelta = await publish({ gamma: { 'flor.json': 'gamma two\n' }, delta: { 'flor.json': 'delta two\n' } }, 'change delta');
      expect(onlyDelta.status).toBe(201);
      expect(onlyDelta.body.changed).toEqual([{ node: 'delta', from: 1, to: 2 }]);
      const withoutGamma = await publish({ delta: { 'flor.json': 'delta three\n' } }, 'a tree without gamma, not pruned');
      expect(withoutGamma.body.changed).toEqual([{ node: 'delta', from: 2, to: 3 }]);
      const untouched = await poll(node, 'gamma', etag2);
      expect(untouched.status).toBe(304);
      expect(untouched.headers.get('etag')).toBe(etag2);

      // An identical tree is a no-op: 200, nothing stamped, the ledger does not move.
      const before = await head();
      const same = await publish({ gamma: { 'flor.json': 'gamma two\n' }, delta: { 'flor.json': 'delta three\n' } }, 'same again');
      expect(same.status).toBe(200);
      expect(same.body).toEqual({ publish_id: null, position: before.position, changed: [], unchanged: 2 });
      expect(await head()).toEqual(before);
      expect((await poll(node, 'gamma', etag2)).status).toBe(304);
    });

    it('rotates the key: every head re-signed with the new key in the same step, new bundles signed with it, older kids still in the JWKS', async () => {
      await publish({ epsilon: { 'flor.json': 'epsilon one\n' } });
      const node = await enrol('epsilon');
      const before = await poll(node, 'epsilon');
      expect(before.status).toBe(200);
      const etagBefore = before.headers.get('etag');
      const keysBefore = await jwks();
      const oldKid = jose.decodeProtectedHeader(before.text).kid as string;
      expect(keysBefore.keys.map((k) => k.kid)).toContain(oldKid);

      expectProblem(await publisher.post('/v1/keys/rotate'), 403, 'forbidden');
      expectProblem(await reader.post('/v1/keys/rotate'), 403, 'forbidden');
      expect(await jwks()).toEqual(keysBefore);

      const rotated = await admin.post('/v1/keys/rotate');
      expect(rotated.status).toBe(201);
      const newKid = rotated.body.kid as string;
      expect(typeof newKid).toBe('string');
      expect(keysBefore.keys.map((k) => k.kid)).not.toContain(newKid);
      const keysAfter = await jwks();
      expect(rotated.body.jwks).toEqual(keysAfter);
      expect(keysAfter.keys.map((k) => k.kid)).toEqual([...keysBefore.keys.map((k) => k.kid), newKid]);
      for (const k of keysAfter.keys) expect(k).not.toHaveProperty('d'); // never a private key

      // The rotation re-signed the untouched node's head: same payload, the new key, a new ETag.
      expect(rotated.body).toMatchObject({ trust_version: 2, revoked: [], resigned: expect.any(Number) });
      const resigned = await poll(node, 'epsilon', etagBefore);
      expect(resigned.status).toBe(200);
      expect(resigned.text.split('.')[1]).toBe(before.text.split('.')[1]);
      expect((await openBundle(resigned.text, keysAfter)).kid).toBe(newKid);
      expect((await openBundle(before.text, keysAfter)).kid).toBe(oldKid);

      const pub = await publish({ epsilon: { 'flor.json': 'epsilon two\n' } }, 'after rotation');
      expect(pub.body.changed).toEqual([{ node: 'epsilon', from: 1, to: 2 }]);
      const after = await poll(node, 'epsilon', etagBefore);
      expect(after.status).toBe(200);
      const opened = await openBundle(after.text, keysAfter);
      expect(opened.header).toEqual({ alg: 'EdDSA', kid: newKid, typ: 'florete-bundle+jws' });
      expect(opened.bundle.version).toBe(2);
      await expect(verifyBundleSignature(after.text, keysBefore)).rejects.toMatchObject({ code: 'unknown_key' });

      // Enrolment tokens issued from now on pin the new key.
      const token = await enrolmentToken('epsilon');
      const newKey = keysAfter.keys.find((k) => k.kid === newKid) as jose.JWK;
      expect(token.split('.')[3]).toBe(await jose.calculateJwkThumbprint(newKey, 'sha256'));
      const reenrolled = await anon.post('/v1/enrol', { token, profile: AGENT_PROFILE, inventory: {} });
      expect(reenrolled.status).toBe(201);
      expect(reenrolled.body.jwks).toEqual(keysAfter);
    });
  });

  describe('roles', () => {
    const tree = { nodes: { 'role-probe': { artifacts: {} } }, message: 'must not land' };

    it('refuses a reader what publishers and admins may do', async () => {
      const before = await head();
      expectProblem(await reader.post('/v1/publishes', tree), 403, 'forbidden');
      expectProblem(
        await reader.request('PUT', `/v1/blobs/${sha256Hex('x')}`, { raw: 'x', headers: { 'content-type': 'application/octet-stream' } }),
        403,
        'forbidden',
      );
      expectProblem(await reader.post('/v1/blobs/missing', { digests: [] }), 403, 'forbidden');
      expectProblem(await reader.post('/v1/nodes/alpha/retire', {}), 403, 'forbidden');
      expectProblem(await reader.post('/v1/nodes/alpha/rollback', { to_version: 1, message: 'no' }), 403, 'forbidden');
      expectProblem(await reader.post('/v1/api-tokens', { name: 'sneaky', role: 'admin' }), 403, 'forbidden');
      expectProblem(await reader.post('/v1/enrolment-tokens', { node: 'alpha' }), 403, 'forbidden');
      expectProblem(await reader.delete('/v1/nodes/alpha/credential'), 403, 'forbidden');
      expect(await head()).toEqual(before);
      expect((await reader.get('/v1/nodes')).status).toBe(200);
      expect((await reader.post('/v1/ledger/verify')).status).toBe(200);
    });

    it('refuses a publisher what only admins may do', async () => {
      const before = await head();
      expectProblem(await publisher.post('/v1/enrolment-tokens', { node: 'alpha' }), 403, 'forbidden');
      expectProblem(await publisher.post('/v1/api-tokens', { name: 'sneaky', role: 'admin' }), 403, 'forbidden');
      expectProblem(await publisher.get('/v1/api-tokens'), 403, 'forbidden');
      expectProblem(await publisher.delete('/v1/nodes/alpha/credential'), 403, 'forbidden');
      expect(await head()).toEqual(before);
      expect((await publisher.get('/v1/ledger/head')).status).toBe(200);
    });

    it('lets an admin do what publishers and readers do', async () => {
      const sha = await admin.putBlob('admin blob\n');
      expect((await admin.post('/v1/blobs/missing', { digests: [sha] })).body).toEqual({ missing: [] });
      const pub = await publish({ zeta: { 'flor.json': 'zeta\n' } }, 'by an admin', {}, admin);
      expect(pub.status).toBe(201);
      const versions = await admin.get('/v1/nodes/zeta/versions');
      expect(versions.status).toBe(200);
      expect(versions.body.items[0]).toEqual(expect.objectContaining({ version: 1, actor: 'admin', message: 'by an admin' }));
      expect((await admin.get('/v1/api-tokens')).status).toBe(200);
    });

    it('answers 401 to a missing, malformed, unknown or forged bearer', async () => {
      const [, id, secret] = (admin.token as string).split('.');
      const forged = `flt.${id}.${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
      const unknown = `flt.${'0'.repeat(18)}.${'A'.repeat(43)}`;
      const before = await head();
      for (const auth of [
        undefined,
        'Bearer',
        'Bearer nonsense',
        `Bearer ${unknown}`,
        `Bearer ${forged}`,
        `Basic ${Buffer.from('admin:admin').toString('base64')}`,
      ]) {
        const headers: Record<string, string> = auth ? { authorization: auth } : {};
        expectProblem(await anon.get('/v1/nodes', { headers }), 401, 'unauthenticated');
        expectProblem(await anon.post('/v1/publishes', tree, { headers }), 401, 'unauthenticated');
        expectProblem(await anon.post('/v1/enrolment-tokens', { node: 'alpha' }, { headers }), 401, 'unauthenticated');
        expectProblem(await anon.get('/v1/nodes/alpha/bundle', { headers }), 401, 'unauthenticated');
        expectProblem(await anon.get('/metrics', { headers }), 401, 'unauthenticated');
      }
      expect(await head()).toEqual(before);
    });

    it('keeps a node credential to its own bundle and its own reports', async () => {
      await publish({ eta: { 'flor.json': 'eta\n' }, theta: { 'flor.json': 'theta\n' } });
      const eta = await enrol('eta');
      await enrol('theta');
      const before = await head();
      expectProblem(await poll(eta, 'theta'), 403, 'forbidden');
      expectProblem(await eta.post('/v1/nodes/theta/reports', { active_version: 1, result: 'applied' }), 403, 'forbidden');
      expectProblem(await eta.get('/v1/nodes'), 403, 'forbidden');
      expectProblem(await eta.get('/v1/ledger/head'), 403, 'forbidden');
      expectProblem(await eta.get('/v1/nodes/eta/versions'), 403, 'forbidden');
      expectProblem(await eta.get('/metrics'), 403, 'forbidden');
      expectProblem(await eta.post('/v1/publishes', tree), 403, 'forbidden');
      expectProblem(await eta.post('/v1/nodes/eta/retire', {}), 403, 'forbidden');
      expectProblem(await eta.post('/v1/enrolment-tokens', { node: 'eta' }), 403, 'forbidden');
      expect(await head()).toEqual(before);
      expect((await poll(eta, 'eta')).status).toBe(200);
      expect((await eta.post('/v1/nodes/eta/reports', { active_version: 1, result: 'applied' })).status).toBe(204);

      // An API token, even an admin's, is not a node credential: it never gets a bundle.
      const asAdmin = await poll(admin, 'eta');
      expect([401, 403]).toContain(asAdmin.status);
      expect(asAdmin.headers.get('content-type')).toMatch(/^application\/problem\+json\b/);
    });

    it('answers 401 everywhere to a revoked credential', async () => {
      await publish({ iota: { 'flor.json': 'iota\n' } });
      const node = await enrol('iota');
      expect((await poll(node, 'iota')).status).toBe(200);
      const revoked = await admin.delete('/v1/nodes/iota/credential');
      expect(revoked.status).toBe(200);
      expect(revoked.body).toEqual({ node: 'iota', revoked: 1 });
      expectProblem(await poll(node, 'iota'), 401, 'unauthenticated');
      expectProblem(await node.post('/v1/nodes/iota/reports', { active_version: 1, result: 'applied' }), 401, 'unauthenticated');
      expectProblem(await admin.delete('/v1/nodes/iota/credential'), 404, 'not_found');
    });

    it('serves health, readiness, the JWKS and the OpenAPI document without a token, and metrics to readers', async () => {
      expect((await anon.get('/healthz')).body).toEqual({ status: 'ok' });
      const ready = await anon.get('/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual(expect.objectContaining({ status: 'ready', database: database }));
      const keys = await jwks();
      expect(keys.keys.length).toBeGreaterThan(0);
      for (const k of keys.keys) expect(k).toEqual(expect.objectContaining({ kty: 'OKP', crv: 'Ed25519', kid: expect.any(String), x: expect.any(String) }));
      const docs = await anon.get('/docs/json');
      expect(docs.status).toBe(200);
      expect(docs.body.openapi).toMatch(/^3\./);
      expect(Object.keys(docs.body.paths)).toEqual(expect.arrayContaining(['/v1/publishes', '/v1/nodes/{node}/bundle', '/v1/enrol', '/v1/ledger/head']));
      // The Swagger UI and its files, set up on the first request to /docs (docs-http.ts); a path under /docs that is none of them is unknown.
      const ui = await anon.get('/docs');
      expect(ui.status).toBe(200);
      expect(ui.headers.get('content-type')).toMatch(/^text\/html/);
      expect(ui.text).toContain('swagger-ui.css');
      const css = await anon.get('/docs/swagger-ui.css');
      expect(css.status).toBe(200);
      expect(css.headers.get('content-type')).toMatch(/^text\/css/);
      expect((await anon.get('/docs-yaml')).text).toMatch(/^openapi: /m);
      const unknown = await anon.get('/docs/no-such-file');
      expect(unknown.status).toBe(404);
      expect(unknown.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const metrics = await reader.get('/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.text).toMatch(new RegExp(`^florete_ledger_position ${(await head()).position}$`, 'm'));
      expect(metrics.text).toMatch(/^florete_bundle_polls_total \d+$/m);
    });
  });

  describe('enrolment', () => {
    it('accepts a token once, and only with its own secret and the signing key thumbprint', async () => {
      await publish({ kappa: { 'flor.json': 'kappa\n' } });
      const token = await enrolmentToken('kappa');
      const [kind, id, secret, thumbprint] = token.split('.');
      const { publicKey } = await jose.generateKeyPair('Ed25519', { extractable: true });
      const strangerThumbprint = await jose.calculateJwkThumbprint(await jose.exportJWK(publicKey), 'sha256');
      const flip = (s: string) => `${s.slice(0, -1)}${s.endsWith('A') ? 'B' : 'A'}`;
      const before = await head();
      for (const bad of [
        `${kind}.${id}.${secret}.${strangerThumbprint}`,
        `${kind}.${id}.${secret}.${flip(thumbprint)}`,
        `${kind}.${id}.${flip(secret)}.${thumbprint}`,
        `${kind}.${'0'.repeat(18)}.${secret}.${thumbprint}`,
        `${kind}.${id}.${secret}`,
        `fln.${id}.${secret}`,
        'not a token',
      ]) {
        expectProblem(await anon.post('/v1/enrol', { token: bad, profile: AGENT_PROFILE, inventory: {} }), 401, 'invalid_enrolment_token');
      }
      // A rejected attempt writes nothing: no credential, no ledger event, the token is not used up.
      expect(await head()).toEqual(before);

      const enrolled = await anon.post('/v1/enrol', { token, profile: AGENT_PROFILE, inventory: {} });
      expect(enrolled.status).toBe(201);
      expect(enrolled.body.node).toBe('kappa');
      expect((await poll(anon.as(enrolled.body.credential), 'kappa')).status).toBe(200);

      const afterEnrol = await head();
      expect(afterEnrol.position).toBeGreaterThan(before.position);
      expectProblem(await anon.post('/v1/enrol', { token, profile: AGENT_PROFILE, inventory: {} }), 401, 'invalid_enrolment_token');
      expect(await head()).toEqual(afterEnrol);
      // The reuse attempt did not replace the credential the first enrolment issued.
      expect((await poll(anon.as(enrolled.body.credential), 'kappa')).status).toBe(200);
    });

    it('revokes the earlier credential when a node enrols again', async () => {
      await publish({ lambda: { 'flor.json': 'lambda\n' } });
      const first = await enrol('lambda');
      const firstPoll = await poll(first, 'lambda');
      expect(firstPoll.status).toBe(200);
      const etag = firstPoll.headers.get('etag');

      const second = await enrol('lambda');
      expectProblem(await poll(first, 'lambda', etag), 401, 'unauthenticated');
      expectProblem(await first.post('/v1/nodes/lambda/reports', { active_version: 1, result: 'up_to_date' }), 401, 'unauthenticated');
      expect((await poll(second, 'lambda', etag)).status).toBe(304);
      expect((await poll(second, 'lambda')).text).toBe(firstPoll.text);
    });

    it('enrols a node before anything is published for it, then serves its first bundle', async () => {
      const node = await enrol('mu');
      expectProblem(await poll(node, 'mu'), 404, 'unknown_node');
      await publish({ mu: { 'flor.json': 'mu\n' } });
      const served = await poll(node, 'mu');
      expect(served.status).toBe(200);
      expect((await openBundle(served.text, await jwks())).bundle.version).toBe(1);
    });
  });

  describe('history', () => {
    it('answers versions, version details and diffs, and stamps rollback and retire as new versions', async () => {
      const v1 = { 'a.json': 'one\n' };
      const v2 = { 'a.json': 'two\n', 'b.json': 'bee\n' };
      const v3 = { 'a.json': 'three\n' };
      const p1 = await publish({ hist: v1 }, 'v1');
      const p2 = await publish({ hist: v2 }, 'v2');
      const p3 = await publish({ hist: v3 }, 'v3');
      expect([p1.status, p2.status, p3.status]).toEqual([201, 201, 201]);
      expect(p3.body.changed).toEqual([{ node: 'hist', from: 2, to: 3 }]);
      const node = await enrol('hist');

      const versions = await reader.get('/v1/nodes/hist/versions');
      expect(versions.status).toBe(200);
      expect(versions.body.next_cursor).toBeNull();
      expect(versions.body.items.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
      expect(versions.body.items[0]).toEqual({
        version: 3,
        set_digest: setDigest(refsOf(v3)),
        retired: false,
        publish_id: p3.body.publish_id,
        actor: 'publisher-e2e',
        message: 'v3',
        recorded_at: expect.stringMatching(ISO),
        position: expect.any(Number),
        // No agent runs this node: nothing was reported about the version.
        outcome: null,
      });
      expect(versions.body.items[2]).toEqual(
        expect.objectContaining({ version: 1, set_digest: setDigest(refsOf(v1)), publish_id: p1.body.publish_id, message: 'v1' }),
      );

      const page1 = await reader.get('/v1/nodes/hist/versions?limit=2');
      expect(page1.body.items.map((v: { version: number }) => v.version)).toEqual([3, 2]);
      expect(page1.body.next_cursor).toEqual(expect.any(String));
      const page2 = await reader.get(`/v1/nodes/hist/versions?limit=2&cursor=${page1.body.next_cursor}`);
      expect(page2.body.items.map((v: { version: number }) => v.version)).toEqual([1]);
      expect(page2.body.next_cursor).toBeNull();

      const detail = await reader.get('/v1/nodes/hist/versions/2');
      expect(detail.status).toBe(200);
      expect(detail.body).toEqual({
        node: 'hist',
        version: 2,
        set_digest: setDigest(refsOf(v2)),
        retired: false,
        artifacts: [
          { name: 'a.json', sha256: sha256Hex('two\n'), size: 4, encoding: 'utf-8', content: 'two\n' },
          { name: 'b.json', sha256: sha256Hex('bee\n'), size: 4, encoding: 'utf-8', content: 'bee\n' },
        ],
      });

      const diff13 = await reader.get('/v1/nodes/hist/diff?from=1&to=3');
      expect(diff13.status).toBe(200);
      expect(diff13.body).toEqual(expect.objectContaining({ node: 'hist', from: 1, to: 3 }));
      expect(diff13.body.changed).toEqual([
        { name: 'a.json', change: 'modified', from_sha256: sha256Hex('one\n'), to_sha256: sha256Hex('three\n'), diff: expect.any(String) },
      ]);
      expect(diff13.body.changed[0].diff).toMatch(/^-one$/m);
      expect(diff13.body.changed[0].diff).toMatch(/^\+three$/m);
      const diff23 = await reader.get('/v1/nodes/hist/diff?from=2&to=3');
      expect(diff23.body.changed.map((c: { name: string; change: string }) => [c.name, c.change])).toEqual([
        ['a.json', 'modified'],
        ['b.json', 'removed'],
      ]);
      const diff01 = await reader.get('/v1/nodes/hist/diff?from=0&to=1');
      expect(diff01.body.changed).toEqual([
        { name: 'a.json', change: 'added', from_sha256: null, to_sha256: sha256Hex('one\n'), diff: expect.stringMatching(/^\+one$/m) },
      ]);

      // Rollback stamps a new, higher version carrying the old content: an old version is never served again.
      const rollback = await publisher.post('/v1/nodes/hist/rollback', { to_version: 1, message: 'back to one' });
      expect(rollback.status).toBe(201);
      expect(rollback.body).toEqual({
        publish_id: expect.stringMatching(UUID),
        position: expect.any(Number),
        changed: [{ node: 'hist', from: 3, to: 4 }],
        unchanged: 0,
      });
      const v4 = await reader.get('/v1/nodes/hist/versions/4');
      expect(v4.body.set_digest).toBe(setDigest(refsOf(v1)));
      expect(v4.body.artifacts.map((a: { content: string }) => a.content)).toEqual(['one\n']);
      const rolledBack = await poll(node, 'hist');
      const opened = await openBundle(rolledBack.text, await jwks());
      expect(opened.bundle).toEqual(expect.objectContaining({ version: 4, publish_id: rollback.body.publish_id, retired: false }));
      expect(filesOf(opened.bundle)).toEqual(v1);

      const record = await reader.get(`/v1/publishes/${rollback.body.publish_id}`);
      expect(record.status).toBe(200);
      expect(record.body).toEqual({
        publish_id: rollback.body.publish_id,
        position: rollback.body.position,
        kind: 'rollback',
        actor: 'publisher-e2e',
        message: 'back to one',
        recorded_at: expect.stringMatching(ISO),
        changed: [{ node: 'hist', from: 3, to: 4 }],
        unchanged: 0,
        accepted_ineligible: [],
        // Nothing has reported on hist: outstanding, never failed.
        nodes: [{ node: 'hist', from: 3, to: 4, status: 'outstanding', reason: null, ineligible: false, last_contact: null, activation: null }],
        counts: { applied: 0, outstanding: 1, failed: 0, reverted: 0, superseded: 0 },
      });
      const latest = await reader.get('/v1/publishes?limit=1');
      expect(latest.body.items.map((p: { publish_id: string }) => p.publish_id)).toEqual([rollback.body.publish_id]);
      expect(latest.body.next_cursor).toEqual(expect.any(String));
      const older = await reader.get(`/v1/publishes?limit=3&cursor=${latest.body.next_cursor}`);
      expect(older.body.items.map((p: { publish_id: string }) => p.publish_id)).toEqual([p3.body.publish_id, p2.body.publish_id, p1.body.publish_id]);

      // Retire is a final empty set, served and signed like any version.
      const retire = await publisher.post('/v1/nodes/hist/retire', { message: 'decommissioned' });
      expect(retire.status).toBe(201);
      expect(retire.body.changed).toEqual([{ node: 'hist', from: 4, to: 5 }]);
      const retired = await openBundle((await poll(node, 'hist')).text, await jwks());
      expect(retired.bundle).toEqual(expect.objectContaining({ node: 'hist', version: 5, retired: true, artifacts: [], set_digest: EMPTY_SET_DIGEST }));
      const listed = (await reader.get('/v1/nodes')).body.items.find((n: { node: string }) => n.node === 'hist');
      expect(listed).toEqual(
        expect.objectContaining({ node: 'hist', version: 5, retired: true, set_digest: EMPTY_SET_DIGEST, publish_id: retire.body.publish_id }),
      );
      expect((await reader.get(`/v1/publishes/${retire.body.publish_id}`)).body).toEqual(
        expect.objectContaining({ kind: 'retire', message: 'decommissioned' }),
      );

      // Versions never restart: publishing the name again continues at 6.
      const readd = await publish({ hist: v2 }, 'back in service');
      expect(readd.body.changed).toEqual([{ node: 'hist', from: 5, to: 6 }]);
      expect((await reader.get('/v1/nodes/hist/versions?limit=1')).body.items[0]).toEqual(expect.objectContaining({ version: 6, retired: false }));
    });

    it('records what a node reports without moving the ledger', async () => {
      await publish({ nu: { 'flor.json': 'nu\n' } });
      const node = await enrol('nu');
      const before = await head();
      const applied = await node.post('/v1/nodes/nu/reports', { active_version: 1, result: 'applied', installed: ['/etc/florete/flor.json'] });
      expect(applied.status).toBe(204);
      expect(applied.text).toBe('');
      let listed = (await reader.get('/v1/nodes')).body.items.find((n: { node: string }) => n.node === 'nu');
      expect(listed).toEqual(
        expect.objectContaining({ node: 'nu', version: 1, applied_version: 1, last_result: 'applied', last_contact: expect.stringMatching(ISO) }),
      );

      expect((await node.post('/v1/nodes/nu/reports', { active_version: 1, result: 'failed', error: 'vertex restart failed' })).status).toBe(204);
      listed = (await reader.get('/v1/nodes')).body.items.find((n: { node: string }) => n.node === 'nu');
      expect(listed).toEqual(expect.objectContaining({ applied_version: 1, last_result: 'failed' }));
      expect(await head()).toEqual(before);
    });

    it('counts a node that refuses the set the ledger gives the version it runs as failed, until it is given that version again', async () => {
      const published = await publish({ pi: { 'flor.json': 'pi\n' } });
      const node = await enrol('pi');
      const row = async () => ({
        convergence: (await reader.get('/v1/nodes/pi')).body.convergence,
        publish: (
          (await reader.get(`/v1/publishes/${published.body.publish_id}`)).body as { nodes: { node: string; status: string; reason: string | null }[] }
        ).nodes.find((n) => n.node === 'pi'),
      });
      // It runs a version 1 of its own (the ledger was restored without it) and refuses the ledger's version 1, keeping its own.
      const refusal = 'version 1: version 1 is sent with set digest 0123456789ab…, but the version 1 this node applied has ba9876543210…';
      expect((await node.post('/v1/nodes/pi/reports', { active_version: 1, result: 'rejected', target_version: 1, error: refusal })).status).toBe(204);
      expect(await row()).toEqual({ convergence: 'failed', publish: expect.objectContaining({ status: 'failed', reason: refusal }) });
      // Given the ledger's version 1 it says so: the refusal is over.
      expect((await node.post('/v1/nodes/pi/reports', { active_version: 1, result: 'up_to_date' })).status).toBe(204);
      expect(await row()).toEqual({ convergence: 'converged', publish: expect.objectContaining({ status: 'applied', reason: null }) });
      // A failure is not ended by an up_to_date: only an applied report replaces it.
      expect((await node.post('/v1/nodes/pi/reports', { active_version: 1, result: 'failed', target_version: 1, error: 'restart failed' })).status).toBe(204);
      expect((await node.post('/v1/nodes/pi/reports', { active_version: 1, result: 'up_to_date' })).status).toBe(204);
      expect((await row()).publish).toEqual(expect.objectContaining({ status: 'failed', reason: 'restart failed' }));
    });

    it("keeps each node's latest per-resource outcomes and shows them with the node", async () => {
      await publish({ xi: { 'flor.json': 'xi\n' } });
      const node = await enrol('xi');
      const unknown = await reader.get('/v1/nodes/nobody-at-all');
      expectProblem(unknown, 404, 'unknown_node');
      expect((await reader.get('/v1/nodes/xi')).body).toEqual(expect.objectContaining({ node: 'xi', version: 1, resources: null }));
      const items = [
        { kind: 'file', path: '/etc/apt/sources.list.d/mesh.list', outcome: 'applied' },
        { kind: 'package', manager: 'apt', name: 'hello', version: '1.0', outcome: 'applied', was: null },
      ];
      expect((await node.post('/v1/nodes/xi/reports', { active_version: 1, result: 'applied', resources: items })).status).toBe(204);
      // A pass with nothing to do carries no list: the last one stays.
      expect((await node.post('/v1/nodes/xi/reports', { active_version: 1, result: 'up_to_date' })).status).toBe(204);
      const shown = (await reader.get('/v1/nodes/xi')).body;
      expect(shown).toEqual(
        expect.objectContaining({
          node: 'xi',
          applied_version: 1,
          last_result: 'up_to_date',
          resources: { version: 1, result: 'applied', reported_at: expect.stringMatching(ISO), items },
        }),
      );
      // A failed pass is about the version it tried.
      const failed = [
        { kind: 'package', manager: 'apt', name: 'hello', version: '9.9', outcome: 'failed', error: "E: Version '9.9' for 'hello' was not found" },
      ];
      expect(
        (
          await node.post('/v1/nodes/xi/reports', {
            active_version: 1,
            target_version: 2,
            result: 'failed',
            error: 'package resource hello=9.9 (apt): …',
            resources: failed,
          })
        ).status,
      ).toBe(204);
      expect((await reader.get('/v1/nodes/xi')).body.resources).toEqual({
        version: 2,
        result: 'failed',
        reported_at: expect.stringMatching(ISO),
        items: failed,
      });
      // A resource of a kind the contract does not know is refused.
      expect(
        (await node.post('/v1/nodes/xi/reports', { active_version: 1, result: 'applied', resources: [{ kind: 'service', name: 'x', outcome: 'applied' }] }))
          .status,
      ).toBe(422);
    });

    it('shows the agent version each node last said it runs: enrolment, then every report that names one', async () => {
      await publish({ omicron: { 'flor.json': 'omicron\n' } });
      const agentOf = async () => ({
        listed: (await reader.get('/v1/nodes')).body.items.find((n: { node: string }) => n.node === 'omicron')?.agent_version,
        detail: (await reader.get('/v1/nodes/omicron')).body.agent_version,
      });
      // Published but never enrolled: no agent has said anything.
      expect(await agentOf()).toEqual({ listed: null, detail: null });
      const node = await enrol('omicron');
      expect(await agentOf()).toEqual({ listed: '0.1.0', detail: '0.1.0' });
      // A self-upgraded agent's next report carries its new version.
      expect((await node.post('/v1/nodes/omicron/reports', { active_version: 1, result: 'applied', agent_version: '0.2.0' })).status).toBe(204);
      expect(await agentOf()).toEqual({ listed: '0.2.0', detail: '0.2.0' });
      // An older agent's report names none: the last one said stays.
      expect((await node.post('/v1/nodes/omicron/reports', { active_version: 1, result: 'up_to_date' })).status).toBe(204);
      expect(await agentOf()).toEqual({ listed: '0.2.0', detail: '0.2.0' });
      // Bad input changes nothing.
      expectProblem(await node.post('/v1/nodes/omicron/reports', { active_version: 1, result: 'up_to_date', agent_version: '' }), 422, 'invalid_body');
      expectProblem(
        await node.post('/v1/nodes/omicron/reports', { active_version: 1, result: 'up_to_date', agent_version: 'x'.repeat(65) }),
        422,
        'invalid_body',
      );
      expect(await agentOf()).toEqual({ listed: '0.2.0', detail: '0.2.0' });
    });
  });

  describe('a repeated publish', () => {
    const repeats = async () => Number(/^florete_publish_repeats_total (\d+)$/m.exec((await reader.get('/metrics')).text)?.[1]);
    const send = (text: string) => publisher.request('POST', '/v1/publishes', { raw: text, headers: { 'content-type': 'application/json' } });

    it('answers the same bytes again from what it decided, and decides anything else in full', async () => {
      const nodes = {
        rho: { artifacts: { 'flor.json': await publisher.putBlob('{"rho":1}\n') } },
        sigma: { artifacts: { 'flor.json': await publisher.putBlob('{"sigma":1}\n') } },
      };
      const text = JSON.stringify({ message: 'pipeline run', nodes });
      const counted = await repeats();

      const first = await send(text);
      expect(first.status).toBe(201);
      const again = await send(text);
      expect({ status: again.status, body: again.body }).toEqual({
        status: 200,
        body: { publish_id: null, position: first.body.position, changed: [], unchanged: 2 },
      });
      expect(await repeats()).toBe(counted + 1);

      // The same tree in other bytes is decided in full, with the same answer.
      const spaced = await send(JSON.stringify({ message: 'pipeline run', nodes }, null, 1));
      expect({ status: spaced.status, body: spaced.body }).toEqual({
        status: 200,
        body: { publish_id: null, position: first.body.position, changed: [], unchanged: 2 },
      });
      expect(await repeats()).toBe(counted + 1);

      // After an append (a retirement), the first bytes are decided again and bring sigma back.
      expect((await publisher.post('/v1/nodes/sigma/retire', {})).status).toBe(201);
      const revived = await send(text);
      expect(revived.status).toBe(201);
      expect(revived.body.changed).toEqual([{ node: 'sigma', from: 2, to: 3 }]);
      expect(await repeats()).toBe(counted + 1);

      // Bytes that required the position the ledger has left are refused, never answered as a repeat.
      const pinned = JSON.stringify({
        message: 'pinned',
        expected_position: revived.body.position,
        nodes: { ...nodes, rho: { artifacts: { 'flor.json': await publisher.putBlob('{"rho":2}\n') } } },
      });
      expect((await send(pinned)).status).toBe(201);
      expectProblem(await send(pinned), 409, 'stale_position');
      expect(await repeats()).toBe(counted + 1);
    });
  });

  describe('head buckets', () => {
    const bucketsAt = async () => Number(/^florete_head_buckets_position (-?\d+)$/m.exec((await reader.get('/metrics')).text)?.[1]);

    it('keeps them current after each append once a client asked for them, with no read in between', async () => {
      const asked = await reader.get('/v1/heads/buckets');
      expect(asked.status).toBe(200);
      expect(await bucketsAt()).toBe(asked.body.position);

      const published = await publish({ tau: { 'flor.json': '{"tau":1}\n' } }, 'buckets follow');
      expect(published.status).toBe(201);
      // Brought forward as the publish committed, not by a read of the buckets.
      const deadline = Date.now() + 10_000;
      while ((await bucketsAt()) !== published.body.position && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(await bucketsAt()).toBe(published.body.position);
      const now = await reader.get('/v1/heads/buckets');
      expect(now.body.position).toBe(published.body.position);
      expect(now.body.buckets).not.toEqual(asked.body.buckets);
    });
  });

  describe('ledger', () => {
    it('keeps a hash chain an auditor can recompute from the events API, and verify agrees', async () => {
      const events: {
        position: number;
        stream: string;
        revision: number;
        type: string;
        data: unknown;
        meta: Record<string, unknown>;
        recorded_at: string;
        prev_hash: string;
        hash: string;
      }[] = [];
      let after = 0;
      for (;;) {
        const page = await reader.get(`/v1/ledger/events?after=${after}&limit=7`);
        expect(page.status).toBe(200);
        events.push(...page.body.items);
        if (page.body.next_after === null) break;
        after = page.body.next_after;
      }
      const top = await head();
      expect(events.length).toBe(top.position);
      let prev = '0'.repeat(64);
      events.forEach((e, i) => {
        expect(e.position).toBe(i + 1);
        expect(e.prev_hash).toBe(prev);
        const body = canonicalJson({
          position: e.position,
          stream: e.stream,
          revision: e.revision,
          type: e.type,
          data: e.data,
          meta: e.meta,
          recorded_at: e.recorded_at,
        });
        expect(e.hash).toBe(sha256Hex(Buffer.concat([Buffer.from(prev, 'hex'), Buffer.from(body, 'utf8')])));
        prev = e.hash;
      });
      expect(prev).toBe(top.hash);

      // Every stream's revisions run gap-free from 1; on a node stream the revision is the version,
      // and each stamp names the kid its bundle was signed with.
      const revisions = new Map<string, number[]>();
      for (const e of events) revisions.set(e.stream, [...(revisions.get(e.stream) ?? []), e.revision]);
      for (const [stream, revs] of revisions) expect({ stream, revs }).toEqual({ stream, revs: revs.map((_, i) => i + 1) });
      const stamps = events.filter((e) => e.type === 'node_set_stamped');
      expect(stamps.length).toBeGreaterThan(0);
      for (const s of stamps) {
        expect(s.stream).toBe(`node:${(s.data as { node: string }).node}`);
        expect((s.data as { version: number }).version).toBe(s.revision);
        expect(s.meta).toEqual(expect.objectContaining({ actor: expect.any(String), kid: expect.any(String) }));
      }
      const kids = (await jwks()).keys.map((k) => k.kid);
      for (const s of stamps) expect(kids).toContain(s.meta.kid);

      const verdict = await reader.post('/v1/ledger/verify');
      expect(verdict.status).toBe(200);
      expect(verdict.body).toEqual({ ok: true, position: top.position, hash: top.hash });
    });
  });

  describe('restart', () => {
    it('writes the first admin token to a 0600 file only on the first start, never to a log, and keeps serving the same state', async () => {
      const node = await enrol('alpha');
      const served = await poll(node, 'alpha');
      const etag = served.headers.get('etag');
      const before = await head();
      const keys = await jwks();
      const file = join(dataDir, 'first-admin-token');
      // stdout is a pipe here, as under systemd or compose: it names the file and holds no secret.
      expect(coordinator.output.filter((l) => l.includes('admin token'))).toEqual([
        `first admin token written to ${file} (mode 0600): read it there, store it, then remove the file`,
        // The default life of a token made without --ttl (FLORETE_API_TOKEN_TTL, 90 days), from the start.
        expect.stringMatching(
          /^it expires at \d{4}-\d{2}-\d{2}T\S+Z \(FLORETE_API_TOKEN_TTL\): before then, make named admin tokens with it \(retectl token create --role admin --name <who>\)$/,
        ),
      ]);
      expect(coordinator.output.join('\n')).not.toContain(admin.token!);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readFileSync(file, 'utf8')).toBe(`${admin.token}\n`);

      // The operator stored it and removed the file: a later start writes none and says nothing of it.
      rmSync(file);
      await coordinator.stop();
      coordinator = await startCoordinatorProcess({ databaseUrl, dataDir });
      expect(coordinator.adminToken).toBeUndefined();
      expect(coordinator.output.some((l) => l.includes('admin token'))).toBe(false);
      expect(existsSync(file)).toBe(false);
      anon = new Client(coordinator.url);
      admin = anon.as(admin.token);
      publisher = anon.as(publisher.token);
      reader = anon.as(reader.token);

      expect((await admin.get('/v1/api-tokens')).status).toBe(200);
      expect(await head()).toEqual(before);
      expect(await jwks()).toEqual(keys);
      const again = await poll(anon.as(node.token), 'alpha', etag);
      expect(again.status).toBe(304);
      expect((await reader.post('/v1/ledger/verify')).body).toEqual({ ok: true, position: before.position, hash: before.hash });
    });
  });
});
