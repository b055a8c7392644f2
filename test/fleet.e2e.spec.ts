import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import { byNode, retectl as runRetectl, writeFleetRete, type PublishView, type RetectlEnv } from './support/fleet.js';
import { packedText } from '../apps/retectl/src/testing/packed-tree.js';
import {
  agentFiles,
  Fleet,
  flor,
  removeTree,
  socketStatus,
  startAgent,
  stopAllAgents,
  waitFor,
  type AgentFiles,
  type AgentProcess,
} from './fixtures/agent/harness.js';

jest.setTimeout(180_000);

/**
 * Fleet status and node lifecycle (issue 6) with real processes: the built coordinator, one `flor
 * agent run` per node, `flor agent enroll` and `retectl`. gamma's restart command always fails;
 * laptop is kept stopped, then started.
 */
const RESTART_FAILS = 'echo "Unit florete-vertex.service not found." >&2; exit 5';
const PORTS: Record<string, number> = { alpha: 7101, beta: 7102, gamma: 7103, laptop: 7104 };
const NODES = Object.keys(PORTS);

describe('fleet status and node lifecycle with real agents', () => {
  let coordinator: CoordinatorProcess;
  let fleet: Fleet;
  let env: RetectlEnv;
  const files: Record<string, AgentFiles> = {};
  const agents: Record<string, AgentProcess> = {};
  let firstPublish = '';

  const retectl = (args: readonly string[]) => runRetectl(env, args);
  const json = async (args: readonly string[]) => {
    const r = await retectl([...args, '--json']);
    if (r.code !== 0) throw new Error(`retectl ${args.join(' ')}: ${r.code} ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const publishView = (id: string): Promise<PublishView> => json(['status', '--publish', id]);
  const nodes = async () =>
    byNode((await json(['status'])).items as { node: string; state: string; convergence: string | null; ineligible: boolean; version: number | null }[]);
  const rete = (ports: Record<string, number>) => {
    writeFleetRete(
      env.rete,
      coordinator.url,
      NODES.map((name) => ({ name, port: ports[name] })),
    );
    return retectl(['compile']);
  };
  const enrol = (node: string, f: AgentFiles, token: string, extra: string[] = []) =>
    flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', token, ...extra, ...f.args]);

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    const home = mkdtempSync(join(tmpdir(), 'fleet-e2e-'));
    env = { home, rete: join(home, 'rete'), coordinator: coordinator.url, token: coordinator.adminToken! };
    mkdirSync(env.rete);
    for (const node of NODES) files[node] = agentFiles({ command: node === 'gamma' ? RESTART_FAILS : 'true' }, { default_poll_interval: 1 });
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    for (const f of Object.values(files)) removeTree(f.root);
    if (env) rmSync(env.home, { recursive: true, force: true });
  });

  it('prints the enrolment briefing; a failed line is a warning, and marks the node ineligible', async () => {
    for (const node of ['alpha', 'beta', 'gamma']) {
      const r = await enrol(node, files[node], await fleet.enrolmentToken(node));
      expect(r).toEqual(expect.objectContaining({ code: 0, stderr: '' }));
      expect(r.stdout).toMatch(/^briefing: pass$/m);
      for (const check of ['token valid', 'node name matches', 'profile complete', 'clock skew acceptable', 'agent version supported'])
        expect(r.stdout).toMatch(new RegExp(`^  pass  ${check}: `, 'm'));
    }
    // The laptop believes it is someone else: adoption completes, the mismatch is a failed line.
    const r = await enrol('laptop', files.laptop, await fleet.enrolmentToken('laptop'), ['--node', 'laptop2']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^briefing: fail$/m);
    expect(r.stdout).toMatch(/^  FAIL  node name matches: agent expects laptop2, token is for laptop$/m);
    expect(r.stderr).toMatch(/^warning: laptop is enrolled but ineligible/);

    const all = await nodes();
    expect(all.laptop).toMatchObject({ state: 'enrolled', ineligible: true, version: null });
    expect(all.alpha).toMatchObject({ state: 'enrolled', ineligible: false });
    const table = await retectl(['status']);
    expect(table.stdout).toMatch(/^laptop\s+-\s+-\s+0\.1\.0\s+live\s+never\s+enrolled, ineligible$/m);
  });

  it('tells applied, failed (with the reason) and outstanding apart, and a stopped node applies once started', async () => {
    expect((await rete(PORTS)).code).toBe(0);
    for (const node of ['alpha', 'beta', 'gamma']) agents[node] = await startAgent(files[node]);

    // laptop never reports, so the wait lasts until the timeout; gamma's failure decides the exit.
    // laptop failed its briefing: the operator accepts giving it content, by name.
    const published = await retectl(['publish', '--allow-ineligible', 'laptop', '-m', 'first', '--wait=15s']);
    expect(published.code).toBe(1);
    firstPublish = /^published (\S+) at position/m.exec(published.stdout)![1];
    expect(published.stdout).toMatch(/^gamma\s+0 -> 1\s+failed\s+\S+ ago\s+restart command exited with 5: Unit florete-vertex\.service not found\.$/m);
    expect(published.stdout).toMatch(/^laptop\s+0 -> 1\s+outstanding \(ineligible\)\s+never\s+-$/m);
    expect(published.stdout).toMatch(/^2 applied, 1 outstanding, 1 failed, 0 reverted, 0 superseded$/m);
    expect(published.stderr).toMatch(/^timed out after 15 s with 1 node outstanding$/m);

    const view = await publishView(firstPublish);
    expect(view.counts).toEqual({ applied: 2, outstanding: 1, failed: 1, reverted: 0, superseded: 0 });
    const v = byNode(view.nodes);
    expect(v.alpha).toMatchObject({ status: 'applied', reason: null, last_contact: expect.any(String) });
    expect(v.beta).toMatchObject({ status: 'applied' });
    expect(v.gamma).toMatchObject({ status: 'failed', reason: expect.stringContaining('Unit florete-vertex.service not found.') });
    // Silent is outstanding, never failed.
    expect(v.laptop).toMatchObject({ status: 'outstanding', reason: null, last_contact: null, ineligible: true });

    const all = await nodes();
    expect(all.alpha).toMatchObject({ state: 'enrolled', convergence: 'converged' });
    expect(all.gamma).toMatchObject({ state: 'enrolled', convergence: 'failed' });
    expect(all.laptop).toMatchObject({ state: 'enrolled', convergence: 'outstanding' });
    expect((await json(['status', '--state', 'failed'])).items.map((n: { node: string }) => n.node)).toEqual(['gamma']);
    const table = (await retectl(['status'])).stdout;
    expect(table).toMatch(/^gamma\s+1\s+0\s+0\.1\.0\s+live\s+\S+ ago\s+enrolled, failed$/m);
    expect(table).toMatch(/^laptop\s+1\s+-\s+0\.1\.0\s+live\s+never\s+enrolled, outstanding, ineligible$/m);
    // The failing agent itself says what went wrong.
    expect(await socketStatus(files.gamma)).toMatchObject({ applied_version: 0, last_result: 'failed', last_error: expect.stringContaining('exited with 5') });

    agents.laptop = await startAgent(files.laptop);
    await waitFor('laptop applied', async () => byNode((await publishView(firstPublish)).nodes).laptop.status === 'applied', 60_000, 500);
    expect((await publishView(firstPublish)).counts).toEqual({ applied: 3, outstanding: 0, failed: 1, reverted: 0, superseded: 0 });
    const human = await retectl(['status', '--publish', firstPublish]);
    expect(human.stdout).toMatch(/^laptop\s+0 -> 1\s+applied \(ineligible\)\s+\S+ ago\s+-$/m);
    expect(human.stdout).toMatch(/^3 applied, 0 outstanding, 1 failed, 0 reverted, 0 superseded$/m);
  });

  it('publish --wait exits 0 once every touched node applied, and 4 at the timeout with one outstanding', async () => {
    expect((await rete({ ...PORTS, alpha: 7201, beta: 7202 })).code).toBe(0);
    const ok = await retectl(['publish', '--allow-ineligible', 'laptop', '-m', 'move alpha and beta', '--wait=90s']);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^2 applied, 0 outstanding, 0 failed, 0 reverted, 0 superseded$/m);

    await agents.laptop.stop();
    expect((await rete({ ...PORTS, alpha: 7201, beta: 7202, laptop: 7204 })).code).toBe(0);
    const late = await retectl(['publish', '--allow-ineligible', 'laptop', '-m', 'move the laptop', '--wait=3s', '--json']);
    expect(late.code).toBe(4);
    const body = JSON.parse(late.stdout);
    expect(body).toMatchObject({ timed_out: true, changed: [{ node: 'laptop', from: 1, to: 2 }] });
    expect(body.status.counts).toEqual({ applied: 0, outstanding: 1, failed: 0, reverted: 0, superseded: 0 });

    // The stopped laptop is still enrolled: the coordinator reports how long it has been silent, and
    // the operator picks the silent ones by that age while the others, polling every second, stay out.
    await waitFor(
      'laptop silent for 5 s',
      async () => ((await json(['status'])).items.find((n: { node: string }) => n.node === 'laptop').last_contact_age_seconds ?? 0) > 5,
      30_000,
      500,
    );
    const silent = await retectl(['status', '--contact-older-than', '5s']);
    expect(silent.code).toBe(0);
    expect(silent.stdout).toMatch(/^laptop\s+2\s+1\s+0\.1\.0\s+live\s+\d+s ago\s+enrolled, outstanding, ineligible$/m);
    expect(silent.stdout).not.toMatch(/^(alpha|beta|gamma) /m);
  });

  it('re-enrolling a node name revokes the old credential: the old agent gets 401 and says so', async () => {
    const second = agentFiles({ command: 'true' }, { default_poll_interval: 1 });
    files.alpha2 = second;
    expect((await enrol('alpha', second, await fleet.enrolmentToken('alpha'))).code).toBe(0);
    const replacement = await startAgent(second);
    await waitFor('the new alpha applied', async () => (await socketStatus(second)).applied_version === 2, 60_000);
    await waitFor('the old alpha refused', async () => /401/.test((await socketStatus(files.alpha)).last_error ?? ''), 60_000);
    const old = await flor(['agent', 'status', ...files.alpha.args]);
    expect(old.code).toBe(0);
    expect(old.stdout).toMatch(/^last error\s+fetching the bundle: the coordinator refused the node credential \(401 .*\); re-enrol the node$/m);
    expect(old.stdout).toMatch(/^last result\s+error$/m);
    expect(await agents.alpha.stop()).toBe(0);
    expect(await replacement.stop()).toBe(0);
  });

  it('lost store: an agent whose state dir was wiped enrols again and removes what it owned instead of stranding it', async () => {
    const compiled = (name: string) => packedText(env.rete, 'beta', name);
    const withExtra = await fleet.publish(
      { beta: { 'agent.json': compiled('agent.json'), 'flor.json': compiled('flor.json'), 'extra.conf': 'only this set has it\n' } },
      'beta with an extra file',
    );
    await waitFor('beta has the extra file', async () => (await socketStatus(files.beta)).applied_version === withExtra.beta, 60_000);
    await waitFor("the coordinator has beta's report", async () => (await fleet.nodeStatus('beta'))?.applied_version === withExtra.beta);
    const extra = join(files.beta.installDir, 'extra.conf');
    expect(existsSync(extra)).toBe(true);

    await agents.beta.stop();
    rmSync(files.beta.stateDir, { recursive: true, force: true });
    mkdirSync(files.beta.stateDir);
    // While beta is down, the rete's set (without the extra file) goes out again.
    const published = await json(['publish', '--allow-ineligible', 'laptop', '-m', 'beta back to the rete']);
    expect(published.changed).toEqual([{ node: 'beta', from: withExtra.beta, to: withExtra.beta + 1 }]);

    const r = await enrol('beta', files.beta, await fleet.enrolmentToken('beta'));
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^recovered 3 installed files from the coordinator's copy/m);
    agents.beta = await startAgent(files.beta);
    await waitFor('beta applied the rete set', async () => (await socketStatus(files.beta)).applied_version === withExtra.beta + 1, 60_000);
    expect(existsSync(extra)).toBe(false);
    expect(readFileSync(join(files.beta.installDir, 'flor.json'), 'utf8')).toBe(compiled('flor.json'));
  });

  it('retire end to end: the agent uninstalls, reports, and then its credential is revoked', async () => {
    expect(existsSync(join(files.gamma.installDir, 'flor.json'))).toBe(true);
    const retired = await retectl(['retire', 'gamma', '-m', 'decommission']);
    expect(retired).toEqual(expect.objectContaining({ code: 0, stdout: 'gamma 1 -> 2 (retired)\n' }));
    await waitFor('gamma uninstalled', async () => (await socketStatus(files.gamma)).applied_version === 2, 60_000);
    expect(existsSync(join(files.gamma.installDir, 'flor.json'))).toBe(false);
    expect(existsSync(join(files.gamma.installDir, 'agent.json'))).toBe(false);

    await waitFor('gamma retired and converged', async () => {
      const g = (await nodes()).gamma;
      return g.state === 'retired' && g.convergence === 'converged';
    });
    expect((await json(['status', '--state', 'retired'])).items.map((n: { node: string }) => n.node)).toEqual(['gamma']);
    expect((await retectl(['status'])).stdout).toMatch(/^gamma\s+2\s+2\s+0\.1\.0\s+revoked\s+\S+ ago\s+retired, converged$/m);
    const credential = JSON.parse(readFileSync(join(files.gamma.stateDir, 'identity.json'), 'utf8')).credential as string;
    expect((await new Client(coordinator.url, credential).get('/v1/nodes/gamma/bundle')).status).toBe(401);
    await waitFor('gamma refused on its next poll', async () => /401/.test((await socketStatus(files.gamma)).last_error ?? ''), 60_000);
  });

  it('the agent of a retired node says so, polls hourly, and names the two ways on', async () => {
    const human = await flor(['agent', 'status', ...files.gamma.args]);
    expect(human.stdout).toMatch(/^lifecycle\s+retired since \S+$/m);
    expect(human.stdout).toMatch(
      /^retired\s+at version 2 since \S+: uninstall the agent, or enrol the node again with a new token \(flor agent enroll --token …\)$/m,
    );
    const s = JSON.parse((await flor(['agent', 'status', '--json', ...files.gamma.args])).stdout);
    expect(s).toMatchObject({ lifecycle: 'retired', node: 'gamma', retired: { version: 2, at: expect.any(String) }, last_result: 'error' });
    expect(s.last_error).toMatch(/node gamma was retired at version 2 .*401 retired_credential/);
    expect(s.last_error).toMatch(/uninstall the agent, or enrol the node again with a new token \(flor agent enroll --token …\)/);
    // Polled every second until then; from now on at most hourly.
    expect(Date.parse(s.next_poll) - Date.parse(s.last_poll)).toBeGreaterThanOrEqual(3600_000);
    const logged = agents.gamma.output
      .join('')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'node retired');
    expect(logged).toMatchObject({ level: 'warn', node: 'gamma', version: 2, next_poll: s.next_poll });
    expect(logged!.reason).toBe(s.last_error);

    // Recorded in the state dir: a restarted agent is still retired and does not poll before the hour is up.
    expect(await agents.gamma.stop()).toBe(0);
    agents.gamma = await startAgent(files.gamma);
    const restarted = await socketStatus(files.gamma);
    expect(restarted).toMatchObject({ lifecycle: 'retired', last_poll: s.last_poll, retired: s.retired });
    expect(Date.parse(restarted.next_poll!) - Date.parse(s.last_poll)).toBeGreaterThanOrEqual(3600_000);

    // Enrolling again with a new token clears it: the running agent polls at once, not in an hour,
    // and the new credential outlives the report that confirms the retired version.
    expect((await enrol('gamma', files.gamma, await fleet.enrolmentToken('gamma'))).code).toBe(0);
    await waitFor('gamma polls with its new credential', async () => (await socketStatus(files.gamma)).last_result === 'up_to_date', 20_000);
    expect(await flor(['agent', 'sync', ...files.gamma.args])).toMatchObject({ code: 0, stdout: 'up to date at 2\n' });
    const back = await socketStatus(files.gamma);
    expect(back).toMatchObject({ lifecycle: 'enrolled', retired: null, last_error: null });
    expect(Date.parse(back.next_poll!) - Date.now()).toBeLessThan(60_000);
  });
});
