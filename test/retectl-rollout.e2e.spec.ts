import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { retectl, type RetectlEnv } from './support/fleet.js';
import { Client, STACK_TRACE } from './support/http.js';

/**
 * An operator's rollout through the real retectl and coordinator: publish with a canary selected in
 * the rete and waves, follow it, pause, promote, abort; a publish cutting across it is refused, and
 * bad flags say what is wrong before anything is sent. No agent reports here, so the rollout stays at
 * its canary unless an operator moves it.
 */
describe('retectl rollouts', () => {
  let coordinator: CoordinatorProcess;
  let admin: Client;
  let env: RetectlEnv;
  const cli = (...args: string[]) => retectl(env, args);
  const head = async () => (await admin.get('/v1/ledger/head')).body;
  const versions = async () =>
    Object.fromEntries(((await admin.get('/v1/nodes')).body.items as { node: string; version: number }[]).map((n) => [n.node, n.version]));

  /** Changes alpha's and laptop's agent.json: a new mesh-wide poll interval (beta has its own). */
  async function changeEveryNode(interval: string): Promise<void> {
    const file = join(env.rete, 'rete.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace(/poll_interval: \S+/, `poll_interval: ${interval}`));
    expect((await cli('compile')).code).toBe(0);
  }

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess({ env: { FLORETE_ROLLOUT_TICK_MS: '200' } });
    admin = new Client(coordinator.url, coordinator.adminToken);
    const home = mkdtempSync(join(tmpdir(), 'retectl-rollout-'));
    env = { home, rete: join(home, 'rete'), coordinator: coordinator.url, token: coordinator.adminToken! };
    mkdirSync(env.rete);
    expect((await cli('init', '.')).code).toBe(0);
    expect((await cli('compile')).code).toBe(0);
    expect((await cli('publish', '-m', 'first')).code).toBe(0);
  });
  afterAll(async () => {
    await coordinator?.stop();
    if (env) rmSync(env.home, { recursive: true, force: true });
  });

  it('refuses bad rollout flags before sending anything, saying which and why', async () => {
    await changeEveryNode('4m');
    const before = await head();
    for (const [args, pattern] of [
      [['--canary', 'tag:nosuch'], /--canary tag:nosuch: no node carries the tag "nosuch"/],
      [['--canary', 'group:nosuch'], /no group is named "nosuch"/],
      [['--waves', '50,20'], /--waves 50,20: the percentages must increase/],
      [['--failure-budget', 'lots'], /--failure-budget lots: expected a count/],
      [['--on-halt', 'panic'], /--on-halt panic: expected rollback or hold/],
    ] as const) {
      const run = await cli('publish', ...args);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 2, stderr: expect.stringMatching(pattern) });
      expect(run.stderr + run.stdout).not.toMatch(STACK_TRACE);
    }
    expect(await head()).toEqual(before);
  });

  it('publishes the canary only, follows it, refuses a publish across it, and records pause, promote and abort with who', async () => {
    const before = await versions();
    const run = await cli('publish', '-m', 'slower polls', '--canary', 'tag:staff', '--waves', '100', '--failure-budget', '0');
    expect(run.code).toBe(0);
    const id = /^rollout ([0-9a-f-]{36}): 2 changed nodes in 2 waves \(1, 1\)/m.exec(run.stdout)?.[1];
    expect({ id, stdout: run.stdout }).toEqual({ id: expect.any(String), stdout: run.stdout });
    expect(run.stdout).toMatch(/, 1 unchanged /);
    expect(run.stdout).toMatch(/^first wave released at position \d+: laptop$/m);
    const after = await versions();
    expect(after).toEqual({ ...before, laptop: before.laptop + 1 });

    // A publish of another change to the same nodes is refused, naming the rollout, and changes nothing.
    await changeEveryNode('3m');
    const ledger = await head();
    const cut = await cli('publish', '-m', 'across');
    expect(cut.code).toBe(1);
    expect(cut.stderr).toMatch(new RegExp(`rollout ${id}, which is still in progress.*retectl rollout abort ${id}`));
    expect(await head()).toEqual(ledger);

    const status = await cli('rollout', 'status');
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^rollout ${id} \\(running\\)`, 'm'));
    expect(status.stdout).toMatch(/^ {2}canary +1 node +released \S+: 0 confirmed, 0 provisional, 1 outstanding, 0 failed$/m);
    expect(status.stdout).toMatch(/^ {2}wave 1 +1 node +not released$/m);

    expect((await cli('rollout', 'pause', id!.slice(0, 8), '-m', 'lunch')).code).toBe(0);
    const promoted = await cli('rollout', 'promote', id!.slice(0, 8), '--json');
    expect(promoted.code).toBe(0);
    expect(JSON.parse(promoted.stdout)).toMatchObject({ status: 'paused', released: 2 });
    expect(await versions()).toEqual({ alpha: before.alpha + 1, beta: before.beta, laptop: before.laptop + 1 });
    const again = await cli('rollout', 'promote', id!.slice(0, 8));
    expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 1, stderr: expect.stringMatching(/cannot be promoted: every wave is released/) });

    const aborted = await cli('rollout', 'abort', id!, '-m', 'changed my mind', '--json');
    expect(aborted.code).toBe(0);
    const view = JSON.parse(aborted.stdout);
    expect(view).toMatchObject({ status: 'aborted', reason: 'aborted by an operator: changed my mind' });
    expect(view.timeline.map((e: { type: string; actor: string }) => e.type)).toEqual([
      'rollout_planned',
      'rollout_wave_released',
      'rollout_paused',
      'rollout_wave_released',
      'rollout_aborted',
    ]);
    expect(new Set(view.timeline.map((e: { actor: string }) => e.actor)).size).toBe(1);
    // Every released node got a new version with its content before the rollout.
    expect(await versions()).toEqual({ alpha: before.alpha + 2, beta: before.beta, laptop: before.laptop + 2 });
    for (const node of ['alpha', 'laptop']) {
      const diff = await cli('diff', node, String(before[node]), String(before[node] + 2));
      expect(diff.stdout.trim()).toBe(`${node}: versions ${before[node]} and ${before[node] + 2} hold the same artifacts`);
    }

    // The rollout is over: the publish that was refused goes out now, and --wait follows a rollout to its end.
    const list = await cli('rollout', 'list', '--status', 'aborted');
    expect(list.stdout).toMatch(new RegExp(`^${id!.slice(0, 8)} +aborted +wave 2/2 +2 nodes`, 'm'));
    const waited = await cli('publish', '-m', 'all at once in one wave', '--waves', '100', '--wait', '3s');
    expect(waited.code).toBe(4);
    expect(waited.stdout).toMatch(/timed out: rollout \S+ is running/);
  });
});

/**
 * The rete's rollout block as the default plan: a publish from it starts a rollout with that plan,
 * a flag replaces one field, --no-rollout publishes at once, and plan shows the plan beforehand.
 */
describe('retectl rollouts from the rete', () => {
  let coordinator: CoordinatorProcess;
  let admin: Client;
  let env: RetectlEnv;
  const cli = (...args: string[]) => retectl(env, args);
  const versions = async () =>
    Object.fromEntries(((await admin.get('/v1/nodes')).body.items as { node: string; version: number }[]).map((n) => [n.node, n.version]));
  const rollouts = async () => ((await admin.get('/v1/rollouts')).body.rollouts as { id: string }[]).length;

  async function changeEveryNode(interval: string): Promise<void> {
    const file = join(env.rete, 'rete.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace(/poll_interval: \S+/, `poll_interval: ${interval}`));
    expect((await cli('compile')).code).toBe(0);
  }

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess({ env: { FLORETE_ROLLOUT_TICK_MS: '200' } });
    admin = new Client(coordinator.url, coordinator.adminToken);
    const home = mkdtempSync(join(tmpdir(), 'retectl-rollout-block-'));
    env = { home, rete: join(home, 'rete'), coordinator: coordinator.url, token: coordinator.adminToken! };
    mkdirSync(env.rete);
    expect((await cli('init', '.')).code).toBe(0);
    expect((await cli('compile')).code).toBe(0);
    expect((await cli('publish', '-m', 'first')).code).toBe(0);
    writeFileSync(join(env.rete, 'rollout.yaml'), 'rollout:\n  canary: { tags: [staff] }\n  waves: [100]\n  bake: 5m\n  on_halt: hold\n');
  });
  afterAll(async () => {
    await coordinator?.stop();
    if (env) rmSync(env.home, { recursive: true, force: true });
  });

  it('publishes with the block as its plan, a flag overriding one field, after plan showed that plan', async () => {
    // The block compiles into no node's set: adding it leaves nothing to publish.
    const unchanged = await cli('compile');
    expect(unchanged.code).toBe(0);
    expect((await cli('plan')).stdout).toMatch(/^plan: 0 new, 0 changed, 0 retired, 3 unchanged: nothing to publish$/m);

    await changeEveryNode('4m');
    const line =
      "rollout plan: canary laptop, then waves 100%; bake 5m; failure budget 1 node; confirm 100%; on halt hold (the rete's rollout block at rollout.yaml:2:3; --failure-budget from the command line)";
    const plan = await cli('plan', '--failure-budget', '1');
    expect(plan.code).toBe(3);
    expect(plan.stdout.split('\n')).toContain(line);
    expect(JSON.parse((await cli('plan', '--json')).stdout).rollout).toEqual({
      canary: ['laptop'],
      waves: [100],
      bake_seconds: 300,
      failure_budget: { count: 0 },
      confirm_share: 1,
      on_halt: 'hold',
    });

    const before = await versions();
    const run = await cli('publish', '-m', 'slower polls, canary first', '--failure-budget', '1');
    expect(run.code).toBe(0);
    const id = /^rollout ([0-9a-f-]{36}): 2 changed nodes in 2 waves \(1, 1\)/m.exec(run.stdout)?.[1];
    expect({ id, stdout: run.stdout }).toEqual({ id: expect.any(String), stdout: run.stdout });
    expect(run.stdout.split('\n')).toContain(line);
    expect(await versions()).toEqual({ ...before, laptop: before.laptop + 1 });
    const view = (await admin.get(`/v1/rollouts/${id}`)).body;
    expect(view.plan).toEqual({ canary: ['laptop'], waves: [100], bake_seconds: 300, failure_budget: { count: 1 }, confirm_share: 1, on_halt: 'hold' });
    expect((await cli('rollout', 'abort', id!, '-m', 'next test')).code).toBe(0);
  });

  it('publishes every changed node at once with --no-rollout, which takes no other rollout flag', async () => {
    await changeEveryNode('3m');
    const refused = await cli('publish', '--no-rollout', '--bake', '1m');
    expect({ code: refused.code, stderr: refused.stderr }).toEqual({
      code: 2,
      stderr: expect.stringMatching(/--no-rollout publishes every changed node at once: it cannot go with --bake/),
    });
    const pruning = await cli('publish', '--prune');
    expect({ code: pruning.code, stderr: pruning.stderr }).toEqual({
      code: 2,
      stderr: expect.stringMatching(/--prune cannot roll out in waves, .*add --no-rollout/),
    });
    expect((await cli('plan', '--no-rollout')).stdout).toMatch(
      /^rollout plan: none, every changed node at once \(--no-rollout sets aside the rete's rollout block at rollout\.yaml:2:3\)$/m,
    );

    const before = await versions();
    const count = await rollouts();
    const run = await cli('publish', '-m', 'all at once', '--no-rollout');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^published [0-9a-f-]{36} at position \d+: 2 changed, 1 unchanged/);
    expect(run.stderr).toMatch(/--no-rollout sets aside the rete's rollout block/);
    expect(await versions()).toEqual({ ...before, alpha: before.alpha + 1, laptop: before.laptop + 1 });
    expect(await rollouts()).toBe(count);
  });
});
