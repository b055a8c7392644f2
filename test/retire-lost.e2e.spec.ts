import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client, expectProblem } from './support/http.js';
import { retectl as runRetectl, type RetectlEnv } from './support/fleet.js';
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

jest.setTimeout(180_000);

/**
 * `retectl retire --lost`: a node gone for good (stolen, destroyed) never applies its final set, so
 * waiting for its report to revoke its credential would leave the credential working for as long as
 * the machine is in someone's hands. Real processes: the built coordinator, `flor agent run` for the
 * node (stopped while it is "lost", started again when it comes back), and retectl.
 */
describe('retiring a lost node with real agents', () => {
  let coordinator: CoordinatorProcess;
  let fleet: Fleet;
  let env: RetectlEnv;
  let admin: Client;
  let publisherToken: string;
  const files: Record<string, AgentFiles> = {};

  const retectl = (args: readonly string[], token = env.token) => runRetectl({ ...env, token }, args);
  const credentialOf = (node: string) => JSON.parse(readFileSync(join(files[node].stateDir, 'identity.json'), 'utf8')).credential as string;
  const events = async () =>
    (await admin.get('/v1/ledger/events?after=0&limit=1000')).body.items as {
      position: number;
      type: string;
      stream: string;
      data: Record<string, unknown>;
      meta: { actor: string };
    }[];
  const nodeRow = async (node: string) =>
    ((await admin.get('/v1/nodes')).body.items as { node: string; state: string; credential: string }[]).find((n) => n.node === node)!;

  /** Enrols the node with a real agent, publishes it a set, and waits until the agent applied it; the agent is left stopped. */
  const enrolAndApply = async (node: string) => {
    files[node] = agentFiles('none', { default_poll_interval: 1 });
    const enrolled = await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken(node), ...files[node].args]);
    expect(enrolled.code).toBe(0);
    const version = (await fleet.publish({ [node]: { 'agent.json': agentJson(node, 1), 'flor.json': florJson(node, 'v1') } }, `${node} v1`))[node];
    const agent = await startAgent(files[node]);
    await waitFor(`${node} applied`, async () => (await socketStatus(files[node])).applied_version === version, 60_000);
    await waitFor(`the coordinator has ${node}'s report`, async () => (await fleet.nodeStatus(node))?.applied_version === version);
    expect(await agent.stop()).toBe(0);
    expect(existsSync(join(files[node].installDir, 'flor.json'))).toBe(true);
  };

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess({ env: { FLORETE_MIRROR: 'off' } });
    admin = new Client(coordinator.url, coordinator.adminToken);
    fleet = new Fleet(admin);
    const home = mkdtempSync(join(tmpdir(), 'retire-lost-e2e-'));
    env = { home, rete: join(home, 'rete'), coordinator: coordinator.url, token: coordinator.adminToken! };
    mkdirSync(env.rete);
    publisherToken = (await admin.post('/v1/api-tokens', { name: 'ci', role: 'publisher' })).body.token;
    await enrolAndApply('laptop');
    await enrolAndApply('edge');
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    for (const f of Object.values(files)) removeTree(f.root);
    if (env) rmSync(env.home, { recursive: true, force: true });
  });

  it('needs an admin token: revoking a credential is an admin decision, and a refusal writes nothing', async () => {
    const head = (await admin.get('/v1/ledger/head')).body;
    const refused = await retectl(['retire', 'laptop', '--lost'], publisherToken);
    expect({ code: refused.code, stderr: refused.stderr }).toEqual({
      code: 1,
      stderr: expect.stringMatching(/retiring a lost node revokes its credential: that needs an admin token \(403 forbidden\)\n$/),
    });
    expect((await admin.get('/v1/ledger/head')).body).toEqual(head);
    expect(await nodeRow('laptop')).toMatchObject({ state: 'enrolled', credential: 'live' });
  });

  it('retires the node and revokes its credential in one transaction, recorded side by side with who and why', async () => {
    const credential = credentialOf('laptop');
    expect((await new Client(coordinator.url, credential).get('/v1/nodes/laptop/bundle')).status).toBe(200);
    const run = await retectl(['retire', 'laptop', '--lost', '-m', 'stolen from a car']);
    expect(run).toMatchObject({ code: 0, stdout: 'laptop 1 -> 2 (retired as lost)\n' });
    expect(run.stderr).toBe(
      'laptop: 1 credential revoked at once; the machine is refused from now on (401 retired_credential), and whatever it still runs stays until someone wipes it\n',
    );
    // No report was waited for: the credential no longer works, on the poll and the report routes alike.
    for (const r of [
      await new Client(coordinator.url, credential).get('/v1/nodes/laptop/bundle'),
      await new Client(coordinator.url, credential).post('/v1/nodes/laptop/reports', { active_version: 1, result: 'up_to_date' }),
    ]) {
      expectProblem(r, 401, 'retired_credential');
      expect(r.body).toMatchObject({ node: 'laptop', version: 2, lost: true });
      expect(r.body.detail).toMatch(
        /^node laptop was retired as lost at version 2: its credential was revoked at once, without the node applying its final, empty set, so whatever it still runs was never removed by Florete; this machine is not trusted any more: wipe it, or enrol it again as a new node with a new token$/,
      );
    }
    expect(await nodeRow('laptop')).toMatchObject({ state: 'retired', credential: 'revoked' });

    const all = await events();
    const last = all.slice(-3);
    expect(last.map((e) => [e.type, e.stream, e.meta.actor])).toEqual([
      ['node_set_stamped', 'node:laptop', 'admin'],
      ['publish_recorded', expect.stringMatching(/^publish:/), 'admin'],
      ['credential_revoked', 'identity:laptop', 'admin'],
    ]);
    expect(last[0].data).toMatchObject({ node: 'laptop', version: 2, retired: true, artifacts: [] });
    expect(last[1].data).toMatchObject({ kind: 'retire', message: 'stolen from a car', changed: [{ node: 'laptop', from: 1, to: 2 }] });
    expect(last[2].data).toEqual({ node: 'laptop', credential_ids: [credential.split('.')[1]], reason: 'lost', publish_id: last[1].data.publish_id });
    expect(last.map((e) => e.position)).toEqual([last[0].position, last[0].position + 1, last[0].position + 2]);
    expect((await admin.post('/v1/ledger/verify')).body).toMatchObject({ ok: true });
  });

  it('a lost node that comes back is refused and says so; what it installed stays, for someone to wipe', async () => {
    const agent = await startAgent(files.laptop);
    const status = await waitFor(
      'the agent refused',
      async () => {
        const s = await socketStatus(files.laptop);
        return s.lifecycle === 'retired' ? s : undefined;
      },
      60_000,
    );
    expect(status.last_error).toMatch(/^fetching the bundle: node laptop was retired at version 2 \(401 retired_credential\); it gets nothing more/);
    const human = await flor(['agent', 'status', ...files.laptop.args]);
    expect(human.stdout).toMatch(/^lifecycle\s+retired since \S+$/m);
    // Never given its empty set: nothing was removed.
    expect(existsSync(join(files.laptop.installDir, 'flor.json'))).toBe(true);
    expect(status.applied_version).toBe(1);
    expect(await agent.stop()).toBe(0);
  });

  it('a node retired earlier that never applied it can be declared lost afterwards; then nothing is left to revoke', async () => {
    // A plain retire while the machine is off: its credential stays live until it reports.
    expect((await retectl(['retire', 'edge'])).stdout).toBe('edge 1 -> 2 (retired)\n');
    expect(await nodeRow('edge')).toMatchObject({ state: 'retired', credential: 'live' });
    const credential = credentialOf('edge');

    const lost = await retectl(['retire', 'edge', '--lost', '--json']);
    expect(lost.code).toBe(0);
    expect(JSON.parse(lost.stdout)).toEqual({
      publish_id: null,
      position: expect.any(Number),
      changed: [],
      unchanged: 1,
      revoked_credentials: [credential.split('.')[1]],
    });
    expectProblem(await new Client(coordinator.url, credential).get('/v1/nodes/edge/bundle'), 401, 'retired_credential');
    const last = (await events()).at(-1)!;
    expect(last).toMatchObject({
      type: 'credential_revoked',
      stream: 'identity:edge',
      meta: { actor: 'admin' },
      data: { node: 'edge', reason: 'lost', publish_id: null },
    });

    const again = await retectl(['retire', 'edge', '--lost']);
    expect({ code: again.code, stderr: again.stderr }).toEqual({
      code: 1,
      stderr: 'retectl: node edge is already retired at version 2 and holds no live credential: nothing is left to revoke (409 node_retired)\n',
    });
    const ghost = await retectl(['retire', 'ghost', '--lost']);
    expect(ghost.stderr).toMatch(/node ghost has never been published \(404 unknown_node\)/);
  });
});
