import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { jest } from '@jest/globals';
import { cosignCheckpoint, nodeWitnessName, parseTreeCheckpoint, rawPublicKey, verifyCosignature } from '#bundle';
import { openDatabase, type Db } from '../apps/coordinator/src/db/connect.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { retectl, type RetectlEnv } from './support/fleet.js';
import { Client } from './support/http.js';
import { agentFiles, agentJson, Fleet, flor, florJson, removeTree, startAgent, stopAllAgents, type AgentFiles } from './fixtures/agent/harness.js';

jest.setTimeout(180_000);

type LedgerEvent = { position: number; type: string; data: Record<string, unknown> };
type WitnessItem = {
  node: string;
  witness_key?: { public_key: string; position: number | null } | null;
  cosigned?: { note: string; cosignature: string; size: number | null; valid: boolean } | null;
};

/**
 * The fleet as the ledger's witnesses, with real agents and a real coordinator on PostgreSQL: each
 * agent makes a key at enrolment, which the ledger records; it cosigns the tree checkpoints it
 * verified and reports the cosignature; `retectl audit verify --witnesses K` counts them against
 * the keys in the ledger, and refuses one the coordinator's database was made to hold.
 */
(hasPostgres ? describe : describe.skip)('the fleet cosigns the ledger tree it verified', () => {
  let coordinator: CoordinatorProcess;
  let admin: Client;
  let fleet: Fleet;
  let db: Db;
  let env: RetectlEnv;
  const agents: Record<string, AgentFiles> = {};
  const files = (node: string, word: string) => ({ 'agent.json': agentJson(node, 3600), 'flor.json': florJson(node, word) });
  const sync = (node: string) => flor(['agent', 'sync', ...agents[node].args]);
  const events = async () => (await admin.get('/v1/ledger/events?limit=1000')).body.items as LedgerEvent[];
  const witnesses = async () => (await admin.get('/v1/ledger/witnesses')).body.items as WitnessItem[];
  const audit = (...args: string[]) => retectl(env, ['audit', 'verify', ...args]);

  beforeAll(async () => {
    const databaseUrl = await createPostgresDatabase();
    coordinator = await startCoordinatorProcess({ databaseUrl });
    db = await openDatabase({ databaseUrl, dataDir: '/nonexistent' });
    admin = new Client(coordinator.url, coordinator.adminToken);
    fleet = new Fleet(admin);
    const home = mkdtempSync(join(tmpdir(), 'retectl-witness-'));
    env = { home, rete: home, coordinator: coordinator.url, token: coordinator.adminToken! };
    await fleet.publish({ alpha: files('alpha', 'one'), beta: files('beta', 'one') });
    for (const node of ['alpha', 'beta']) {
      agents[node] = agentFiles('none', { request_timeout_seconds: 5 });
      expect((await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken(node), ...agents[node].args])).code).toBe(
        0,
      );
      await startAgent(agents[node]);
    }
  });

  afterAll(async () => {
    await stopAllAgents();
    await db?.close();
    await coordinator?.stop();
    for (const a of Object.values(agents)) removeTree(a.root);
    if (env) rmSync(env.home, { recursive: true, force: true });
  });

  it('records each agent’s witness key in the ledger with its enrolment, and keeps the private half in its state dir only', async () => {
    for (const node of ['alpha', 'beta']) {
      const file = JSON.parse(readFileSync(join(agents[node].stateDir, 'witness.json'), 'utf8')) as { public_key: string; registered: boolean };
      expect(file.registered).toBe(true);
      const enrolled = (await events()).find((e) => e.type === 'node_enrolled' && e.data.node === node)!;
      expect(enrolled.data.witness_key).toBe(file.public_key);
      expect(JSON.stringify(enrolled.data)).not.toContain('PRIVATE');
    }
  });

  it('reports a cosignature of the newest tree checkpoint each agent verified, which the witnesses route serves and audit verify counts', async () => {
    for (const node of ['alpha', 'beta']) {
      const run = await sync(node);
      expect({ node, stdout: run.stdout, stderr: run.stderr }).toEqual({ node, stdout: expect.stringMatching(/^(applied|up to date)/), stderr: '' });
    }
    const items = await witnesses();
    for (const node of ['alpha', 'beta']) {
      const w = items.find((i) => i.node === node)!;
      expect(w.cosigned).toMatchObject({ valid: true });
      const held = JSON.parse(readFileSync(join(agents[node].stateDir, 'tree-checkpoint.json'), 'utf8')) as { note: string };
      expect(w.cosigned!.note).toBe(held.note);
      // Checked here with the key the ledger recorded, not the coordinator's word for it.
      const key = (await events()).find((e) => e.position === w.witness_key!.position)!.data.witness_key as string;
      const origin = parseTreeCheckpoint(held.note).origin.replace(/\/tree$/, '');
      expect(verifyCosignature(held.note, w.cosigned!.cosignature, { name: nodeWitnessName(origin, node), publicKey: key })).not.toBeNull();
    }
    // Served with the checkpoint: the coordinator's signature line, then each node's cosignature of that very note.
    const served = (await admin.get('/v1/ledger/tree/checkpoint')).text.trimEnd();
    const cosigned = (await admin.get('/v1/ledger/tree/checkpoint/cosigned')).text;
    expect(cosigned.startsWith(`${served}\n`)).toBe(true);
    const lines = cosigned
      .slice(served.length + 1)
      .trimEnd()
      .split('\n');
    expect(lines).toHaveLength(2);
    for (const [i, node] of ['alpha', 'beta'].entries()) {
      const w = items.find((x) => x.node === node)!;
      const origin = parseTreeCheckpoint(`${served}\n`).origin.replace(/\/tree$/, '');
      expect(verifyCosignature(`${served}\n`, lines[i], { name: nodeWitnessName(origin, node), publicKey: w.witness_key!.public_key })).not.toBeNull();
    }
    expect((await admin.get('/v1/ledger/tree/checkpoint/cosigned?limit=1')).text.split('\n— ')).toHaveLength(3);
    const bad = await admin.get('/v1/ledger/tree/checkpoint/cosigned?limit=0');
    expect({ status: bad.status, code: bad.body.code }).toEqual({ status: 422, code: 'invalid_query' });
    const two = await audit('--witnesses', '2');
    expect({ code: two.code, stderr: two.stderr }).toEqual({ code: 0, stderr: '' });
    expect(two.stdout).toMatch(/^witnesses: 2 nodes cosigned a tree the ledger's tree \(\d+ entries\) extends: /m);
    expect(two.stdout).toMatch(/^witnesses: the first \d+ entries are vouched for by at least 2 nodes: agrees$/m);
    const three = await audit('--witnesses', '3');
    expect(three.code).toBe(1);
    expect(three.stdout).toMatch(/^witnesses: DISAGREES: fewer than 3 nodes vouch for any tree \(2 valid cosigners\)$/m);
  });

  it('prints the node’s own cosigned checkpoint with flor agent status --checkpoint', async () => {
    const run = await flor(['agent', 'status', '--checkpoint', ...agents.alpha.args]);
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    const cosignature = lines[lines.length - 1];
    const note = run.stdout.slice(0, run.stdout.length - cosignature.length - 1);
    const w = (await witnesses()).find((i) => i.node === 'alpha')!;
    const origin = parseTreeCheckpoint(note).origin.replace(/\/tree$/, '');
    expect(verifyCosignature(note, cosignature, { name: nodeWitnessName(origin, 'alpha'), publicKey: w.witness_key!.public_key })).not.toBeNull();
    // The coordinator's own signature line comes first: any C2SP note verifier accepts the note as the log's.
    expect(lines.filter((l) => l.startsWith('— '))).toHaveLength(2);
  });

  it('refuses a cosignature the coordinator could only have made up, and fails the audit', async () => {
    const forger = generateKeyPairSync('ed25519');
    const row = await db.kysely.selectFrom('node_status').select(['cosigned_checkpoint', 'cosignature']).where('node', '=', 'beta').executeTakeFirstOrThrow();
    const origin = parseTreeCheckpoint(row.cosigned_checkpoint!).origin.replace(/\/tree$/, '');
    const forged = cosignCheckpoint(row.cosigned_checkpoint!, nodeWitnessName(origin, 'beta'), forger.privateKey, Math.floor(Date.now() / 1000));
    await db.kysely.updateTable('node_status').set({ cosignature: forged }).where('node', '=', 'beta').execute();
    try {
      expect((await witnesses()).find((i) => i.node === 'beta')!.cosigned).toMatchObject({ valid: false });
      // Never served with the checkpoint.
      expect((await admin.get('/v1/ledger/tree/checkpoint/cosigned')).text).not.toContain(forged);
      const run = await audit('--witnesses', '1');
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(
        /^witnesses: DISAGREES: beta: its cosignature does not verify under \S+\/node\/beta with the key the ledger recorded at position \d+$/m,
      );
      // Registering the forger's key for beta takes beta's credential, which the coordinator does not hold; a node's own is refused a second key.
      const beta = JSON.parse(readFileSync(join(agents.beta.stateDir, 'identity.json'), 'utf8')) as { credential: string };
      const again = await admin
        .as(beta.credential)
        .request('PUT', '/v1/nodes/beta/witness-key', { json: { public_key: rawPublicKey(forger.publicKey).toString('base64') } });
      expect({ status: again.status, code: again.body.code }).toEqual({ status: 409, code: 'witness_key_registered' });
    } finally {
      await db.kysely.updateTable('node_status').set({ cosignature: row.cosignature }).where('node', '=', 'beta').execute();
    }
    expect((await audit('--witnesses', '2')).code).toBe(0);
  });

  it('lets an agent enrolled without a key register one once, recorded in the ledger, and answers a repeat as before', async () => {
    const token = await fleet.enrolmentToken('gamma');
    const enrolled = await new Client(coordinator.url).post('/v1/enrol', {
      token,
      profile: { hostname: 'gamma', os: 'linux', arch: 'x64', agent_version: '0.1.0', clock: new Date().toISOString() },
    });
    expect(enrolled.status).toBe(201);
    const gamma = admin.as(enrolled.body.credential as string);
    const key = rawPublicKey(generateKeyPairSync('ed25519').publicKey).toString('base64');
    const first = await gamma.request('PUT', '/v1/nodes/gamma/witness-key', { json: { public_key: key } });
    expect(first.status).toBe(200);
    const recorded = (await events()).find((e) => e.position === first.body.position)!;
    expect(recorded).toMatchObject({ type: 'node_witness_key_registered', data: { node: 'gamma', public_key: key } });
    const repeat = await gamma.request('PUT', '/v1/nodes/gamma/witness-key', { json: { public_key: key } });
    expect({ status: repeat.status, position: repeat.body.position }).toEqual({ status: 200, position: first.body.position });
    // Another node's route is refused to gamma's credential.
    expect((await gamma.request('PUT', '/v1/nodes/alpha/witness-key', { json: { public_key: key } })).status).toBe(403);
    expect((await gamma.request('PUT', '/v1/nodes/gamma/witness-key', { json: { public_key: 'not-a-key' } })).status).toBe(422);
  });
});
