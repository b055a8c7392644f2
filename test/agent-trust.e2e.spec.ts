import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import * as jose from 'jose';
import { canonicalJson, parseCheckpoint, setDigest, sha256Hex, signBundle, signTrustDocument, type SigningKey } from '#bundle';
import type { AgentStatus, TrustDocument } from '#contracts';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
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
  waitFor,
  type AgentFiles,
} from './fixtures/agent/harness.js';

jest.setTimeout(300_000);

const targets = [{ database: 'pglite' as const }, ...(hasPostgres ? [{ database: 'postgres' as const }] : [])];

/** A private key from the coordinator's key file: for what it would sign but never serves. */
async function keyOf(dataDir: string, kid: string): Promise<SigningKey> {
  const file = JSON.parse(readFileSync(join(dataDir, 'keys/signing-keys.json'), 'utf8')) as { keys: { kid: string; private_jwk: jose.JWK }[] };
  const k = file.keys.find((x) => x.kid === kid)!;
  return { kid, privateKey: (await jose.importJWK(k.private_jwk, 'EdDSA')) as jose.CryptoKey };
}

async function freshKey(): Promise<SigningKey & { jwk: jose.JWK }> {
  const { privateKey, publicKey } = await jose.generateKeyPair('Ed25519', { extractable: true });
  const jwk = await jose.exportJWK(publicKey);
  const kid = await jose.calculateJwkThumbprint(jwk, 'sha256');
  return { kid, privateKey, jwk: { ...jwk, kid } };
}

function craftedBundle(node: string, version: number, position: number, files: Record<string, string>, key: SigningKey): Promise<string> {
  const artifacts = Object.entries(files).map(([name, content]) => ({
    name,
    sha256: sha256Hex(content),
    size: Buffer.byteLength(content),
    content: Buffer.from(content).toString('base64'),
  }));
  const payload = {
    node,
    version,
    set_digest: setDigest(artifacts),
    position,
    publish_id: 'crafted',
    issued_at: new Date().toISOString(),
    retired: false,
    artifacts,
  };
  return signBundle(Buffer.from(canonicalJson(payload), 'utf8'), key);
}

describe.each(targets)('trust that survives time, on $database', ({ database }) => {
  let coordinator: CoordinatorProcess;
  let proxy: FrontProxy;
  let fleet: Fleet;
  let alpha: AgentFiles;
  let beta: AgentFiles;
  const keysSeen: string[] = [];

  const tree = (marker: string) => ({
    alpha: { 'agent.json': agentJson('alpha', 3600), 'flor.json': florJson('alpha', marker) },
    beta: { 'agent.json': agentJson('beta', 1), 'flor.json': florJson('beta', marker) },
  });
  const syncAlpha = () => flor(['agent', 'sync', ...alpha.args]);
  const trustHead = async () => {
    const r = await new Client(coordinator.url).get('/v1/trust');
    expect(r.status).toBe(200);
    return r.body as { head: number; versions: { version: number; document: string }[] };
  };
  const converged = (files: AgentFiles, version: number, trust: number) =>
    waitFor(
      `${files.root} at version ${version}, trust ${trust}`,
      async () => {
        const s = await socketStatus(files);
        return s.applied_version === version && s.trust_version === trust ? s : null;
      },
      60_000,
    );
  const reportsOf = (node: string) => proxy.reports.filter((r) => r.node === node).map((r) => r.body);

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess({
      databaseUrl: database === 'postgres' ? await createPostgresDatabase() : undefined,
      // An idle checkpoint every second, so freshness is observable within the test.
      env: { FLORETE_CHECKPOINT_INTERVAL: '1', FLORETE_MIRROR: 'off' },
    });
    proxy = await startFrontProxy(coordinator.url);
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    await fleet.publish(tree('one'));
    alpha = agentFiles('none', { max_staleness: '5s' });
    beta = agentFiles('none');
    expect((await flor(['agent', 'enroll', '--coordinator', proxy.url, '--token', await fleet.enrolmentToken('alpha'), ...alpha.args])).code).toBe(0);
    expect((await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken('beta'), ...beta.args])).code).toBe(0);
    await startAgent(alpha);
    await startAgent(beta);
    await converged(alpha, 1, 1);
    await converged(beta, 1, 1);
    keysSeen.push(JSON.parse(Buffer.from((await trustHead()).versions[0].document.split('.')[0], 'base64url').toString()).kid);
  });

  afterAll(async () => {
    await stopAllAgents();
    await proxy?.close();
    await coordinator?.stop();
    for (const f of [alpha, beta]) if (f) removeTree(f.root);
  });

  it('rotates twice while the agents run: they walk the trust chain and keep converging, never re-enrolled', async () => {
    const identities = [alpha, beta].map((f) => readFileSync(join(f.stateDir, 'identity.json'), 'utf8'));
    for (const [i, marker] of [
      [2, 'two'],
      [3, 'three'],
    ] as const) {
      const rotated = await fleet.admin.post('/v1/keys/rotate');
      expect(rotated.status).toBe(201);
      // Every node head was re-signed by the new key in the same step.
      expect(rotated.body).toMatchObject({ trust_version: i, resigned: 2, revoked: [] });
      keysSeen.push(rotated.body.kid);
      await fleet.publish(tree(marker));
      await converged(beta, i, i);
      expect((await syncAlpha()).stdout).toBe(`applied ${i} (was ${i - 1})\n`);
      expect((await socketStatus(alpha)).trust_version).toBe(i);
    }
    expect([alpha, beta].map((f) => readFileSync(join(f.stateDir, 'identity.json'), 'utf8'))).toEqual(identities);
    // The chain each agent walked: version 1 self-signed, then each signed by the key before it.
    const chain = await trustHead();
    expect(chain.versions.map((v) => [v.version, JSON.parse(Buffer.from(v.document.split('.')[0], 'base64url').toString()).kid])).toEqual([
      [1, keysSeen[0]],
      [2, keysSeen[0]],
      [3, keysSeen[1]],
    ]);
    const pinned = JSON.parse(readFileSync(join(alpha.stateDir, 'trust.json'), 'utf8'));
    expect(pinned).toMatchObject({ version: 3, keys: [expect.objectContaining({ kid: keysSeen[2] })], digest: sha256Hex(chain.versions[2].document) });
    // The rotations are in the ledger, with the digest of the trust version each wrote.
    const events = await fleet.admin.get('/v1/ledger/events?after=0&limit=1000');
    const rotations = (events.body.items as { type: string; data: Record<string, unknown> }[]).filter((e) => e.type === 'signing_key_rotated');
    expect(rotations.map((e) => [e.data.trust_version, e.data.trust_digest])).toEqual([
      [2, sha256Hex(chain.versions[1].document)],
      [3, sha256Hex(chain.versions[2].document)],
    ]);
    const status = await flor(['agent', 'status', ...alpha.args]);
    expect(status.stdout).toMatch(/^trust version +3$/m);
    expect(status.stdout).toMatch(/^freshness +fresh \(checkpoint at position \d+ signed \S+\)$/m);
  });

  it('refuses a bundle signed by a revoked key, once a checkpoint told it of the revocation', async () => {
    const revoked = keysSeen[1];
    const r = await fleet.admin.post(`/v1/keys/${revoked}/revoke`);
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ kid: keysSeen[2], trust_version: 4, revoked: [revoked], resigned: 0 });
    expect((r.body.jwks.keys as { kid: string }[]).map((k) => k.kid)).not.toContain(revoked);
    // Nothing was re-signed: the checkpoint's trust line is what makes the agents walk.
    await converged(beta, 3, 4);
    expect((await syncAlpha()).stdout).toBe('up to date at 3\n');
    expect((await socketStatus(alpha)).trust_version).toBe(4);
    proxy.mode = {
      kind: 'serve',
      jws: await craftedBundle('alpha', 9, 1, { 'flor.json': florJson('alpha', 'evil') }, await keyOf(coordinator.dataDir, revoked)),
    };
    try {
      const s = await syncAlpha();
      expect({ code: s.code, line: s.stdout.trimEnd() }).toEqual({
        code: 1,
        line: `rejected: bundle is signed by key ${revoked}, which trust version 4 revoked`,
      });
    } finally {
      proxy.mode = { kind: 'pass' };
    }
    expect(reportsOf('alpha').at(-1)).toMatchObject({ result: 'rejected', error: expect.stringContaining('revoked') });
    const again = await fleet.admin.post(`/v1/keys/${revoked}/revoke`);
    expect(again).toMatchObject({ status: 409, body: { code: 'already_revoked' } });
  });

  it('refuses a forged trust version and keeps its pin', async () => {
    const evil = await freshKey();
    const chain = await trustHead();
    const head = chain.versions.at(-1)!;
    const forgedDoc: TrustDocument = {
      version: 5,
      keys: [{ kty: 'OKP', crv: 'Ed25519', x: evil.jwk.x as string, kid: evil.kid }],
      revoked: [keysSeen[1]],
      issued_at: new Date().toISOString(),
      previous: sha256Hex(head.document),
    };
    const before = readFileSync(join(alpha.stateDir, 'trust.json'), 'utf8');
    proxy.trust = { head: 5, versions: [{ version: 5, document: signTrustDocument(forgedDoc, evil) }] };
    proxy.mode = { kind: 'serve', jws: await craftedBundle('alpha', 9, 1, { 'flor.json': florJson('alpha', 'evil') }, evil) };
    try {
      const s = await syncAlpha();
      expect({ code: s.code, line: s.stdout.trimEnd() }).toEqual({
        code: 1,
        line: `rejected: trust version 5 is signed by key ${evil.kid}, which trust version 4 does not list`,
      });
      // The same forgery under the signer's kid fails its signature.
      proxy.trust = { head: 5, versions: [{ version: 5, document: signTrustDocument(forgedDoc, { kid: keysSeen[2], privateKey: evil.privateKey }) }] };
      const t = await syncAlpha();
      expect(t.stdout.trimEnd()).toBe(`rejected: trust version 5: the signature by key ${keysSeen[2]} does not verify`);
    } finally {
      proxy.mode = { kind: 'pass' };
      proxy.trust = null;
    }
    expect(readFileSync(join(alpha.stateDir, 'trust.json'), 'utf8')).toBe(before);
    expect(reportsOf('alpha').at(-1)).toMatchObject({ result: 'rejected', error: expect.stringContaining('trust version 5') });
    await fleet.publish(tree('four'));
    expect((await syncAlpha()).stdout).toBe('applied 4 (was 3)\n');
  });

  it('refuses a replayed answer whose checkpoint is older than the one it holds', async () => {
    const credential = JSON.parse(readFileSync(join(alpha.stateDir, 'identity.json'), 'utf8')).credential as string;
    const old = await new Client(coordinator.url, credential).get('/v1/nodes/alpha/bundle');
    const oldNote = Buffer.from(old.headers.get('florete-checkpoint')!, 'base64').toString('utf8');
    await fleet.publish(tree('five'));
    expect((await syncAlpha()).stdout).toBe('applied 5 (was 4)\n');
    const held = JSON.parse(readFileSync(join(alpha.stateDir, 'checkpoint.json'), 'utf8'));
    expect(held.position).toBeGreaterThan(parseCheckpoint(oldNote).checkpoint.position);
    proxy.mode = { kind: 'answer', status: 304, headers: { etag: old.headers.get('etag')!, 'florete-checkpoint': old.headers.get('florete-checkpoint')! } };
    try {
      const s = await syncAlpha();
      expect(s.stdout.trimEnd()).toBe(
        `rejected: checkpoint at position ${parseCheckpoint(oldNote).checkpoint.position} is older than the one held at position ${held.position} (replayed or rolled back)`,
      );
    } finally {
      proxy.mode = { kind: 'pass' };
    }
    expect(JSON.parse(readFileSync(join(alpha.stateDir, 'checkpoint.json'), 'utf8')).position).toBe(held.position);
    // A bundle stamped past every checkpoint the agent can verify (from another ledger, say) is refused too.
    proxy.mode = {
      kind: 'serve',
      jws: await craftedBundle('alpha', 9, held.position + 1000, { 'flor.json': florJson('alpha', 'x') }, await keyOf(coordinator.dataDir, keysSeen[2])),
    };
    try {
      const s = await syncAlpha();
      expect(s.stdout.trimEnd()).toMatch(
        new RegExp(
          `^rejected 9: bundle was stamped at ledger position ${held.position + 1000}, but the newest checkpoint this agent verified is at position \\d+$`,
        ),
      );
    } finally {
      proxy.mode = { kind: 'pass' };
    }
  });

  it('says stale since … when answers stop carrying newer checkpoints, and reports it; fresh again once they do', async () => {
    expect((await syncAlpha()).stdout).toBe('up to date at 5\n');
    const credential = JSON.parse(readFileSync(join(alpha.stateDir, 'identity.json'), 'utf8')).credential as string;
    const frozen = await new Client(coordinator.url, credential).get('/v1/nodes/alpha/bundle', { headers: { 'if-none-match': '*' } });
    expect(frozen.status).toBe(304);
    // A coordinator frozen in time: every answer the same 304, the same checkpoints (its tree's too: the agent requires it once seen).
    proxy.mode = {
      kind: 'answer',
      status: 304,
      headers: {
        etag: frozen.headers.get('etag')!,
        'florete-checkpoint': frozen.headers.get('florete-checkpoint')!,
        'florete-tree-checkpoint': frozen.headers.get('florete-tree-checkpoint')!,
      },
    };
    const frozenAt = parseCheckpoint(Buffer.from(frozen.headers.get('florete-checkpoint')!, 'base64').toString('utf8')).checkpoint.time;
    let stale: AgentStatus;
    try {
      // Status judges freshness when asked, a report when its pass ran: the threshold can fall between
      // the two, so wait until a pass has reported it too.
      stale = await waitFor(
        'alpha stale, and a pass that reported it',
        async () => {
          expect((await syncAlpha()).stdout).toBe('up to date at 5\n');
          const s = await socketStatus(alpha);
          return s.freshness?.stale_since && reportsOf('alpha').at(-1)?.stale_since ? s : null;
        },
        60_000,
        500,
      );
    } finally {
      proxy.mode = { kind: 'pass' };
    }
    expect(stale!.freshness).toEqual({
      checkpoint: expect.objectContaining({ time: frozenAt }),
      max_staleness_seconds: 5,
      stale_since: new Date(Date.parse(frozenAt) + 5000).toISOString(),
    });
    expect(reportsOf('alpha').at(-1)).toMatchObject({
      result: 'up_to_date',
      stale_since: stale!.freshness!.stale_since,
      checkpoint: expect.stringContaining('\n— florete.ledger/'),
    });
    expect((await flor(['agent', 'status', ...alpha.args])).stdout).toMatch(
      new RegExp(
        `^freshness +stale since ${stale!.freshness!.stale_since!.replace(/\./g, '\\.')} \\(checkpoint at position \\d+ signed ${frozenAt.replace(/\./g, '\\.')}\\)$`,
        'm',
      ),
    );
    expect((await syncAlpha()).stdout).toBe('up to date at 5\n');
    const fresh = await socketStatus(alpha);
    expect(fresh.freshness?.stale_since).toBeNull();
    expect(reportsOf('alpha').at(-1)).not.toHaveProperty('stale_since');
  });
});
