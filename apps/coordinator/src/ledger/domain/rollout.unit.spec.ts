import fc from 'fast-check';
import { DomainError } from '../../common/index.js';
import { decide, type ArtifactRef, type LedgerCommand, type NodeSet } from './ledger.decider.js';
import type { LedgerEvent, RecordedRolloutPlan, RolloutEvent } from './ledger.events.js';
import { checkControl, decideStep, evolve, expiredNodes, planWaves, type Control, type RolloutState, type WaveFacts } from './rollout.js';

const sha = (c: string) => c.repeat(64).slice(0, 64);
const OLD = sha('a');
const NEW = sha('b');
const sizes = new Map([
  [OLD, 10],
  [NEW, 20],
]);
const T0 = Date.parse('2026-12-01T10:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);

const PLAN: RecordedRolloutPlan = { canary: [], waves: [100], bake_seconds: 0, failure_budget: { count: 0 }, confirm_share: 1, on_halt: 'rollback' };
const plan = (p: Partial<RecordedRolloutPlan>): RecordedRolloutPlan => ({ ...PLAN, ...p });
const names = (n: number) => Array.from({ length: n }, (_, i) => `n${String(i).padStart(3, '0')}`);

/**
 * A ledger in memory for pure decisions: the heads and node versions its stamps leave, and each
 * rollout's state folded from its events (each recorded at the clock's time).
 */
class Ledger {
  readonly heads = new Map<string, NodeSet>();
  readonly versions = new Map<string, NodeSet>();
  readonly rollouts = new Map<string, RolloutState>();
  readonly stamped: { node: string; version: number; publish: string; content: string }[] = [];
  private n = 0;
  clock = at(0);

  constructor(nodes: readonly string[]) {
    this.apply(decide(publishTree(nodes, OLD), this.heads, { publishId: 'seed' }).events);
    this.stamped.length = 0;
  }

  run(command: LedgerCommand): { events: readonly LedgerEvent[]; publishId: string } {
    const publishId = `p${++this.n}`;
    const events = decide(command, this.heads, { publishId }).events;
    this.apply(events);
    return { events, publishId };
  }

  private apply(events: readonly LedgerEvent[]): void {
    for (const e of events) {
      if (e.type === 'node_set_stamped') {
        const set = { version: e.data.version, setDigest: e.data.set_digest, retired: e.data.retired, artifacts: e.data.artifacts };
        this.heads.set(e.data.node, set);
        this.versions.set(`${e.data.node}@${e.data.version}`, set);
        this.stamped.push({ node: e.data.node, version: e.data.version, publish: e.data.publish_id, content: e.data.artifacts[0]?.sha256 ?? '' });
      } else if (e.type.startsWith('rollout_')) {
        const r = e as RolloutEvent;
        this.rollouts.set(
          r.data.rollout_id,
          evolve(this.rollouts.get(r.data.rollout_id) ?? null, { type: r.type, data: r.data, recorded_at: this.clock.toISOString() } as never),
        );
      }
    }
  }

  /** A step or an action as the writer loads it: facts from `reports`, previous sets from the versions. */
  step(id: string, action: 'step' | Control, reports: ReadonlyMap<string, 'applied' | 'provisional' | 'failed'>): ReturnType<Ledger['run']> {
    const state = this.rollouts.get(id)!;
    const facts: WaveFacts[] = Array.from({ length: state.released }, () => ({ released: 0, confirmed: 0, provisional: 0, failed: 0, expired: 0 }));
    for (const [node, s] of state.stamped) {
      const f = facts[s.wave] as { released: number; confirmed: number; provisional: number; failed: number };
      f.released++;
      const r = reports.get(node);
      if (r === 'applied') f.confirmed++;
      else if (r === 'provisional') f.provisional++;
      else if (r === 'failed') f.failed++;
    }
    const previous = new Map([...state.stamped.keys()].map((node) => [node, this.versions.get(`${node}@${state.targets.get(node)!.from}`)?.artifacts ?? []]));
    return this.run({ type: 'rollout_step', state, action, facts, previous, now: this.clock });
  }

  /** The expiry of `nodes` as the writer loads it: previous sets from the versions. */
  expire(id: string, nodes: readonly string[]): ReturnType<Ledger['run']> {
    const state = this.rollouts.get(id)!;
    const previous = new Map(nodes.map((node) => [node, this.versions.get(`${node}@${state.targets.get(node)?.from ?? 0}`)?.artifacts ?? []]));
    return this.run({ type: 'rollout_expire', state, nodes, reason: 'not confirmed within their window', previous });
  }
}

function publishTree(nodes: readonly string[], content: string, extra: Partial<Extract<LedgerCommand, { type: 'publish_tree' }>> = {}): LedgerCommand {
  return {
    type: 'publish_tree',
    message: 'change',
    prune: false,
    blobSizes: sizes,
    nodes: new Map(nodes.map((n): [string, ArtifactRef[]] => [n, [{ name: 'vertex.toml', sha256: content }]])),
    ineligible: new Map(),
    allowIneligible: new Set(),
    ...extra,
  };
}

const types = (events: readonly LedgerEvent[]) => events.map((e) => e.type);

describe('planWaves', () => {
  it('puts the changed canary nodes first, then cuts the rest at cumulative shares, every node once', () => {
    const nodes = names(20);
    const waves = planWaves('r1', nodes, { canary: ['n003', 'n017', 'absent'], waves: [10, 50, 100] });
    expect(waves[0]).toEqual(['n003', 'n017']);
    expect(waves.map((w) => w.length)).toEqual([2, 2, 7, 9]);
    expect(waves.flat().sort()).toEqual(nodes);
  });

  it('is reproducible from the rollout id and the names, and another id orders the nodes otherwise', () => {
    const nodes = names(50);
    expect(planWaves('r1', [...nodes].reverse(), { canary: [], waves: [20, 100] })).toEqual(planWaves('r1', nodes, { canary: [], waves: [20, 100] }));
    expect(planWaves('r2', nodes, { canary: [], waves: [20, 100] })[0]).not.toEqual(planWaves('r1', nodes, { canary: [], waves: [20, 100] })[0]);
  });

  it('drops empty waves: no canary changed, and a small fleet whose shares round to the same cut', () => {
    expect(planWaves('r1', ['a', 'b'], { canary: ['z'], waves: [10, 20, 100] }).map((w) => w.length)).toEqual([1, 1]);
  });
});

describe('a publish with a rollout plan', () => {
  it('records the whole publish and stamps only the first wave; the other nodes keep their versions', () => {
    const ledger = new Ledger(names(10));
    const { events, publishId } = ledger.run(
      publishTree(names(10), NEW, { rollout: { id: 'r1', plan: plan({ canary: ['n000', 'n001'], waves: [50, 100] }) } }),
    );
    expect(types(events)).toEqual(['rollout_planned', 'rollout_wave_released', 'node_set_stamped', 'node_set_stamped', 'publish_recorded']);
    expect(ledger.stamped.map((s) => s.node)).toEqual(['n000', 'n001']);
    expect(ledger.heads.get('n005')!.version).toBe(1);
    const planned = events[0] as Extract<RolloutEvent, { type: 'rollout_planned' }>;
    expect(planned.data.targets).toHaveLength(10);
    expect(planned.data.publish_id).toBe(publishId);
    expect(ledger.rollouts.get('r1')).toMatchObject({ status: 'running', released: 1 });
  });

  it('refuses a publish that prunes', () => {
    const ledger = new Ledger(names(3));
    expect(() => ledger.run(publishTree(['n000'], NEW, { prune: true, rollout: { id: 'r1', plan: PLAN } }))).toThrow(
      expect.objectContaining({ code: 'invalid_rollout' }),
    );
  });

  it('refuses a publish that changes a node of an active rollout, naming the rollout, and takes one that supersedes it', () => {
    const ledger = new Ledger(names(4));
    ledger.run(publishTree(names(4), NEW, { rollout: { id: 'r1', plan: plan({ canary: ['n000'] }) } }));
    const inRollout = new Map(names(4).map((n) => [n, 'r1']));
    const attempt = () => ledger.run(publishTree(['n002'], sha('c'), { blobSizes: new Map([[sha('c'), 1]]), inRollout }));
    expect(attempt).toThrow(DomainError);
    expect(attempt).toThrow(/rollout r1/);
    const { events } = ledger.run(publishTree(['n002'], sha('c'), { blobSizes: new Map([[sha('c'), 1]]), inRollout, supersede: ledger.rollouts.get('r1')! }));
    expect(types(events)).toEqual(['rollout_superseded', 'node_set_stamped', 'publish_recorded']);
    expect(ledger.rollouts.get('r1')!.status).toBe('superseded');
  });
});

describe('decideStep: given a running rollout, when its nodes report, then', () => {
  const running = (p: Partial<RecordedRolloutPlan>, released = 1, waves = 3): RolloutState => ({
    id: 'r1',
    publishId: 'p1',
    message: 'm',
    plan: plan(p),
    waves: Array.from({ length: waves }, (_, i) => [`w${i}`]),
    targets: new Map(),
    revision: 2,
    status: 'running',
    released,
    releasedAt: Array.from({ length: released }, () => at(0).toISOString()),
    stamped: new Map(),
    reason: null,
  });
  const f = (released: number, confirmed: number, failed = 0, provisional = 0): WaveFacts => ({ released, confirmed, failed, provisional, expired: 0 });

  it('waits while a node is outstanding or provisional: silence is not failure', () => {
    expect(decideStep(running({}), [f(4, 3)], at(60)).kind).toBe('wait');
    expect(decideStep(running({}), [f(4, 3, 0, 1)], at(60)).kind).toBe('wait');
  });
  it('releases the next wave once enough confirmed and the bake time is over', () => {
    expect(decideStep(running({ bake_seconds: 300 }), [f(4, 4)], at(299)).kind).toBe('wait');
    expect(decideStep(running({ bake_seconds: 300 }), [f(4, 4)], at(300))).toEqual({ kind: 'release', wave: 1 });
    expect(decideStep(running({ confirm_share: 0.75 }), [f(4, 3)], at(0))).toEqual({ kind: 'release', wave: 1 });
  });
  it('completes after the last wave passes its gate', () => {
    expect(decideStep(running({}, 3), [f(1, 1), f(1, 1), f(1, 1)], at(0))).toEqual({ kind: 'complete' });
  });
  it('halts when any released wave exceeds its failure budget, by count or by share', () => {
    expect(decideStep(running({ failure_budget: { count: 1 } }), [f(4, 2, 1)], at(0)).kind).toBe('wait');
    expect(decideStep(running({ failure_budget: { count: 1 } }), [f(4, 2, 2)], at(0))).toMatchObject({
      kind: 'halt',
      reason: expect.stringContaining('2 of 4'),
    });
    expect(decideStep(running({ failure_budget: { share: 0.25 }, confirm_share: 0.75 }, 2), [f(1, 1), f(8, 6, 2)], at(0)).kind).toBe('release');
    expect(decideStep(running({ failure_budget: { share: 0.25 } }, 2), [f(1, 1), f(8, 5, 3)], at(0)).kind).toBe('halt');
  });
  it('does nothing by itself while paused or after a halt', () => {
    expect(decideStep({ ...running({}), status: 'paused' }, [f(1, 1)], at(0)).kind).toBe('wait');
    expect(decideStep({ ...running({}), status: 'halted' }, [f(1, 0, 1)], at(0)).kind).toBe('wait');
  });
});

describe('steps and actions through the ledger decider', () => {
  const start = (n: number, p: Partial<RecordedRolloutPlan>) => {
    const ledger = new Ledger(names(n));
    ledger.run(publishTree(names(n), NEW, { rollout: { id: 'r1', plan: plan(p) } }));
    return ledger;
  };
  const confirmedAll = (ledger: Ledger) => new Map([...ledger.rollouts.get('r1')!.stamped.keys()].map((n) => [n, 'applied' as const]));

  it('releases each wave once: a second step on the same facts appends nothing', () => {
    const ledger = start(10, { waves: [20, 100] });
    const first = ledger.step('r1', 'step', confirmedAll(ledger));
    expect(types(first.events)[0]).toBe('rollout_wave_released');
    const again = ledger.step('r1', 'step', new Map());
    expect(again.events).toEqual([]);
    expect(new Set(ledger.stamped.map((s) => s.node)).size).toBe(ledger.stamped.length);
  });

  it('on a failed canary halts and gives the released nodes new versions with their previous content', () => {
    const ledger = start(6, { canary: ['n000'], waves: [100] });
    const { events } = ledger.step('r1', 'step', new Map([['n000', 'failed' as const]]));
    expect(types(events)).toEqual(['rollout_halted', 'node_set_stamped', 'publish_recorded']);
    expect(ledger.heads.get('n000')).toMatchObject({ version: 3, artifacts: [{ sha256: OLD }] });
    expect(ledger.heads.get('n001')!.version).toBe(1);
    expect(ledger.rollouts.get('r1')!.status).toBe('halted');
  });

  it('with on_halt hold, halts and leaves the released nodes as they are', () => {
    const ledger = start(6, { canary: ['n000'], on_halt: 'hold' });
    expect(types(ledger.step('r1', 'step', new Map([['n000', 'failed' as const]])).events)).toEqual(['rollout_halted']);
    expect(ledger.heads.get('n000')!.version).toBe(2);
  });

  it('promote releases the next wave before its gate; abort rolls back every released node; neither applies once halted', () => {
    const ledger = start(10, { canary: ['n000'], waves: [50, 100], bake_seconds: 3600 });
    ledger.step('r1', 'promote', new Map());
    expect(ledger.rollouts.get('r1')!.released).toBe(2);
    const released = [...ledger.rollouts.get('r1')!.stamped.keys()];
    const { events } = ledger.step('r1', 'abort', new Map());
    expect(types(events)[0]).toBe('rollout_aborted');
    for (const node of released) expect(ledger.heads.get(node)!.artifacts[0].sha256).toBe(OLD);
    expect(() => ledger.step('r1', 'promote', new Map())).toThrow(expect.objectContaining({ code: 'rollout_state' }));
  });

  it('pause and resume: a paused rollout releases nothing when its gate opens', () => {
    const ledger = start(10, { waves: [20, 100] });
    ledger.step('r1', 'pause', new Map());
    expect(ledger.step('r1', 'step', confirmedAll(ledger)).events).toEqual([]);
    expect(() => checkControl(ledger.rollouts.get('r1')!, 'pause')).toThrow(/already paused/);
    ledger.step('r1', 'resume', new Map());
    expect(types(ledger.step('r1', 'step', confirmedAll(ledger)).events)[0]).toBe('rollout_wave_released');
  });

  it('skips a node changed by something else before its wave, and never rolls back a node changed since its release', () => {
    const ledger = start(4, { canary: ['n000'], waves: [100] });
    ledger.run({ type: 'retire_node', node: 'n003', message: 'gone' });
    const { events } = ledger.step('r1', 'step', confirmedAll(ledger));
    const released = events[0] as Extract<RolloutEvent, { type: 'rollout_wave_released' }>;
    expect(released.data.skipped).toEqual(['n003']);
    expect(ledger.heads.get('n003')!.retired).toBe(true);
  });
});

describe('expiredNodes: given released nodes not confirmed, when the clock passes, then', () => {
  const released = at(0).toISOString();
  const node = (name: string, windowSeconds: number | null, provisionalAt: string | null = null) => ({
    node: name,
    windowSeconds,
    releasedAt: released,
    provisionalAt,
  });

  it('a node never heard from expires its window plus the grace after its wave was released, not before', () => {
    expect(expiredNodes([node('a', 300)], at(359), 60)).toEqual({ expired: [], next: at(360).getTime() });
    expect(expiredNodes([node('a', 300)], at(360), 60)).toEqual({ expired: ['a'], next: null });
  });

  it('a node that reported the version provisional has its window from that report (its activation)', () => {
    const late = at(200).toISOString();
    expect(expiredNodes([node('a', 300, late)], at(400), 60).expired).toEqual([]);
    expect(expiredNodes([node('a', 300, late)], at(560), 60).expired).toEqual(['a']);
  });

  it('a node without a window never expires; the next deadline is the earliest of the rest', () => {
    const r = expiredNodes([node('none', null), node('b', 600), node('a', 120), node('c', 10)], at(100), 0);
    expect(r).toEqual({ expired: ['c'], next: at(120).getTime() });
  });
});

describe('rollout_expire through the ledger decider', () => {
  it('gives unconfirmed released nodes their previous sets as new versions, records which in the rollout, and leaves the rollout running', () => {
    const ledger = new Ledger(names(6));
    ledger.run(publishTree(names(6), NEW, { rollout: { id: 'r1', plan: plan({ canary: ['n000', 'n001'], waves: [100] }) } }));
    const { events, publishId } = ledger.expire('r1', ['n001']);
    expect(types(events)).toEqual(['rollout_nodes_expired', 'node_set_stamped', 'publish_recorded']);
    const expired = events[0] as Extract<RolloutEvent, { type: 'rollout_nodes_expired' }>;
    expect(expired.data).toMatchObject({ rollout_id: 'r1', publish_id: publishId, nodes: [{ node: 'n001', from: 2, to: 3 }] });
    expect(ledger.heads.get('n001')).toMatchObject({ version: 3, artifacts: [{ sha256: OLD }] });
    expect(ledger.heads.get('n000')).toMatchObject({ version: 2, artifacts: [{ sha256: NEW }] });
    const record = events[2] as Extract<LedgerEvent, { type: 'publish_recorded' }>;
    expect(record.data).toMatchObject({ kind: 'rollback' });
    expect(record.data.message).toMatch(/^rollout r1 unconfirmed, released nodes back to their previous sets: not confirmed within their window \(n001\)$/);
    expect(ledger.rollouts.get('r1')).toMatchObject({ status: 'running', released: 1 });

    // Expired once: asked again, it appends nothing; a halt's rollback later leaves it alone too.
    expect(ledger.expire('r1', ['n001']).events).toEqual([]);
    const halt = ledger.step('r1', 'abort', new Map());
    const rolledBack = halt.events.filter((e) => e.type === 'node_set_stamped').map((e) => (e as Extract<LedgerEvent, { type: 'node_set_stamped' }>).data.node);
    expect(rolledBack).toEqual(['n000']);
  });

  it("never touches a node that is not the rollout's or not released, or one changed since its release", () => {
    const ledger = new Ledger(names(6));
    ledger.run(publishTree(names(6), NEW, { rollout: { id: 'r1', plan: plan({ canary: ['n000'], waves: [100] }) } }));
    ledger.run({
      type: 'rollback_node',
      node: 'n000',
      toVersion: 1,
      message: 'by hand',
      target: ledger.versions.get('n000@1'),
      ineligible: new Map(),
      allowIneligible: new Set(),
    });
    expect(ledger.expire('r1', ['n000', 'n003', 'ghost']).events).toEqual([]);
    expect(ledger.heads.get('n003')!.version).toBe(1);
  });
});

describe('property: no sequence of reports, ticks and actions', () => {
  it('releases a node outside its wave, a wave twice, or anything after a halt', () => {
    const action = fc.oneof(
      fc.record({
        kind: fc.constant('report' as const),
        node: fc.integer({ min: 0, max: 11 }),
        result: fc.constantFrom('applied' as const, 'provisional' as const, 'failed' as const),
      }),
      fc.record({ kind: fc.constant('tick' as const), seconds: fc.integer({ min: 0, max: 120 }) }),
      fc.record({ kind: fc.constant('control' as const), action: fc.constantFrom<Control>('pause', 'resume', 'promote', 'abort') }),
    );
    fc.assert(
      fc.property(
        fc.record({
          budget: fc.integer({ min: 0, max: 2 }),
          bake: fc.integer({ min: 0, max: 60 }),
          canary: fc.subarray(names(12), { maxLength: 3 }),
          onHalt: fc.constantFrom('rollback' as const, 'hold' as const),
        }),
        fc.array(action, { maxLength: 40 }),
        (p, actions) => {
          const ledger = new Ledger(names(12));
          ledger.run(
            publishTree(names(12), NEW, {
              rollout: {
                id: 'r1',
                plan: plan({ canary: p.canary, waves: [25, 60, 100], bake_seconds: p.bake, failure_budget: { count: p.budget }, on_halt: p.onHalt }),
              },
            }),
          );
          const reports = new Map<string, 'applied' | 'provisional' | 'failed'>();
          const waves = ledger.rollouts.get('r1')!.waves;
          const releases: number[] = [0];
          let endedAt = -1;
          for (const a of actions) {
            const before = ledger.stamped.length;
            if (a.kind === 'report') reports.set(names(12)[a.node], a.result);
            else if (a.kind === 'tick') {
              ledger.clock = new Date(ledger.clock.getTime() + a.seconds * 1000);
              ledger.step('r1', 'step', reports);
            } else {
              try {
                ledger.step('r1', a.action, reports);
              } catch (err) {
                if (!(err instanceof DomainError && err.code === 'rollout_state')) throw err;
              }
            }
            const state = ledger.rollouts.get('r1')!;
            if (state.released > releases.length) releases.push(state.released - 1);
            for (const s of ledger.stamped.slice(before)) {
              if (s.content === NEW) {
                // A node gets the new content only in its wave's release, and never after the rollout ended.
                expect(endedAt).toBe(-1);
                expect(waves[state.released - 1]).toContain(s.node);
              } else {
                // Old content again only by a halt's rollback.
                expect(['halted', 'aborted']).toContain(state.status);
              }
            }
            if (endedAt === -1 && !['running', 'paused'].includes(state.status)) endedAt = ledger.stamped.length;
          }
          expect(new Set(releases).size).toBe(releases.length);
          const newStamps = ledger.stamped.filter((s) => s.content === NEW).map((s) => s.node);
          expect(new Set(newStamps).size).toBe(newStamps.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});
