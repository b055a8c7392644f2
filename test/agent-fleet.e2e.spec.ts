import { existsSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
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
  vertexStarts,
  waitFor,
  type AgentFiles,
  type AgentProcess,
} from './fixtures/agent/harness.js';

jest.setTimeout(120_000);

const NODES = ['alpha', 'beta', 'gamma'] as const;

/** alpha polls hourly, so only `flor agent sync` moves it; beta and gamma poll every second. */
const pollOf = (node: string) => (node === 'alpha' ? 3600 : 1);
const treeFor = (marker: string) => Object.fromEntries(NODES.map((n) => [n, { 'agent.json': agentJson(n, pollOf(n)), 'flor.json': florJson(n, marker) }]));

describe('flor agent: one coordinator, three agents', () => {
  let coordinator: CoordinatorProcess;
  let fleet: Fleet;
  const files: Record<string, AgentFiles> = {};
  const agents: Record<string, AgentProcess> = {};

  const status = async (node: string) => {
    const r = await flor(['agent', 'status', '--json', ...files[node].args]);
    expect(r).toEqual(expect.objectContaining({ code: 0 }));
    return JSON.parse(r.stdout);
  };

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    for (const node of NODES) files[node] = agentFiles('supervise');
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    for (const f of Object.values(files)) removeTree(f.root);
  });

  it('runs hosted (not enrolled) until enrolment and says so', async () => {
    const agent = await startAgent(files.alpha);
    const s = await status('alpha');
    expect(s).toEqual(expect.objectContaining({ lifecycle: 'hosted', node: null, active_version: 0, high_water: 0 }));
    const sync = await flor(['agent', 'sync', ...files.alpha.args]);
    expect(sync.code).toBe(1);
    expect(sync.stdout).toMatch(/^error: not enrolled/);
    expect(await agent.stop()).toBe(0);
    expect(existsSync(join(files.alpha.stateDir, 'agent.sock'))).toBe(false);
  });

  it('enrols each node, checking the key thumbprint first, and keeps the identity 0600', async () => {
    for (const node of NODES) {
      const token = await fleet.enrolmentToken(node);
      const r = await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', token, ...files[node].args]);
      expect(r).toEqual(expect.objectContaining({ code: 0 }));
      expect(r.stdout).toMatch(new RegExp(`^enrolled ${node} with`));
      const identity = join(files[node].stateDir, 'identity.json');
      expect(statSync(identity).mode & 0o777).toBe(0o600);
      expect(JSON.parse(readFileSync(identity, 'utf8'))).toEqual(expect.objectContaining({ node, coordinator: coordinator.url }));
    }
  });

  it('applies a publish at once on `flor agent sync`, and the others converge at their poll interval', async () => {
    const v1 = await fleet.publish(treeFor('one'));
    expect(v1).toEqual({ alpha: 1, beta: 1, gamma: 1 });
    for (const node of NODES) agents[node] = await startAgent(files[node]);
    // The pass at start applies v1 everywhere.
    for (const node of NODES) await waitFor(`${node} at 1`, async () => (await socketStatus(files[node])).applied_version === 1);
    const sock = join(files.alpha.stateDir, 'agent.sock');
    expect(statSync(sock).mode & 0o777).toBe(0o600);

    const v2 = await fleet.publish(treeFor('two'));
    expect(v2).toEqual({ alpha: 2, beta: 2, gamma: 2 });
    const dry = await flor(['agent', 'sync', '--dry-run', ...files.alpha.args]);
    expect(dry).toEqual(expect.objectContaining({ code: 0, stdout: 'would apply 2 (active 1)\n' }));
    const sync = await flor(['agent', 'sync', ...files.alpha.args]);
    expect(sync).toEqual(expect.objectContaining({ code: 0, stdout: 'applied 2 (was 1)\n' }));
    expect(readFileSync(join(files.alpha.installDir, 'flor.json'), 'utf8')).toBe(florJson('alpha', 'two'));
    expect(readlinkSync(join(files.alpha.stateDir, 'active'))).toBe('sets/2');
    const again = await flor(['agent', 'sync', ...files.alpha.args]);
    expect(again).toEqual(expect.objectContaining({ code: 0, stdout: 'up to date at 2\n' }));

    for (const node of ['beta', 'gamma']) await waitFor(`${node} at 2`, async () => (await socketStatus(files[node])).applied_version === 2, 20_000);
    for (const node of NODES) {
      const s = await status(node);
      expect(s).toEqual(
        expect.objectContaining({
          lifecycle: 'enrolled',
          node,
          active_version: 2,
          applied_version: 2,
          high_water: 2,
          last_result: expect.stringMatching(/^(applied|up_to_date)$/),
          last_error: null,
        }),
      );
      expect(s.next_poll).not.toBeNull();
      expect(readFileSync(join(files[node].installDir, 'agent.json'), 'utf8')).toBe(agentJson(node, pollOf(node)));
      // The supervised vertex started once per applied version, and on the version's own set.
      expect(vertexStarts(files[node])).toEqual(['1', '2']);
      expect(s.vertex).toEqual({ pid: expect.any(Number), starts: 2 });
    }
    // The coordinator heard about it.
    for (const node of NODES) await waitFor(`${node} reported`, async () => (await fleet.nodeStatus(node))?.applied_version === 2);
  });

  it('picks up a new poll interval from the applied agent.json without a restart', async () => {
    expect(Date.parse((await status('alpha')).next_poll) - Date.now()).toBeGreaterThan(3000 * 1000);
    await fleet.publish({ alpha: { 'agent.json': agentJson('alpha', 1), 'flor.json': florJson('alpha', 'two') } });
    const sync = await flor(['agent', 'sync', ...files.alpha.args]);
    expect(sync.stdout).toBe('applied 3 (was 2)\n');
    expect(Date.parse((await status('alpha')).next_poll) - Date.now()).toBeLessThan(2000);
    // Now alpha converges on its own.
    await fleet.publish({ alpha: { 'agent.json': agentJson('alpha', 1), 'flor.json': florJson('alpha', 'four') } });
    await waitFor('alpha at 4', async () => (await socketStatus(files.alpha)).applied_version === 4, 20_000);
    expect(vertexStarts(files.alpha)).toEqual(['1', '2', '3', '4']);
    // beta and gamma were untouched by those publishes: they stay at 2.
    expect((await status('beta')).active_version).toBe(2);
  });

  it('removes files the new set no longer has, and uninstalls everything on retire', async () => {
    await fleet.publish({ beta: { 'agent.json': agentJson('beta', 1), 'flor.json': florJson('beta', 'three'), 'extra.txt': 'extra\n' } });
    await waitFor('beta at 3', async () => (await socketStatus(files.beta)).applied_version === 3, 20_000);
    expect(readFileSync(join(files.beta.installDir, 'extra.txt'), 'utf8')).toBe('extra\n');
    await fleet.publish({ beta: { 'agent.json': agentJson('beta', 1), 'flor.json': florJson('beta', 'three') } });
    await waitFor('beta at 4', async () => (await socketStatus(files.beta)).applied_version === 4, 20_000);
    expect(existsSync(join(files.beta.installDir, 'extra.txt'))).toBe(false);

    const retired = await fleet.admin.post('/v1/nodes/beta/retire', { message: 'decommission' });
    expect(retired.status).toBe(201);
    await waitFor('beta retired', async () => (await socketStatus(files.beta)).applied_version === 5, 20_000);
    expect(existsSync(join(files.beta.installDir, 'flor.json'))).toBe(false);
    expect(existsSync(join(files.beta.installDir, 'agent.json'))).toBe(false);
    expect((await status('beta')).vertex).toEqual({ pid: null, starts: 4 });
    expect(vertexStarts(files.beta)).toEqual(['1', '2', '3', '4']);
  });

  it('reports a vertex that fails to start as failed, with its output, and does not retry in a loop', async () => {
    // gamma polls every second: first move it to an hourly poll, so that only `flor agent sync`
    // takes the failing set below (its own poll would otherwise race the sync for it).
    await fleet.publish({ gamma: { 'agent.json': agentJson('gamma', 3600), 'flor.json': florJson('gamma', 'hourly') } });
    await waitFor('gamma at 3', async () => (await socketStatus(files.gamma)).applied_version === 3, 20_000);
    await fleet.publish({ gamma: { 'agent.json': agentJson('gamma', 3600), 'flor.json': florJson('gamma', 'fail-to-start') } });
    const sync = await flor(['agent', 'sync', ...files.gamma.args]);
    expect(sync).toEqual(expect.objectContaining({ code: 1 }));
    expect(sync.stdout).toMatch(/^failed 4: vertex exited with 1 right after starting: vertex: refusing config of version 4: fail-to-start/);
    await waitFor('gamma failure reported', async () => (await fleet.nodeStatus('gamma'))?.last_result === 'failed');
    const s = await status('gamma');
    expect(s).toEqual(
      expect.objectContaining({ active_version: 4, applied_version: 3, last_result: 'failed', last_error: expect.stringContaining('fail-to-start') }),
    );
    // The one-hour interval of the failed set's agent.json: no tight retry.
    expect(Date.parse(s.next_poll) - Date.now()).toBeGreaterThan(3000 * 1000);
  });

  it('exits cleanly on SIGTERM and stops its vertex', async () => {
    for (const node of NODES) expect(await agents[node].stop()).toBe(0);
    for (const node of NODES) expect(existsSync(join(files[node].stateDir, 'agent.sock'))).toBe(false);
    const down = await flor(['agent', 'status', ...files.alpha.args]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/is the daemon running/);
  });
});
