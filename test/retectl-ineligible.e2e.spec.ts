import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { retectl, type CliRun, type RetectlEnv } from './support/fleet.js';
import { Client, STACK_TRACE } from './support/http.js';

/**
 * An operator meets an ineligible node through the real retectl and coordinator: plan names it, publish
 * is refused and changes nothing, --allow-ineligible accepts it on the record, and a clean enrolment
 * ends it.
 */
describe('retectl and ineligible nodes', () => {
  let coordinator: CoordinatorProcess;
  let admin: Client;
  let env: RetectlEnv;
  const OLD_AGENT = 'agent version supported (agent 0.0.9, at least 0.1.0 required)';
  const cli = (...args: string[]) => retectl(env, args);

  async function enrol(node: string, agentVersion: string) {
    const token = (await admin.post('/v1/enrolment-tokens', { node })).body.token as string;
    const profile = { hostname: node, os: 'linux', arch: 'x64', agent_version: agentVersion, clock: new Date().toISOString() };
    expect((await admin.as(undefined).post('/v1/enrol', { token, profile, inventory: {} })).status).toBe(201);
  }
  /** A failure is one line on stderr with no stack trace. */
  const expectOneLine = (run: CliRun, code: number, pattern: RegExp) => {
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code, stderr: expect.stringMatching(pattern) });
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr + run.stdout).not.toMatch(STACK_TRACE);
  };
  const head = async () => (await admin.get('/v1/ledger/head')).body;

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    admin = new Client(coordinator.url, coordinator.adminToken);
    const home = mkdtempSync(join(tmpdir(), 'retectl-ineligible-'));
    env = { home, rete: join(home, 'rete'), coordinator: coordinator.url, token: coordinator.adminToken! };
    mkdirSync(env.rete);
    expect((await cli('init', '.')).code).toBe(0);
    expect((await cli('compile')).code).toBe(0);
    await enrol('alpha', '0.0.9');
  });
  afterAll(async () => {
    await coordinator?.stop();
    if (env) rmSync(env.home, { recursive: true, force: true });
  });

  it('plan names an ineligible node a publish would change, with its failed line and the flag, and still exits 3', async () => {
    const plan = await cli('plan');
    expect(plan.code).toBe(3);
    // Named right under the summary, before the node list a large plan cuts.
    expect(plan.stdout).toMatch(
      /^plan: 3 new, 0 changed, 0 retired, 0 unchanged\n! alpha is ineligible: agent version supported \(agent 0\.0\.9, at least 0\.1\.0 required\); publish with --allow-ineligible alpha to accept\n\+ alpha: new/,
    );
    expect(plan.stdout.match(/is ineligible/g)).toHaveLength(1);
    expect(JSON.parse((await cli('plan', '--json')).stdout).ineligible).toEqual([
      { node: 'alpha', failed_briefing: [{ check: 'agent version supported', detail: 'agent 0.0.9, at least 0.1.0 required' }] },
    ]);
  });

  it('publish is refused, naming the node, its failed line and the flag, and the ledger does not move', async () => {
    const before = await head();
    const run = await cli('publish', '-m', 'first');
    expectOneLine(
      run,
      1,
      new RegExp(
        `^retectl: the coordinator refused the publish: alpha is ineligible: ${OLD_AGENT.replace(/[().]/g, '\\$&')}\\. Nothing was published\\. .*publish with --allow-ineligible alpha to accept it\\n$`,
      ),
    );
    expect(await head()).toEqual(before);
    expect((await admin.get('/v1/nodes')).body.items.map((n: { node: string; version: number | null }) => [n.node, n.version])).toEqual([['alpha', null]]);
  });

  it('--allow-ineligible takes node names only', async () => {
    expectOneLine(await cli('publish', '--allow-ineligible', 'Alpha'), 2, /"Alpha" is not a node name/);
    expectOneLine(await cli('publish', '--allow-ineligible', 'alpha,'), 2, /empty node/);
  });

  it('publish --allow-ineligible (a comma list, repeatable) publishes, says so, and the publish records who accepted what', async () => {
    const run = await cli('publish', '-m', 'first', '--allow-ineligible', 'beta', '--allow-ineligible', 'laptop,alpha', '--json');
    expect(run.code).toBe(0);
    const body = JSON.parse(run.stdout);
    expect(body.changed.map((c: { node: string }) => c.node)).toEqual(['alpha', 'beta', 'laptop']);
    expect(body.accepted_ineligible).toEqual([
      { node: 'alpha', failed_briefing: [{ check: 'agent version supported', detail: 'agent 0.0.9, at least 0.1.0 required' }] },
    ]);
    expect(run.stderr).toBe(`! alpha is ineligible: ${OLD_AGENT}; accepted with --allow-ineligible, as the ledger records\n`);
    const status = await cli('status', '--publish', body.publish_id);
    expect(status.stdout).toMatch(new RegExp(`^! alpha is ineligible: .*; accepted by \\S+`, 'm'));
  });

  it('rollback onto an ineligible node is refused unless --allow-ineligible', async () => {
    const servers = join(env.rete, 'nodes/servers.yaml');
    writeFileSync(servers, readFileSync(servers, 'utf8').replace('10.0.0.1:7946', '10.0.0.1:7947'));
    expect((await cli('compile')).code).toBe(0);
    expect((await cli('publish', '--allow-ineligible', 'alpha')).stdout).toMatch(/^alpha 1 -> 2$/m);
    const before = await head();
    expectOneLine(
      await cli('rollback', 'alpha', '--to', '1'),
      1,
      /refused the rollback: alpha is ineligible: .*roll back with --allow-ineligible to accept it\n$/,
    );
    expect(await head()).toEqual(before);
    const ok = await cli('rollback', 'alpha', '--to', '1', '--allow-ineligible');
    expect({ code: ok.code, stdout: ok.stdout }).toEqual({ code: 0, stdout: 'alpha 2 -> 3 (content of version 1)\n' });
  });

  it('after a clean enrolment plan warns no more and publish needs no acceptance', async () => {
    await enrol('alpha', '0.1.0');
    const plan = await cli('plan');
    expect(plan.code).toBe(3);
    expect(plan.stdout).not.toMatch(/ineligible/);
    const run = await cli('publish', '-m', 'alpha is sound');
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^alpha 3 -> 4$/m);
  });
});
