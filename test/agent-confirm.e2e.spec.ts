import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { canonicalPretty } from '#bundle';
import type { HealthCheck } from '#contracts';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { startForwarder, type Forwarder } from './support/forwarder.js';
import { Client } from './support/http.js';
import {
  agentFiles,
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
} from './fixtures/agent/harness.js';

jest.setTimeout(180_000);

/** agent.json polling every 2 s, with a confirmation window and checks when given. */
function agentJsonWith(node: string, confirm?: { within: number; checks?: HealthCheck[] }): string {
  return canonicalPretty({
    node,
    mesh: 'test',
    coordinator: 'http://127.0.0.1/',
    sync: { poll_interval: 2, splay: 0, ...(confirm ? { confirm_within: confirm.within, ...(confirm.checks ? { health_checks: confirm.checks } : {}) } : {}) },
  });
}

describe('commit-confirmed on the node (real agents)', () => {
  let coordinator: CoordinatorProcess;
  let fleet: Fleet;
  let admin: Client;
  const roots: string[] = [];
  const forwarders: Forwarder[] = [];

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    admin = new Client(coordinator.url, coordinator.adminToken);
    fleet = new Fleet(admin);
  });

  afterAll(async () => {
    await stopAllAgents();
    for (const f of forwarders) await f.close();
    await coordinator?.stop();
    for (const r of roots) removeTree(r);
  });

  async function enrolled(node: string, files: AgentFiles, url = coordinator.url): Promise<void> {
    roots.push(files.root);
    const r = await flor(['agent', 'enroll', '--coordinator', url, '--token', await fleet.enrolmentToken(node), ...files.args]);
    expect(r).toEqual(expect.objectContaining({ code: 0 }));
  }

  /** The node's publishes, newest first, as the ledger recorded them. */
  async function rollbacksOf(
    node: string,
  ): Promise<{ kind: string; message: string; actor: unknown; reverted?: { version: number; to: number; reason: string } }[]> {
    const r = await admin.get('/v1/ledger/events?after=0&limit=1000');
    expect(r.status).toBe(200);
    return (
      r.body.items as {
        type: string;
        meta: { actor: unknown };
        data: { kind: string; message: string; reverted?: { node: string; version: number; to: number; reason: string } };
      }[]
    )
      .filter((e) => e.type === 'publish_recorded' && e.data.reverted?.node === node)
      .map((e) => ({ kind: e.data.kind, message: e.data.message, actor: e.meta.actor, ...(e.data.reverted ? { reverted: e.data.reverted } : {}) }));
  }

  async function headOf(node: string): Promise<number | null> {
    return ((await admin.get(`/v1/nodes/${node}`)).body.version as number | null) ?? null;
  }

  /** Waits for the mirror to catch up with the ledger; returns the newest commit touching `node`: author, then message. */
  async function mirrorOf(node: string): Promise<string> {
    await waitFor(
      'the mirror to agree with the ledger',
      async () => {
        const r = await admin.post('/v1/ledger/verify?mirror=true', {});
        return r.status === 200 && r.body.ok === true && (r.body.mirror as { lag: number } | undefined)?.lag === 0;
      },
      30_000,
      500,
    );
    return execFileSync('git', ['--git-dir', join(coordinator.dataDir, 'audit.git'), 'log', '-1', '--format=%an%n%B', '--', node], { encoding: 'utf8' });
  }

  it('a good change confirms: checks pass and the coordinator is reached after activation', async () => {
    const node = 'good';
    await fleet.publish({ [node]: { 'agent.json': agentJsonWith(node), 'flor.json': florJson(node, 'v1') } });
    const files = agentFiles('supervise');
    await enrolled(node, files);
    await startAgent(files);
    await waitFor('v1 applied', async () => (await socketStatus(files)).applied_version === 1);
    const v2 = (
      await fleet.publish({
        [node]: {
          'agent.json': agentJsonWith(node, { within: 30, checks: [{ name: 'ok', kind: 'command', command: 'test -n "$FLORETE_SET_VERSION"', timeout: 5 }] }),
          'flor.json': florJson(node, 'v2'),
        },
      })
    )[node];
    const status = await waitFor('v2 confirmed', async () => {
      const s = await socketStatus(files);
      return s.confirmation?.state === 'confirmed' && s.confirmation.confirmed?.version === v2 && s;
    });
    expect(status.applied_version).toBe(v2);
    expect(status.confirmation?.confirmed).toMatchObject({ version: v2, mode: 'agent', by: null });
    expect(await headOf(node)).toBe(v2);
    expect(await rollbacksOf(node)).toEqual([]);
    const text = await flor(['agent', 'status', ...files.args]);
    expect(text.stdout).toMatch(new RegExp(`^confirmation +confirmed ${v2} at `, 'm'));
  });

  it('operator confirmation: a version an operator confirms in time is kept, with who; one nobody confirms is reverted', async () => {
    const node = 'opsconf';
    await fleet.publish({ [node]: { 'agent.json': agentJsonWith(node), 'flor.json': florJson(node, 'v1') } });
    const files = agentFiles('supervise');
    await enrolled(node, files);
    await startAgent(files);
    await waitFor('v1 applied', async () => (await socketStatus(files)).applied_version === 1);
    const publishWithin = async (marker: string, within: number) => {
      const artifacts = { 'agent.json': await admin.putBlob(agentJsonWith(node)), 'flor.json': await admin.putBlob(florJson(node, marker)) };
      const r = await admin.post('/v1/publishes', { message: `${marker}, to be confirmed`, nodes: { [node]: { artifacts } }, confirm_within: within });
      expect(r.status).toBe(201);
      return { id: r.body.publish_id as string, version: (r.body.changed as { to: number }[])[0].to };
    };

    const kept = await publishWithin('v2', 60);
    const waiting = await waitFor('v2 provisional, waiting for an operator', async () => {
      const s = await socketStatus(files);
      return s.confirmation?.state === 'provisional' && s.confirmation.provisional?.version === kept.version && s;
    });
    expect(waiting.confirmation?.provisional).toMatchObject({ mode: 'operator', operator_confirmed: null });
    const confirmed = await admin.post(`/v1/publishes/${kept.id}/confirm`, {});
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toMatchObject({ publish_id: kept.id, nodes: 1 });
    const by = confirmed.body.confirmed_by as string;
    const s = await waitFor(
      'v2 confirmed by the operator',
      async () => {
        const now = await socketStatus(files);
        return now.confirmation?.state === 'confirmed' && now.confirmation.confirmed?.version === kept.version && now;
      },
      30_000,
    );
    expect(s.confirmation?.confirmed).toMatchObject({ version: kept.version, mode: 'operator', by });
    // The coordinator heard the confirmation: the version's outcome is applied, not provisional.
    await waitFor(
      'the confirmed report',
      async () => {
        const versions = (await admin.get(`/v1/nodes/${node}/versions?limit=5`)).body.items as { version: number; outcome: { result: string } | null }[];
        return versions.find((v) => v.version === kept.version)?.outcome?.result === 'applied';
      },
      30_000,
    );
    expect((await admin.post(`/v1/publishes/${kept.id}/confirm`, {})).body).toMatchObject({ code: 'already_confirmed' });

    const unconfirmed = await publishWithin('v3', 10);
    const reverted = await waitFor(
      'v3 reverted, nobody confirmed it',
      async () => {
        const now = await socketStatus(files);
        return now.confirmation?.state === 'reverted' && now.confirmation.reverted?.version === unconfirmed.version && now;
      },
      40_000,
    );
    expect(reverted.confirmation?.reverted).toMatchObject({ to: kept.version, reason: 'no operator confirmation within the window' });
    await waitFor('the rollback applied', async () => (await socketStatus(files)).applied_version === unconfirmed.version + 1, 30_000);
    expect((await admin.post(`/v1/publishes/${unconfirmed.id}/confirm`, {})).body).toMatchObject({ code: 'not_confirmable' });
  });

  it('a change whose health check fails: the node reverts within the window, reports reverted, and the ledger and mirror show the rollback, applied without a restart', async () => {
    const node = 'sick';
    await fleet.publish({ [node]: { 'agent.json': agentJsonWith(node), 'flor.json': florJson(node, 'v1') } });
    const files = agentFiles('supervise');
    await enrolled(node, files);
    await startAgent(files);
    await waitFor('v1 applied', async () => (await socketStatus(files)).applied_version === 1);
    const published = Date.now();
    const bad = (
      await fleet.publish({
        [node]: {
          'agent.json': agentJsonWith(node, { within: 6, checks: [{ name: 'web', kind: 'command', command: 'echo "web is down" >&2; exit 3', timeout: 5 }] }),
          'flor.json': florJson(node, 'v2'),
        },
      })
    )[node];
    const provisional = await waitFor('v2 provisional', async () => {
      const s = await socketStatus(files);
      return s.confirmation?.state === 'provisional' && s;
    });
    expect(provisional.confirmation?.provisional).toMatchObject({ version: bad, previous: 1 });
    const reverted = await waitFor(
      'the revert',
      async () => {
        const s = await socketStatus(files);
        return s.confirmation?.state === 'reverted' && s;
      },
      30_000,
    );
    // Within the window (plus one check's time), not at some later poll.
    expect(Date.parse(reverted.confirmation!.reverted!.at) - published).toBeLessThan(6_000 + 8_000);
    expect(reverted.confirmation?.reverted).toMatchObject({ version: bad, to: 1 });
    expect(reverted.confirmation?.reverted?.reason).toBe('health check "web" (command "echo \\"web is down\\" >&2; exit 3") failed: exit 3: web is down');
    // The mark never goes back to the version reverted to; the watch may already have brought the rollback (bad + 1).
    expect(reverted.high_water).toBeGreaterThanOrEqual(bad);
    // The coordinator stamps the rollback; the node takes it (same content as what runs) without restarting the vertex.
    await waitFor('the rollback applied', async () => (await socketStatus(files)).applied_version === bad + 1, 30_000);
    expect(await headOf(node)).toBe(bad + 1);
    const [record] = await rollbacksOf(node);
    expect(record).toMatchObject({ kind: 'rollback', actor: `node:${node}`, reverted: { version: bad, to: 1 } });
    expect(record.reverted?.reason).toContain('exit 3: web is down');
    const after = await socketStatus(files);
    expect(after.activations[0]).toMatchObject({ version: bad + 1, activation: 'none' });
    expect(vertexStarts(files)).toEqual(['1', String(bad), '1']);
    expect(after.confirmation?.reverted?.reported_at).not.toBeNull();
    expect((await fleet.nodeStatus(node))?.applied_version).toBe(bad + 1);
    expect(await mirrorOf(node)).toMatch(new RegExp(`^node:${node}\\n${node} reverted version ${bad} to 1: health check "web"`));
  });

  it('a change that cuts the node off from the coordinator: the node reverts by itself, is reachable again and reports reverted', async () => {
    const node = 'cut';
    const files = agentFiles({ command: '' });
    const blocked = join(files.root, 'blocked');
    // The activation command: a set carrying a `cut` artifact blocks the node's path to the coordinator; any other set restores it.
    const config = JSON.parse(readFileSync(files.configPath, 'utf8'));
    config.activation = { kind: 'command', command: `if [ -f "$FLORETE_ACTIVE_DIR/cut" ]; then touch ${blocked}; else rm -f ${blocked}; fi` };
    writeFileSync(files.configPath, JSON.stringify(config));
    const fwd = await startForwarder(new URL(coordinator.url), blocked);
    forwarders.push(fwd);
    await fleet.publish({ [node]: { 'agent.json': agentJsonWith(node), 'flor.json': florJson(node, 'v1') } });
    await enrolled(node, files, fwd.url);
    await startAgent(files);
    await waitFor('v1 applied', async () => (await socketStatus(files)).applied_version === 1);
    const bad = (await fleet.publish({ [node]: { 'agent.json': agentJsonWith(node, { within: 6 }), 'flor.json': florJson(node, 'v2'), cut: 'yes\n' } }))[node];
    await waitFor('the path cut', async () => existsSync(blocked), 30_000, 50);
    const reverted = await waitFor(
      'the revert',
      async () => {
        const s = await socketStatus(files);
        return s.confirmation?.state === 'reverted' && s;
      },
      30_000,
    );
    expect(reverted.confirmation?.reverted).toMatchObject({ version: bad, to: 1, reason: 'coordinator not reached after activation' });
    expect(existsSync(blocked)).toBe(false);
    await waitFor('the rollback applied', async () => (await socketStatus(files)).applied_version === bad + 1, 30_000);
    const [record] = await rollbacksOf(node);
    expect(record).toMatchObject({ reverted: { version: bad, to: 1, reason: 'coordinator not reached after activation' } });
    expect((await fleet.nodeStatus(node))?.last_result).not.toBe('reverted');
  });

  it('kill -9 inside the window with the bad set active: the agent reverts when it starts again', async () => {
    const node = 'crashy';
    await fleet.publish({ [node]: { 'agent.json': agentJsonWith(node), 'flor.json': florJson(node, 'v1') } });
    const files = agentFiles('supervise');
    await enrolled(node, files);
    let agent = await startAgent(files);
    await waitFor('v1 applied', async () => (await socketStatus(files)).applied_version === 1);
    const bad = (
      await fleet.publish({
        [node]: {
          'agent.json': agentJsonWith(node, { within: 5, checks: [{ name: 'nope', kind: 'tcp', address: '127.0.0.1:9', timeout: 2 }] }),
          'flor.json': florJson(node, 'v2'),
        },
      })
    )[node];
    // Killed once its check has failed at least once, so the store holds the failure the revert names.
    const provisional = await waitFor('v2 provisional, its check failed', async () => {
      const s = await socketStatus(files);
      return s.confirmation?.state === 'provisional' && s.applied_version === bad && !!s.confirmation.provisional?.check_failure && s;
    });
    await agent.kill9();
    // The window closes while no agent runs.
    const deadline = Date.parse(provisional.confirmation!.provisional!.deadline);
    await new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now()) + 500));
    // Nothing else knows of the window: the coordinator has not heard of a revert, so only the agent's store can start it.
    expect(await headOf(node)).toBe(bad);
    agent = await startAgent(files);
    const s = await waitFor('the revert at start', async () => {
      const now = await socketStatus(files);
      return now.confirmation?.state === 'reverted' && now;
    });
    expect(s.confirmation?.reverted).toMatchObject({ version: bad, to: 1, done: true });
    expect(s.confirmation?.reverted?.reason).toMatch(/^health check "nope" \(tcp 127\.0\.0\.1:9\) failed: /);
    expect(s.high_water).toBeGreaterThanOrEqual(bad);
    expect(agent.output.join('')).toMatch(/"msg":"reverting: the version was not confirmed within its window","version":\d+,"to":1/);
    await waitFor('the rollback applied', async () => (await socketStatus(files)).applied_version === bad + 1, 30_000);
    expect(await headOf(node)).toBe(bad + 1);
    await agent.stop();
  });
});
