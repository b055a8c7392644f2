import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import * as jose from 'jose';
import { canonicalJson, keyThumbprint, setDigest, sha256Hex, signBundle, type SigningKey } from '#bundle';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import { startFrontProxy, type FrontProxy } from './fixtures/agent/front-proxy.js';
import {
  agentFiles,
  agentJson,
  Fleet,
  flor,
  florJson,
  removeTree,
  socketStatus,
  startAgent,
  stopAllAgents,
  type AgentFiles,
} from './fixtures/agent/harness.js';

jest.setTimeout(120_000);

type Files = Record<string, string>;

function payloadFor(node: string, version: number, files: Files) {
  const artifacts = Object.entries(files).map(([name, content]) => ({
    name,
    sha256: sha256Hex(content),
    size: Buffer.byteLength(content),
    content: Buffer.from(content).toString('base64'),
  }));
  return {
    node,
    version,
    set_digest: setDigest(artifacts),
    position: 1000 + version,
    publish_id: 'crafted',
    issued_at: new Date().toISOString(),
    retired: false,
    artifacts,
  };
}

const sign = (payload: unknown, key: SigningKey) => signBundle(Buffer.from(canonicalJson(payload), 'utf8'), key);

async function foreignKey(kid?: string): Promise<SigningKey & { jwk: jose.JWK; thumbprint: string }> {
  const { privateKey, publicKey } = await jose.generateKeyPair('Ed25519', { extractable: true });
  const jwk = await jose.exportJWK(publicKey);
  const thumbprint = await keyThumbprint(jwk);
  return { kid: kid ?? thumbprint, privateKey, jwk: { ...jwk, kid: kid ?? thumbprint, alg: 'EdDSA', use: 'sig' }, thumbprint };
}

/** The coordinator's own active signing key, read from its data dir: for bundles it would sign but never serve. */
function coordinatorKey(dataDir: string): Promise<SigningKey> {
  const file = JSON.parse(readFileSync(join(dataDir, 'keys/signing-keys.json'), 'utf8')) as { active: string; keys: { kid: string; private_jwk: jose.JWK }[] };
  const k = file.keys.find((x) => x.kid === file.active)!;
  return jose.importJWK(k.private_jwk, 'EdDSA').then((privateKey) => ({ kid: k.kid, privateKey: privateKey as jose.CryptoKey }));
}

describe('flor agent rejects what it must not apply', () => {
  let coordinator: CoordinatorProcess;
  let proxy: FrontProxy;
  let fleet: Fleet;
  let alpha: AgentFiles;
  let jwsV1: string;
  let jwsBeta: string;
  let realKey: SigningKey;
  const v2Files: Files = { 'agent.json': agentJson('alpha', 3600), 'flor.json': florJson('alpha', 'two') };

  const sync = (...extra: string[]) => flor(['agent', 'sync', ...extra, ...alpha.args]);
  const status = () => socketStatus(alpha);
  /** What must not move when a bundle is rejected. */
  const snapshot = () => ({
    active: readlinkSync(join(alpha.stateDir, 'active')),
    flor: readFileSync(join(alpha.installDir, 'flor.json'), 'utf8'),
    installed: readFileSync(join(alpha.stateDir, 'installed.json'), 'utf8'),
    highWater: JSON.parse(readFileSync(join(alpha.stateDir, 'state.json'), 'utf8')).high_water,
  });

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    proxy = await startFrontProxy(coordinator.url);
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    realKey = await coordinatorKey(coordinator.dataDir);
    await fleet.publish({
      alpha: { 'agent.json': agentJson('alpha', 3600), 'flor.json': florJson('alpha', 'one') },
      beta: { 'flor.json': florJson('beta', 'one') },
    });
    alpha = agentFiles('none', { request_timeout_seconds: 1 });
    const enrolled = await flor(['agent', 'enroll', '--coordinator', proxy.url, '--token', await fleet.enrolmentToken('alpha'), ...alpha.args]);
    expect(enrolled.code).toBe(0);
    await startAgent(alpha);
    await fleet.publish({ alpha: v2Files });
    expect((await sync()).stdout).toBe('applied 2 (was 1)\n');
    jwsV1 = readFileSync(join(alpha.stateDir, 'sets/1/.bundle.jws'), 'utf8').trim();
    // beta's genuine bundle, fetched with beta's own credential.
    const anon = new Client(coordinator.url);
    const beta = await anon.post('/v1/enrol', {
      token: await fleet.enrolmentToken('beta'),
      profile: { hostname: 'b', os: 'linux', arch: 'x64', agent_version: 'test' },
      inventory: {},
    });
    jwsBeta = (await anon.as(beta.body.credential).get('/v1/nodes/beta/bundle')).text;
  });

  afterAll(async () => {
    await stopAllAgents();
    await proxy?.close();
    await coordinator?.stop();
    if (alpha) removeTree(alpha.root);
  });

  const cases: [string, () => Promise<string>, RegExp][] = [
    [
      'a tampered payload',
      async () => {
        const [h, p, s] = jwsV1.split('.');
        const payload = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'));
        payload.version = 99;
        return `${h}.${Buffer.from(canonicalJson(payload)).toString('base64url')}.${s}`;
      },
      /^rejected: signature does not verify$/,
    ],
    [
      'a signature by another key under the pinned kid',
      async () => sign(payloadFor('alpha', 3, v2Files), await foreignKey(realKey.kid)),
      /^rejected: signature does not verify$/,
    ],
    [
      'a signature by a key the trust chain does not list',
      async () => sign(payloadFor('alpha', 3, v2Files), await foreignKey()),
      /^rejected: bundle is signed by unknown key \S+, which trust version 1 does not list$/,
    ],
    ['a bundle for another node', async () => jwsBeta, /^rejected 1: bundle is for node beta, this node is alpha$/],
    ['an older version replayed', async () => jwsV1, /^rejected 1: version 1 is older than the high-water mark 2 \(replayed bundle\)$/],
    ['a truncated JWS', async () => jwsV1.slice(0, jwsV1.lastIndexOf('.')), /^rejected: bundle is not a compact JWS$/],
    ['a JWS cut inside its signature', async () => jwsV1.slice(0, -20), /^rejected: signature does not verify$/],
    [
      'an artifact whose digest does not match',
      async () => {
        const payload = payloadFor('alpha', 3, v2Files);
        payload.artifacts[1].content = Buffer.from(florJson('alpha', 'evil')).toString('base64');
        return sign(payload, realKey);
      },
      /^rejected 3: artifact flor\.json has sha256 [0-9a-f]{64} \(\d+ bytes\), the bundle says [0-9a-f]{64} \(\d+ bytes\)$/,
    ],
    [
      'a payload that does not parse against the contract',
      async () => sign({ ...payloadFor('alpha', 3, v2Files), version: 'three' }, realKey),
      /^rejected: payload does not match the bundle contract: version: /,
    ],
  ];

  it.each(cases)('rejects %s with a clear reason, leaves the active set untouched and reports it', async (_name, craft, reason) => {
    const before = snapshot();
    proxy.mode = { kind: 'serve', jws: await craft() };
    const reports = proxy.reports.length;
    try {
      const r = await sync();
      expect({ code: r.code, line: r.stdout.trimEnd(), stderr: r.stderr }).toEqual({ code: 1, line: expect.stringMatching(reason), stderr: '' });
      expect(snapshot()).toEqual(before);
      expect(proxy.reports.slice(reports)).toEqual([
        { node: 'alpha', body: expect.objectContaining({ active_version: 2, result: 'rejected', error: expect.any(String) }) },
      ]);
      // A new version of alpha's own bundle that failed verification is that version's outcome; anything else names none.
      expect(proxy.reports.at(-1)!.body.target_version).toBe(/^rejected 3: /.test(r.stdout) ? 3 : undefined);
      expect(proxy.reports.at(-1)!.body.error).toContain(r.stdout.replace(/^rejected( \d+)?: /, '').trim());
      expect(await status()).toEqual(expect.objectContaining({ active_version: 2, high_water: 2, last_result: 'rejected', last_error: expect.any(String) }));
    } finally {
      proxy.mode = { kind: 'pass' };
    }
  });

  it('still applies the genuine next version after all that', async () => {
    expect((await sync()).stdout).toBe('up to date at 2\n');
    await fleet.publish({ alpha: { ...v2Files, 'flor.json': florJson('alpha', 'three') } });
    expect((await sync('--dry-run')).stdout).toBe('would apply 3 (active 2)\n');
    expect((await sync()).stdout).toBe('applied 3 (was 2)\n');
    expect((await fleet.nodeStatus('alpha'))?.applied_version).toBe(3);
  });

  it('honours 503 with Retry-After and keeps the active set', async () => {
    proxy.mode = { kind: 'status', status: 503, headers: { 'retry-after': '100000' } };
    try {
      const r = await sync();
      expect(r).toEqual(
        expect.objectContaining({ code: 1, stdout: expect.stringMatching(/^error: fetching the bundle: coordinator unavailable \(503 test: test says no\)/) }),
      );
      const s = await status();
      expect(Date.parse(s.next_poll!) - Date.now()).toBeGreaterThan(90_000 * 1000);
      expect(s).toEqual(expect.objectContaining({ active_version: 3, last_result: 'error' }));
      // A 5xx is a pass that did not get through: disconnected from this pass on, the last contact kept.
      expect(s).toMatchObject({ lifecycle: 'disconnected', since: s.last_poll });
      expect(Date.parse(s.last_contact!)).toBeLessThan(Date.parse(s.since!));
    } finally {
      proxy.mode = { kind: 'pass' };
    }
  });

  it('gives up on a coordinator that does not answer in time', async () => {
    proxy.mode = { kind: 'hang' };
    try {
      const started = Date.now();
      const r = await sync();
      expect(r).toEqual(
        expect.objectContaining({
          code: 1,
          stdout: expect.stringMatching(/^error: GET \/v1\/nodes\/alpha\/bundle on http:\/\/127\.0\.0\.1:\d+ took longer than 1000 ms/),
        }),
      );
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      proxy.mode = { kind: 'pass' };
    }
    // Still the run of failures that the 503 began.
    const disconnected = await status();
    expect(disconnected.lifecycle).toBe('disconnected');
    expect(Date.parse(disconnected.since!)).toBeLessThan(Date.parse(disconnected.last_poll!));
    expect((await sync()).stdout).toBe('up to date at 3\n');
    const back = await status();
    expect(back).toMatchObject({ lifecycle: 'enrolled', since: back.last_contact });
  });

  it('follows a rotated key without re-enrolment: the new trust version is walked to, the re-signed head verifies', async () => {
    const rotated = await fleet.admin.post('/v1/keys/rotate');
    expect(rotated.status).toBe(201);
    const identity = readFileSync(join(alpha.stateDir, 'identity.json'), 'utf8');
    expect((await sync()).stdout).toBe('up to date at 3\n');
    await fleet.publish({ alpha: { ...v2Files, 'flor.json': florJson('alpha', 'four') } });
    expect((await sync()).stdout).toBe('applied 4 (was 3)\n');
    expect(await status()).toMatchObject({ trust_version: 2 });
    expect(readFileSync(join(alpha.stateDir, 'identity.json'), 'utf8')).toBe(identity);
  });

  describe('enrolment', () => {
    it('refuses a token whose thumbprint matches no coordinator key, before sending it', async () => {
      const files = agentFiles('none');
      try {
        const token = await fleet.enrolmentToken('delta');
        const wrong = `${token.slice(0, token.lastIndexOf('.'))}.${(await foreignKey()).thumbprint}`;
        const enrols = proxy.requests.filter((r) => r === 'POST /v1/enrol').length;
        const r = await flor(['agent', 'enroll', '--coordinator', proxy.url, '--token', wrong, ...files.args]);
        expect(r).toEqual(
          expect.objectContaining({
            code: 1,
            stderr: expect.stringMatching(
              /no signing key of http:\/\/127\.0\.0\.1:\d+ has the thumbprint \S+ that the enrolment token carries: .*nothing was sent/,
            ),
          }),
        );
        expect(proxy.requests.filter((x) => x === 'POST /v1/enrol').length).toBe(enrols);
        expect(existsSync(join(files.stateDir, 'identity.json'))).toBe(false);
        // Nothing was sent, so the genuine token is still unused.
        expect((await flor(['agent', 'enroll', '--coordinator', proxy.url, '--token', token, ...files.args])).code).toBe(0);
      } finally {
        removeTree(files.root);
      }
    });

    it('refuses a coordinator that cannot show the key the genuine token vouches for', async () => {
      const files = agentFiles('none');
      const impostor = await foreignKey();
      proxy.jwks = { keys: [impostor.jwk] };
      try {
        const enrols = proxy.requests.filter((r) => r === 'POST /v1/enrol').length;
        const r = await flor(['agent', 'enroll', '--coordinator', proxy.url, '--token', await fleet.enrolmentToken('epsilon'), ...files.args]);
        expect(r).toEqual(expect.objectContaining({ code: 1, stderr: expect.stringMatching(/that the enrolment token carries/) }));
        expect(proxy.requests.filter((x) => x === 'POST /v1/enrol').length).toBe(enrols);
        expect(existsSync(join(files.stateDir, 'identity.json'))).toBe(false);
      } finally {
        proxy.jwks = null;
        removeTree(files.root);
      }
    });

    it('exits 2 on a malformed token', async () => {
      const r = await flor(['agent', 'enroll', '--coordinator', proxy.url, '--token', 'nope', '--state-dir', '/nonexistent']);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/--token is not an enrolment token/);
    });
  });
});
