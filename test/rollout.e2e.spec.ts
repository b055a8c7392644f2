import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { canonicalPretty } from '#bundle';
import type { HealthCheck } from '#contracts';
import type { CoordinatorProcess } from './support/coordinator-process.js';
import { hasPostgres } from './support/databases.js';
import { Client } from './support/http.js';
import {
  agentFiles,
  Fleet,
  flor,
  florJson,
  removeTree,
  sleep,
  socketStatus,
  startAgent,
  stopAllAgents,
  vertexStarts,
  waitFor,
  type AgentFiles,
  type AgentProcess,
} from './fixtures/agent/harness.js';
import { waitForExit } from './support/child.js';
import { startForwarder, type Forwarder } from './support/forwarder.js';
import { startWatchedReplicas } from './support/haproxy.js';

/**
 * Rollouts in waves with twenty real agents (each supervising a vertex) watching through HAProxy in
 * front of two replicas on PostgreSQL. A change whose health check fails reaches the canary only and
 * halts the rollout; so does one that cuts a canary node's own path to the coordinator, with the other
 * canary's agent killed with SIGKILL inside its window: each node reverts by itself. A good change goes
 * through four waves, the replica that released the second killed with SIGKILL in its bake, and
 * completes with every node confirmed and no wave released twice.
 */

jest.setTimeout(420_000);

const NODES = Array.from({ length: 20 }, (_, i) => `r${String(i + 1).padStart(2, '0')}`);
const CANARY = ['r01', 'r02'];
/** Reaches the coordinator through a forwarder that its vertex cuts while it runs a set carrying a `cut` artifact. */
const CUT = 'r03';
/** Killed with SIGKILL while its bad version is provisional. */
const CRASH = 'r04';

/** agent.json watching (the poll is an hour: only the watch brings changes), with a confirmation window and checks. */
function agentJsonWith(node: string, confirm?: { within: number; checks: HealthCheck[] }): string {
  return canonicalPretty({
    node,
    mesh: 'test',
    coordinator: 'http://127.0.0.1/',
    sync: { poll_interval: 3600, splay: 0, ...(confirm ? { confirm_within: confirm.within, health_checks: confirm.checks } : {}) },
  });
}
const PASSES: HealthCheck[] = [{ name: 'set', kind: 'command', command: 'test -n "$FLORETE_SET_VERSION"', timeout: 5 }];
const FAILS: HealthCheck[] = [{ name: 'web', kind: 'command', command: 'echo "web is down" >&2; exit 3', timeout: 5 }];

interface LedgerEvent {
  position: number;
  type: string;
  meta: { actor: string };
  data: Record<string, unknown>;
}

(hasPostgres ? describe : describe.skip)('rollouts in waves: 20 agents, two replicas behind HAProxy', () => {
  const shared = mkdtempSync(join(tmpdir(), 'florete-rollout-'));
  let replicas: readonly CoordinatorProcess[] = [];
  let stopReplicas: (() => Promise<void>) | undefined;
  let proxyUrl = '';
  let admin: Client;
  let fleet: Fleet;
  const files: Record<string, AgentFiles> = {};
  const agents: Record<string, AgentProcess> = {};
  let forwarder: Forwarder | undefined;
  /** The file whose presence cuts CUT's path to the coordinator. */
  const cutFile = join(shared, 'cut-path');

  async function blobsOf(tree: Record<string, Record<string, string>>) {
    const nodes: Record<string, { artifacts: Record<string, string> }> = {};
    for (const [node, content] of Object.entries(tree)) {
      nodes[node] = { artifacts: {} };
      for (const [name, text] of Object.entries(content)) nodes[node].artifacts[name] = await admin.putBlob(text);
    }
    return nodes;
  }

  const heads = async () =>
    Object.fromEntries(((await admin.get('/v1/nodes')).body.items as { node: string; version: number }[]).map((i) => [i.node, i.version]));
  const applied = async () => Object.fromEntries(await Promise.all(NODES.map(async (n) => [n, (await socketStatus(files[n])).applied_version] as const)));
  /** The waves of rollout `id` that `replica` released, from its log: a replica that comes second to a step appends nothing (changed 0). */
  function wavesReleasedBy(replica: CoordinatorProcess, id: string): number[] {
    return replica.output.flatMap((line) => {
      try {
        const o = JSON.parse(line) as { msg?: string; rollout?: string; step?: string; wave?: number; changed?: number };
        return o.msg === 'rollout step' && o.rollout === id && o.step === 'release' && (o.changed ?? 0) > 0 ? [o.wave as number] : [];
      } catch {
        return [];
      }
    });
  }
  async function eventsAfter(position: number): Promise<LedgerEvent[]> {
    const r = await admin.get(`/v1/ledger/events?after=${position}&limit=1000`);
    expect(r.status).toBe(200);
    return r.body.items as LedgerEvent[];
  }

  beforeAll(async () => {
    // An hour: every gate here is opened by the reports that complete it, or by its bake's end, never by the tick.
    // Info: a replica's log names the rollout steps it appended, so the test knows which one drives.
    // A day's grace: the reverts here must be the nodes' own, reported, never the coordinator giving a
    // silent node its previous set back at the end of its window (rollouts.int.spec.ts tests that), which a
    // slow restart on a loaded machine could otherwise race.
    ({
      replicas,
      proxyUrl,
      stop: stopReplicas,
    } = await startWatchedReplicas(shared, { FLORETE_ROLLOUT_TICK_MS: '3600000', FLORETE_LOG_LEVEL: 'info', FLORETE_ROLLOUT_CONFIRM_GRACE: '86400' }));
    // The test's own calls go to one replica (the survivor, once one is killed); the agents go through the proxy.
    admin = new Client(replicas[1].url, replicas[0].adminToken);
    fleet = new Fleet(admin);
    await fleet.publish(Object.fromEntries(NODES.map((n) => [n, { 'agent.json': agentJsonWith(n), 'flor.json': florJson(n, 'v1') }])), 'rollout test: start');
    // One at a time: twenty enrolments at once keep a loaded 2-core machine from answering the proxy's health checks.
    forwarder = await startForwarder(new URL(proxyUrl), cutFile);
    for (const node of NODES) {
      files[node] = agentFiles('supervise');
      if (node === CUT) {
        // Its vertex is told which file cuts the path: created when it runs a set carrying `cut`, removed when it runs any other.
        const config = JSON.parse(readFileSync(files[node].configPath, 'utf8'));
        config.activation.argv.push(cutFile);
        writeFileSync(files[node].configPath, JSON.stringify(config));
      }
      const r = await flor([
        'agent',
        'enroll',
        '--coordinator',
        node === CUT ? forwarder.url : proxyUrl,
        '--token',
        await fleet.enrolmentToken(node),
        ...files[node].args,
      ]);
      expect(r).toEqual(expect.objectContaining({ code: 0 }));
      agents[node] = await startAgent(files[node]);
    }
    for (const node of NODES)
      await waitFor(
        `${node} applied v1 and watching`,
        async () => {
          const s = await socketStatus(files[node]);
          return s.applied_version === 1 && s.watch?.state === 'watching';
        },
        60_000,
      );
  });

  afterAll(async () => {
    await stopAllAgents();
    await forwarder?.close();
    await stopReplicas?.();
    for (const f of Object.values(files)) removeTree(f.root);
    rmSync(shared, { recursive: true, force: true });
  });

  it('a change whose health check fails reaches the canary only: it reverts, the rollout halts, no other node moves', async () => {
    const before = await heads();
    const start = ((await admin.get('/v1/ledger/head')).body as { position: number }).position;
    const nodes = await blobsOf(
      Object.fromEntries(NODES.map((n) => [n, { 'agent.json': agentJsonWith(n, { within: 6, checks: FAILS }), 'flor.json': florJson(n, 'bad') }])),
    );
    const r = await admin.post('/v1/publishes', {
      message: 'a bad change',
      nodes,
      rollout: { canary: CANARY, waves: [50, 100], failure_budget: { count: 0 }, on_halt: 'rollback' },
    });
    expect(r.status).toBe(201);
    const rollout = r.body.rollout as { id: string; waves: number[] };
    expect(rollout.waves).toEqual([2, 9, 9]);
    expect((r.body.changed as { node: string }[]).map((c) => c.node).sort()).toEqual(CANARY);

    // A publish cutting across the rollout is refused whole, naming it; nothing is appended.
    const headBefore = (await admin.get('/v1/ledger/head')).body;
    const cut = await admin.post('/v1/publishes', { message: 'cuts across', nodes: { r10: nodes.r10 } });
    expect(cut.status).toBe(409);
    expect(cut.body).toMatchObject({ code: 'rollout_in_progress', rollout: rollout.id, nodes: ['r10'] });
    expect((await admin.get('/v1/ledger/head')).body).toEqual(headBefore);

    const halted = await waitFor(
      'the rollout to halt',
      async () => {
        const v = (await admin.get(`/v1/rollouts/${rollout.id}`)).body as { status: string; reason: string; wave_list: { counts: { failed: number } }[] };
        return v.status === 'halted' && v;
      },
      90_000,
      250,
    );
    // A budget of 0 halts at the first failure heard: the other canary node's report may come a check later.
    expect(halted.reason).toMatch(/^canary: [12] of 2 node\(s\) failed, reverted or rejected/);

    // Every other node: its head in the ledger and what its agent runs are unchanged.
    const after = await heads();
    const running = await applied();
    for (const n of NODES.filter((x) => !CANARY.includes(x))) {
      expect(after[n]).toBe(before[n]);
      expect(running[n]).toBe(1);
    }
    // The canary reverted on its own and runs its previous content under a new, higher version.
    for (const n of CANARY) {
      const s = await waitFor(
        `${n} reverted`,
        async () => {
          const st = await socketStatus(files[n]);
          return st.confirmation?.state === 'reverted' && st.applied_version === after[n] && st;
        },
        30_000,
      );
      expect(s.confirmation?.reverted).toMatchObject({ version: before[n] + 1, reason: expect.stringContaining('web is down') });
      expect(after[n]).toBe(before[n] + 2);
    }
    expect(((await admin.get(`/v1/rollouts/${rollout.id}`)).body as { wave_list: { counts: { failed: number } }[] }).wave_list[0].counts.failed).toBe(2);
    // The ledger holds the plan, the canary's release, the reverts and the halt, in that order.
    const events = await eventsAfter(start);
    const kinds = events
      .filter((e) => e.type.startsWith('rollout_') || e.type === 'publish_recorded')
      .map((e) => (e.type === 'publish_recorded' ? `publish_recorded:${e.data.kind as string}` : e.type));
    expect(kinds.slice(0, 3)).toEqual(['rollout_planned', 'rollout_wave_released', 'publish_recorded:publish']);
    expect(kinds.filter((k) => k.startsWith('rollout_')).slice(-1)).toEqual(['rollout_halted']);
    expect(events.find((e) => e.type === 'rollout_halted')!.meta.actor).toBe('rollout-driver');
    expect(events.filter((e) => e.type === 'rollout_wave_released')).toHaveLength(1);
    // Each canary node went back once, by its own revert or the halt's rollback (whichever the ledger took first), and no other node was stamped.
    const stamps = events
      .filter((e) => e.type === 'node_set_stamped')
      .map((e) => `${e.data.node as string}@${e.data.version as number}${e.data.restored_from !== undefined ? `<-${e.data.restored_from as number}` : ''}`);
    expect(stamps.sort()).toEqual(CANARY.flatMap((n) => [`${n}@${before[n] + 1}`, `${n}@${before[n] + 2}<-${before[n]}`]).sort());
  });

  it('a change that cuts a canary node off from the coordinator, with the other canary killed inside its window: each reverts by itself and reports it, the rollout halts, no later wave moves', async () => {
    const before = await heads();
    const start = ((await admin.get('/v1/ledger/head')).body as { position: number }).position;
    // Every node gets the `cut` artifact; only CUT's vertex acts on it. CUT's checks pass (only contact is missing); the others' fail.
    const nodes = await blobsOf(
      Object.fromEntries(
        NODES.map((n) => [
          n,
          { 'agent.json': agentJsonWith(n, { within: 8, checks: n === CUT ? PASSES : FAILS }), 'flor.json': florJson(n, 'cut'), cut: 'yes\n' },
        ]),
      ),
    );
    const published = performance.now();
    const r = await admin.post('/v1/publishes', {
      message: 'a change that cuts the path',
      nodes,
      rollout: { canary: [CUT, CRASH], waves: [50, 100], failure_budget: { count: 0 }, on_halt: 'hold' },
    });
    expect(r.status).toBe(201);
    const rollout = r.body.rollout as { id: string; waves: number[] };
    expect(rollout.waves).toEqual([2, 9, 9]);
    const bad = Object.fromEntries((r.body.changed as { node: string; to: number }[]).map((c) => [c.node, c.to]));
    expect(Object.keys(bad).sort()).toEqual([CUT, CRASH]);

    // CRASH is killed once its check has failed at least once, inside its window; meanwhile CUT's new vertex cuts its path.
    const [provisional] = await Promise.all([
      waitFor(
        `${CRASH} provisional, its check failed`,
        async () => {
          const s = await socketStatus(files[CRASH]);
          return s.confirmation?.state === 'provisional' && s.applied_version === bad[CRASH] && !!s.confirmation.provisional?.check_failure && s;
        },
        30_000,
        50,
      ),
      waitFor(`${CUT}'s path cut`, async () => existsSync(cutFile), 30_000, 50),
    ]);
    await agents[CRASH].kill9();
    const deadline = Date.parse(provisional.confirmation!.provisional!.deadline);
    expect(deadline).toBeGreaterThan(Date.now());

    // CUT reverts by itself: its previous vertex restores the path, and the coordinator hears of the revert through it.
    const cut = await waitFor(
      `${CUT} reverted and reported`,
      async () => {
        const s = await socketStatus(files[CUT]);
        return s.confirmation?.state === 'reverted' && !!s.confirmation.reverted?.reported_at && s;
      },
      60_000,
    );
    expect(cut.confirmation?.reverted).toMatchObject({ version: bad[CUT], to: before[CUT], reason: 'coordinator not reached after activation' });
    expect(existsSync(cutFile)).toBe(false);
    expect(vertexStarts(files[CUT]).slice(-2)).toEqual([String(bad[CUT]), String(before[CUT])]);
    const reverted = performance.now() - published;

    const halted = await waitFor(
      'the rollout to halt',
      async () => {
        const v = (await admin.get(`/v1/rollouts/${rollout.id}`)).body as { status: string; reason: string };
        return v.status === 'halted' && v;
      },
      60_000,
      250,
    );
    expect(halted.reason).toMatch(/^canary: [12] of 2 node\(s\) failed, reverted or rejected/);

    // The window closes while CRASH's agent is dead. Nothing else knows of it: the coordinator holds (on_halt: hold) and has not heard of a revert.
    await sleep(Math.max(0, deadline - Date.now()) + 500);
    expect((await heads())[CRASH]).toBe(bad[CRASH]);
    agents[CRASH] = await startAgent(files[CRASH]);
    const crashed = await waitFor(
      `${CRASH} reverted at start and reported`,
      async () => {
        const s = await socketStatus(files[CRASH]);
        return s.confirmation?.state === 'reverted' && !!s.confirmation.reverted?.reported_at && s;
      },
      60_000,
    );
    expect(crashed.confirmation?.reverted).toMatchObject({
      version: bad[CRASH],
      to: before[CRASH],
      done: true,
      reason: expect.stringContaining('web is down'),
    });
    expect(agents[CRASH].output.join('')).toMatch(
      new RegExp(`"msg":"reverting: the version was not confirmed within its window","version":${bad[CRASH]},"to":${before[CRASH]}`),
    );

    // The coordinator records each revert as a rollback: a new, higher version with the previous content, which the node then runs.
    for (const n of [CUT, CRASH]) {
      await waitFor(`${n} runs the rollback`, async () => (await socketStatus(files[n])).applied_version === bad[n] + 1, 30_000);
      await waitFor(`the coordinator to hear ${n} runs the rollback`, async () => (await fleet.nodeStatus(n))?.applied_version === bad[n] + 1, 30_000);
      const versions = (await admin.get(`/v1/nodes/${n}/versions?limit=5`)).body.items as { version: number; outcome: { result: string } | null }[];
      expect(versions.find((v) => v.version === bad[n])?.outcome?.result).toBe('reverted');
    }
    const after = await heads();
    const events = await eventsAfter(start);
    const stamps = events
      .filter((e) => e.type === 'node_set_stamped')
      .map((e) => `${e.data.node as string}@${e.data.version as number}${e.data.restored_from !== undefined ? `<-${e.data.restored_from as number}` : ''}`);
    expect(stamps.sort()).toEqual([CUT, CRASH].flatMap((n) => [`${n}@${before[n] + 1}`, `${n}@${before[n] + 2}<-${before[n]}`]).sort());
    const rollbacks = events.filter((e) => e.type === 'publish_recorded' && e.data.kind === 'rollback');
    for (const n of [CUT, CRASH]) {
      expect(after[n]).toBe(before[n] + 2);
      // Asked for by the node itself, not by the halt.
      expect(
        rollbacks.filter((e) => (e.data.reverted as { node: string } | undefined)?.node === n).map((e) => ({ actor: e.meta.actor, reverted: e.data.reverted })),
      ).toEqual([{ actor: `node:${n}`, reverted: expect.objectContaining({ node: n, version: bad[n], to: before[n] }) }]);
    }

    // One wave released, then the halt; the later waves were never released.
    expect(events.filter((e) => e.type === 'rollout_wave_released').map((e) => e.data.wave)).toEqual([0]);
    expect(events.filter((e) => e.type.startsWith('rollout_')).map((e) => e.type)).toEqual(['rollout_planned', 'rollout_wave_released', 'rollout_halted']);
    const view = (await admin.get(`/v1/rollouts/${rollout.id}`)).body as {
      status: string;
      released: number;
      wave_list: { counts: { failed: number; released: number } }[];
    };
    expect(view).toMatchObject({ status: 'halted', released: 1 });
    expect(view.wave_list.map((w) => w.counts.released)).toEqual([2, 0, 0]);
    expect(view.wave_list[0].counts.failed).toBe(2);

    // No node of a later wave ever got a new version: its head is unchanged, and its agent, asked with `flor agent status`, never saw one.
    const later = NODES.filter((n) => n !== CUT && n !== CRASH);
    const shown = await Promise.all(later.map((n) => flor(['agent', 'status', ...files[n].args])));
    later.forEach((n, i) => {
      expect(after[n]).toBe(before[n]);
      expect(shown[i]).toMatchObject({ code: 0 });
      expect(shown[i].stdout).toMatch(new RegExp(`^applied version +${before[n]}$`, 'm'));
      expect(shown[i].stdout).toMatch(new RegExp(`^high-water mark +${before[n]}$`, 'm'));
    });
    // And the reverted nodes say so with `flor agent status`.
    for (const n of [CUT, CRASH]) {
      const text = (await flor(['agent', 'status', ...files[n].args])).stdout;
      expect(text).toMatch(new RegExp(`^confirmation +reverted ${bad[n]} to ${before[n]} at \\S+: .+ \\(reported\\)$`, 'm'));
    }
    process.stdout.write(
      `rollout: publish → ${CUT} cut off, reverted and reported: ${Math.round(reverted)} ms (window 8 s); whole case with ${CRASH} killed and restarted: ${Math.round(performance.now() - published)} ms\n`,
    );
  });

  it('a good change goes through four waves to every node, confirmed, with the replica that released a wave killed before the next: no wave twice, no node skipped', async () => {
    const start = ((await admin.get('/v1/ledger/head')).body as { position: number }).position;
    const before = await heads();
    const nodes = await blobsOf(
      Object.fromEntries(NODES.map((n) => [n, { 'agent.json': agentJsonWith(n, { within: 20, checks: PASSES }), 'flor.json': florJson(n, 'good') }])),
    );
    const published = performance.now();
    const r = await admin.post('/v1/publishes', {
      message: 'a good change',
      nodes,
      rollout: { canary: ['r01'], waves: [34, 67, 100], bake_seconds: 2, failure_budget: { count: 0 } },
    });
    expect(r.status).toBe(201);
    const id = (r.body.rollout as { id: string }).id;
    expect((r.body.rollout as { waves: number[] }).waves).toHaveLength(4);

    // Between the second and third waves, kill the replica that released the second, in its bake: the survivor must release the rest itself.
    await waitFor('the second wave released', async () => ((await admin.get(`/v1/rollouts/${id}`)).body as { released: number }).released >= 2, 90_000, 100);
    const victim = await waitFor('the replica that released the second wave', async () => replicas.find((p) => wavesReleasedBy(p, id).includes(1)), 10_000);
    const survivor = replicas.find((p) => p !== victim)!;
    admin = new Client(survivor.url, admin.token);
    victim.child.kill('SIGKILL');
    await waitForExit(victim.child, 'the killed replica');

    const done = await waitFor(
      'the rollout to complete',
      async () => {
        const v = (await admin.get(`/v1/rollouts/${id}`)).body as {
          status: string;
          wave_list: { counts: { confirmed: number; released: number; nodes: number } }[];
        };
        if (v.status === 'halted') throw new Error(`the rollout halted: ${JSON.stringify(v)}`);
        return v.status === 'completed' && v;
      },
      180_000,
      250,
    );
    const elapsed = performance.now() - published;
    process.stdout.write(
      `rollout: publish → four waves confirmed on ${NODES.length} agents: ${Math.round(elapsed)} ms (bake 2 s a wave; replica ${replicas.indexOf(victim) + 1} of 2 released the second wave and was killed)\n`,
    );
    for (const w of done.wave_list) expect(w.counts).toMatchObject({ confirmed: w.counts.nodes, released: w.counts.nodes });

    const events = await eventsAfter(start);
    const waves = events.filter((e) => e.type === 'rollout_wave_released').map((e) => e.data.wave);
    expect(waves).toEqual([0, 1, 2, 3]);
    expect(wavesReleasedBy(survivor, id).filter((w) => w >= 2)).toEqual([2, 3]);
    // Each node stamped once by the rollout, one version up, and every agent runs it, confirmed.
    const stamped = events.filter((e) => e.type === 'node_set_stamped').map((e) => e.data.node as string);
    expect(stamped.sort()).toEqual(NODES);
    const after = await heads();
    for (const n of NODES) {
      expect(after[n]).toBe(before[n] + 1);
      const s = await waitFor(
        `${n} confirmed`,
        async () => {
          const st = await socketStatus(files[n]);
          return st.confirmation?.state === 'confirmed' && st;
        },
        30_000,
      );
      expect(s.applied_version).toBe(after[n]);
    }
    // retectl shows the rollout as completed, with the waves in order.
    const shown = await admin.get(`/v1/rollouts/${id.slice(0, 8)}`);
    expect(shown.status).toBe(200);
    expect(shown.body.timeline.map((e: { type: string }) => e.type)).toEqual([
      'rollout_planned',
      'rollout_wave_released',
      'rollout_wave_released',
      'rollout_wave_released',
      'rollout_wave_released',
      'rollout_completed',
    ]);
  });
});
