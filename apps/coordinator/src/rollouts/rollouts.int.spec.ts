import pino from 'pino';
import { testDatabases } from '../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import type { CoordinatorConfig } from '../config.js';
import { DomainError } from '../common/index.js';
import { recordOutcome } from '../fleet/reports.repository.js';
import { rebuildProjections } from '../projections/index.js';
import { verifyLedger } from '../ledger/index.js';
import { RolloutDriver } from './rollout-driver.js';
import { listRollouts, readRollout } from './rollouts.repository.js';

const NODES = Array.from({ length: 10 }, (_, i) => `n${i}`);
const tree = (marker: string) => Object.fromEntries(NODES.map((n) => [n, { 'flor.json': `${n} ${marker}` }]));

describe.each(testDatabases)('rollouts on $name', (database) => {
  let h: LedgerHarness;
  let driver: RolloutDriver;
  beforeEach(async () => {
    h = await ledgerHarness(database);
    driver = new RolloutDriver(h.writer, h.db, { rolloutTickMs: 3_600_000, rolloutConfirmGraceSeconds: 0 } as CoordinatorConfig, pino({ level: 'silent' }));
    await h.publish(tree('v1'));
  });
  afterEach(async () => {
    await driver.onApplicationShutdown();
    await h.close();
  });

  const headsOf = async () =>
    Object.fromEntries((await h.db.kysely.selectFrom('node_heads').select(['node', 'version']).execute()).map((r) => [r.node, r.version]));
  /** Every node the rollout released reports `result` for the version it was given. */
  async function report(id: string, result: 'applied' | 'provisional' | 'failed', only?: (node: string) => boolean): Promise<void> {
    const rows = await h.db.kysely
      .selectFrom('rollout_nodes')
      .select(['node', 'version'])
      .where('rollout_id', '=', id)
      .where('version', 'is not', null)
      .execute();
    for (const r of rows)
      if (!only || only(r.node))
        await recordOutcome(h.db.kysely as never, r.node, { version: r.version!, result, error: null, overwrites: true }, null, new Date());
  }

  it('stamps the canary only; each gate that opens releases the next wave once; the rollout completes; a rebuild projects the same', async () => {
    const r = await h.publish(tree('v2'), { rollout: { canary: ['n3'], waves: [50, 100] } });
    expect(r.rollout).toEqual({ id: r.publish_id, waves: [1, 5, 4], released: 1 });
    expect(r.changed).toEqual([{ node: 'n3', from: 1, to: 2 }]);
    expect(Object.values(await headsOf()).filter((v) => v === 2)).toHaveLength(1);
    const id = r.rollout!.id;

    // Nothing reported yet: the tick releases nothing, and again nothing.
    await driver.tick();
    await driver.tick();
    expect((await readRollout(h.db.kysely, id)).released).toBe(1);
    await report(id, 'provisional');
    await driver.tick();
    expect((await readRollout(h.db.kysely, id)).wave_list[0].counts).toMatchObject({ released: 1, provisional: 1, confirmed: 0, outstanding: 0 });
    await report(id, 'applied');
    await driver.tick();
    await driver.tick();
    const view = await readRollout(h.db.kysely, id);
    expect(view.released).toBe(2);
    expect(view.wave_list.map((w) => w.counts.released)).toEqual([1, 5, 0]);
    await report(id, 'applied');
    await driver.tick();
    await report(id, 'applied');
    await driver.tick();
    const done = await readRollout(h.db.kysely, id);
    expect(done.status).toBe('completed');
    expect(done.timeline.map((e) => `${e.type}${e.wave ?? ''}`)).toEqual([
      'rollout_planned',
      'rollout_wave_released0',
      'rollout_wave_released1',
      'rollout_wave_released2',
      'rollout_completed',
    ]);
    expect(done.timeline[4].actor).toBe('rollout-driver');
    expect(Object.values(await headsOf()).every((v) => v === 2)).toBe(true);
    expect((await verifyLedger(h.db.kysely)).ok).toBe(true);

    const projected = {
      list: await listRollouts(h.db.kysely, undefined, 10),
      nodes: await h.db.kysely.selectFrom('rollout_nodes').selectAll().orderBy('node').execute(),
    };
    await rebuildProjections(h.db.kysely);
    expect({
      list: await listRollouts(h.db.kysely, undefined, 10),
      nodes: await h.db.kysely.selectFrom('rollout_nodes').selectAll().orderBy('node').execute(),
    }).toEqual(projected);
  });

  it('a nudge (a recorded outcome) or a bake ending opens a gate at once, without waiting for the tick (an hour here)', async () => {
    const r = await h.publish(tree('v2'), { rollout: { canary: ['n3'], waves: [50, 100], bake_seconds: 1 } });
    const id = r.rollout!.id;
    const released = async () => (await readRollout(h.db.kysely, id)).released;
    const within = async (ms: number, n: number) => {
      for (const until = Date.now() + ms; Date.now() < until; await new Promise((res) => setTimeout(res, 20))) if ((await released()) === n) return true;
      return false;
    };
    await driver.tick();
    await report(id, 'applied');
    driver.nudge();
    // Confirmed, but baking for a second: not yet; the bake's end releases it with no tick and no report.
    expect(await within(500, 2)).toBe(false);
    expect(await within(2_000, 2)).toBe(true);
    await report(id, 'applied');
    driver.nudge();
    expect(await within(3_000, 3)).toBe(true);
  });

  it('halts on a failure over budget and rolls the released nodes back as new versions; a publish cutting across an active rollout is refused, changing nothing', async () => {
    const r = await h.publish(tree('v2'), { rollout: { canary: ['n0', 'n1'], waves: [100], failure_budget: { count: 0 } } });
    const id = r.rollout!.id;
    const head = await h.head();
    await expect(h.publish({ n5: { 'flor.json': 'other' } })).rejects.toThrow(expect.objectContaining({ code: 'rollout_in_progress' }));
    expect(await h.head()).toEqual(head);

    await report(id, 'applied', (n) => n === 'n0');
    await report(id, 'failed', (n) => n === 'n1');
    await driver.tick();
    const view = await readRollout(h.db.kysely, id);
    expect(view).toMatchObject({ status: 'halted', reason: expect.stringContaining('canary: 1 of 2') });
    const heads = await headsOf();
    expect([heads.n0, heads.n1, heads.n5]).toEqual([3, 3, 1]);
    const restored = await h.db.kysely
      .selectFrom('node_versions')
      .select(['node', 'version', 'set_digest'])
      .where('version', 'in', [1, 3])
      .where('node', 'in', ['n0', 'n1'])
      .orderBy('node')
      .orderBy('version')
      .execute();
    expect(restored[0].set_digest).toBe(restored[1].set_digest);
    // The rollout is over: the same publish now goes out whole.
    expect((await h.publish({ n5: { 'flor.json': 'other' } })).changed).toEqual([{ node: 'n5', from: 1, to: 2 }]);
  });

  it('operator actions: pause holds an open gate, promote releases the next wave, abort rolls back all released; each recorded with who', async () => {
    const r = await h.publish(tree('v2'), { rollout: { waves: [20, 60, 100], bake_seconds: 3600 } });
    const id = r.rollout!.id;
    const act = (action: 'pause' | 'resume' | 'promote' | 'abort') =>
      h.writer.write({ actor: 'alice' }, { type: 'rollout_step', rollout: id.slice(0, 8), action, now: new Date() });
    await h.writer.write({ actor: 'alice' }, { type: 'rollout_step', rollout: id, action: 'pause', message: 'lunch', now: new Date() });
    expect(await readRollout(h.db.kysely, id)).toMatchObject({ status: 'paused', reason: 'lunch' });
    await expect(act('pause')).rejects.toThrow(DomainError);
    await act('promote');
    await act('resume');
    const view = await readRollout(h.db.kysely, id);
    expect(view).toMatchObject({ status: 'running', released: 2, reason: null });
    const released = NODES.length;
    await act('promote');
    await expect(act('promote')).rejects.toThrow(
      expect.objectContaining({ code: 'rollout_state', message: expect.stringContaining('every wave is released') }),
    );
    await act('abort');
    const aborted = await readRollout(h.db.kysely, id);
    expect(aborted.status).toBe('aborted');
    expect(aborted.timeline.map((e) => `${e.type}:${e.actor}`)).toEqual([
      'rollout_planned:tester',
      'rollout_wave_released:tester',
      'rollout_paused:alice',
      'rollout_wave_released:alice',
      'rollout_resumed:alice',
      'rollout_wave_released:alice',
      'rollout_aborted:alice',
    ]);
    expect(Object.values(await headsOf()).filter((v) => v === 3)).toHaveLength(released);
    expect(Object.values(await headsOf()).filter((v) => v === 1)).toHaveLength(NODES.length - released);
  });

  it('gives a released node silent past its window its previous set back as a new version, by itself at the deadline; one that confirmed keeps its version', async () => {
    // Each node's own window, as the rete compiles it into agent.json: one second.
    const agentJson = JSON.stringify({ coordinator: 'https://coordinator.example', sync: { poll_interval: 60, splay: 0, confirm_within: 1 } });
    const windowed = (marker: string) => Object.fromEntries(NODES.map((n) => [n, { 'flor.json': `${n} ${marker}`, 'agent.json': agentJson }]));
    await h.publish(windowed('v2'));
    const r = await h.publish(windowed('v3'), { rollout: { canary: ['n0', 'n1', 'n2'], waves: [100] } });
    const id = r.rollout!.id;
    expect(r.changed.map((c) => c.node)).toEqual(['n0', 'n1', 'n2']);
    await report(id, 'applied', (n) => n === 'n0');
    await report(id, 'provisional', (n) => n === 'n1');
    // n2 is silent. Within its window nothing happens; the tick (an hour here) never comes: the deadline does.
    await driver.tick();
    expect((await headsOf()).n2).toBe(3);
    await report(id, 'applied', (n) => n === 'n1');
    const expired = async () => (await readRollout(h.db.kysely, id)).wave_list[0].counts.expired;
    for (const until = Date.now() + 5_000; Date.now() < until && (await expired()) === 0;) await new Promise((res) => setTimeout(res, 50));

    const heads = await headsOf();
    expect([heads.n0, heads.n1, heads.n2]).toEqual([3, 3, 4]);
    // An expired node is not a confirmed one: the canary's gate (every node confirmed) stays shut.
    expect(NODES.slice(3).map((n) => heads[n])).toEqual(NODES.slice(3).map(() => 2));
    expect((await readRollout(h.db.kysely, id)).released).toBe(1);
    const sets = await h.db.kysely.selectFrom('node_versions').select(['version', 'set_digest']).where('node', '=', 'n2').orderBy('version').execute();
    expect(sets.map((v) => v.version)).toEqual([1, 2, 3, 4]);
    expect(sets[3].set_digest).toBe(sets[1].set_digest);
    const view = await readRollout(h.db.kysely, id);
    expect(view.wave_list[0].counts).toMatchObject({ released: 3, confirmed: 2, expired: 1, outstanding: 0, failed: 0 });
    expect(view.timeline.at(-1)).toMatchObject({
      type: 'rollout_nodes_expired',
      actor: 'rollout-driver',
      nodes: 1,
      reason: expect.stringContaining('not confirmed within their confirmation window'),
    });
    const record = await h.db.kysely
      .selectFrom('publishes')
      .select(['kind', 'message'])
      .where('publish_id', '=', view.timeline.at(-1)!.publish_id!)
      .executeTakeFirstOrThrow();
    expect(record).toMatchObject({ kind: 'rollback', message: expect.stringMatching(/unconfirmed, released nodes back to their previous sets: .*\(n2\)$/) });

    // Looked at again: nothing more. Its revert reported late appends nothing either (the head moved on).
    const position = (await h.head()).position;
    await driver.tick();
    await h.writer.write(
      { actor: 'node:n2' },
      {
        type: 'rollback_node',
        node: 'n2',
        toVersion: 2,
        message: 'n2 reverted',
        allowIneligible: ['n2'],
        reverted: { version: 3, reason: 'coordinator not reached after activation' },
      },
    );
    expect((await h.head()).position).toBe(position);
    expect((await verifyLedger(h.db.kysely)).ok).toBe(true);
    const projected = await h.db.kysely.selectFrom('rollout_nodes').selectAll().orderBy('node').execute();
    expect(projected.find((n) => n.node === 'n2')!.expired_at).not.toBeNull();
    await rebuildProjections(h.db.kysely);
    expect(await h.db.kysely.selectFrom('rollout_nodes').selectAll().orderBy('node').execute()).toEqual(projected);
  });

  it('never expires a node whose set has no confirmation window: it stays outstanding', async () => {
    const r = await h.publish(tree('v2'), { rollout: { canary: ['n0'], waves: [100] } });
    await new Promise((res) => setTimeout(res, 1_200));
    await driver.tick();
    expect((await headsOf()).n0).toBe(2);
    expect((await readRollout(h.db.kysely, r.rollout!.id)).wave_list[0].counts).toMatchObject({ released: 1, outstanding: 1, expired: 0 });
  });
});
