import { duration, percent } from './format.js';
import {
  actionsFor,
  currentWave,
  statusReason,
  eventText,
  gateText,
  planFacts,
  rolloutHasPublish,
  rolloutNamedIn,
  segments,
  waveOfPublish,
} from './rollout-view.js';
import type { RolloutView } from './types.js';

const ID = '1a2b3c4d-0000-4000-8000-000000000001';
const WAVE1 = '9f8e7d6c-0000-4000-8000-000000000002';
const T0 = '2030-01-01T10:00:00.000Z';

/** A rollout of 5 nodes: canary web-1 released and outstanding, waves 1 and 2 not yet released. */
function view(over: Partial<RolloutView> = {}): RolloutView {
  return {
    id: ID,
    publish_id: ID,
    message: 'open port for metrics',
    actor: 'ana',
    status: 'running',
    reason: null,
    created_at: T0,
    updated_at: T0,
    nodes: 5,
    waves: 3,
    released: 1,
    plan: { canary: ['web-1'], waves: [50, 100], bake_seconds: 600, failure_budget: { count: 1 }, confirm_share: 0.5, on_halt: 'hold' },
    wave_list: [
      {
        index: 0,
        name: 'canary',
        released_at: T0,
        bakes_until: '2030-01-01T10:10:00.000Z',
        counts: { nodes: 1, released: 1, confirmed: 0, provisional: 0, failed: 0, outstanding: 1 },
      },
      {
        index: 1,
        name: 'wave 1',
        released_at: null,
        bakes_until: null,
        counts: { nodes: 2, released: 0, confirmed: 0, provisional: 0, failed: 0, outstanding: 0 },
      },
      {
        index: 2,
        name: 'wave 2',
        released_at: null,
        bakes_until: null,
        counts: { nodes: 2, released: 0, confirmed: 0, provisional: 0, failed: 0, outstanding: 0 },
      },
    ],
    timeline: [
      { position: 10, type: 'rollout_planned', actor: 'ana', recorded_at: T0, publish_id: ID },
      { position: 11, type: 'rollout_wave_released', actor: 'ana', recorded_at: T0, wave: 0, publish_id: ID },
    ],
    ...over,
  };
}

describe('console: rollout actions', () => {
  it('offers what the coordinator would accept: pause or resume, promote while a wave is left, abort while active', () => {
    expect(actionsFor({ status: 'running', released: 1, waves: 3 })).toEqual(['pause', 'promote', 'abort']);
    expect(actionsFor({ status: 'paused', released: 1, waves: 3 })).toEqual(['resume', 'promote', 'abort']);
    expect(actionsFor({ status: 'running', released: 3, waves: 3 })).toEqual(['pause', 'abort']);
    for (const status of ['halted', 'aborted', 'completed', 'superseded'] as const) expect(actionsFor({ status, released: 1, waves: 3 })).toEqual([]);
  });

  it('shows a reason beside every status but running, where it is only the last note given', () => {
    expect(statusReason({ status: 'paused', reason: 'checking by hand' })).toBe('checking by hand');
    expect(statusReason({ status: 'running', reason: 'checking by hand' })).toBeNull();
    expect(statusReason({ status: 'halted', reason: 'canary: 1 of 1 node(s) failed' })).toBe('canary: 1 of 1 node(s) failed');
  });

  it('highlights the last released wave, none before the first release or after completion', () => {
    expect(currentWave({ status: 'running', released: 1 })).toBe(0);
    expect(currentWave({ status: 'halted', released: 2 })).toBe(1);
    expect(currentWave({ status: 'running', released: 0 })).toBeNull();
    expect(currentWave({ status: 'completed', released: 3 })).toBeNull();
  });
});

describe('console: a wave as a stacked bar', () => {
  it('splits a released wave by what its nodes reported, skipping empty segments', () => {
    const w = { released_at: T0, counts: { nodes: 10, released: 9, confirmed: 4, provisional: 2, failed: 1, outstanding: 2 } };
    expect(segments(w).map((s) => `${s.kind}:${s.count}:${s.label}`)).toEqual([
      'confirmed:4:4 confirmed',
      'provisional:2:2 provisional',
      'outstanding:2:2 outstanding',
      'failed:1:1 failed',
      'skipped:1:1 skipped',
    ]);
    // Every node is in exactly one segment.
    expect(segments(w).reduce((n, s) => n + s.count, 0)).toBe(10);
  });

  it('shows a wave not yet released as not released, whole', () => {
    expect(segments({ released_at: null, counts: { nodes: 2, released: 0, confirmed: 0, provisional: 0, failed: 0, outstanding: 0 } })).toEqual([
      { kind: 'unreleased', count: 2, label: '2 not released' },
    ]);
  });
});

describe('console: the gate', () => {
  const now = Date.parse('2030-01-01T10:05:00.000Z');

  it('names the confirmations the current wave still needs, as the driver counts them', () => {
    expect(gateText(view(), now)).toBe('canary: 0 of 1 confirmation(s) needed before wave 1 (2 node(s)) is released.');
  });

  it('names the bake once confirmed, then an open gate', () => {
    const confirmed = view();
    confirmed.wave_list[0].counts = { ...confirmed.wave_list[0].counts, confirmed: 1, outstanding: 0 };
    expect(gateText(confirmed, now)).toMatch(/^canary: confirmed; baking until .* before wave 1 \(2 node\(s\)\) is released\.$/);
    expect(gateText(confirmed, Date.parse('2030-01-01T10:11:00.000Z'))).toBe(
      "canary: its gate is open; wave 1 (2 node(s)) is released on the coordinator's next tick.",
    );
  });

  it('says the last wave completes the rollout, a paused one waits, and a finished one has no gate', () => {
    const last = view({ released: 3 });
    last.wave_list[2] = {
      ...last.wave_list[2],
      released_at: T0,
      bakes_until: '2030-01-01T10:00:00.000Z',
      counts: { nodes: 2, released: 2, confirmed: 1, provisional: 1, failed: 0, outstanding: 0 },
    };
    expect(gateText(last, now)).toBe("wave 2: its gate is open; the rollout completes on the coordinator's next tick.");
    last.wave_list[2].counts = { ...last.wave_list[2].counts, confirmed: 0, provisional: 2 };
    expect(gateText(last, now)).toBe('wave 2: 0 of 1 confirmation(s) needed before the rollout completes.');
    expect(gateText(view({ status: 'paused' }), now)).toMatch(/^Paused/);
    expect(gateText(view({ status: 'aborted' }), now)).toBeNull();
  });
});

describe('console: plan and timeline wording', () => {
  it('states the plan as an operator reads it', () => {
    expect(planFacts(view())).toEqual({
      canary: 'web-1',
      waves: '50 %, 100 % of the nodes after the canary (cumulative)',
      bake: "10m after each wave's release",
      budget: '1 failed node(s) a wave',
      confirm: "50 % of a wave's released nodes",
      onHalt: 'hold: released nodes keep the change',
    });
    const other = planFacts(
      view({ plan: { canary: [], waves: [100], bake_seconds: 0, failure_budget: { share: 0.05 }, confirm_share: 1, on_halt: 'rollback' } }),
    );
    expect(other).toMatchObject({
      canary: 'none',
      waves: '100 % of the changed nodes (cumulative)',
      bake: 'none',
      budget: "5 % of a wave's released nodes",
      onHalt: 'roll the released nodes back to their previous sets',
    });
    const many = planFacts(view({ plan: { ...view().plan, canary: Array.from({ length: 25 }, (_, i) => `n${i}`) } }));
    expect(many.canary).toMatch(/^n0, n1, .*, n19 and 5 more$/);
  });

  it('words each event, naming the wave a release released', () => {
    const waves = view().wave_list;
    expect(eventText({ type: 'rollout_wave_released', wave: 1 }, waves)).toBe('released wave 1');
    expect(eventText({ type: 'rollout_wave_released', wave: 0 }, waves)).toBe('released canary');
    expect(eventText({ type: 'rollout_paused' }, waves)).toBe('paused');
    expect(eventText({ type: 'rollout_something_new' }, waves)).toBe('rollout_something_new');
  });

  it('formats durations and shares', () => {
    expect([duration(0), duration(45), duration(600), duration(5400), duration(7 * 86_400 + 1)]).toEqual(['none', '45s', '10m', '1h 30m', '7d 1s']);
    expect([percent(1), percent(0.5), percent(0.125), percent(1 / 3)]).toEqual(['100 %', '50 %', '12.5 %', '33.3 %']);
  });
});

describe("console: a publish's rollout", () => {
  it('reads the rollout a wave release or a rollback names, and nothing from other messages', () => {
    expect(rolloutNamedIn('open port for metrics [rollout 1a2b3c4d: canary of 3]')).toBe('1a2b3c4d');
    expect(rolloutNamedIn('a [b] message [rollout 1a2b3c4d: wave 2 of 3]')).toBe('1a2b3c4d');
    expect(rolloutNamedIn('rollout 1a2b3c4d aborted, released nodes back to their previous sets: aborted by an operator')).toBe('1a2b3c4d');
    expect(rolloutNamedIn('rollout 1a2b3c4d halted, released nodes back to their previous sets: canary: 1 of 1 node(s) failed')).toBe('1a2b3c4d');
    expect(rolloutNamedIn('open port for metrics')).toBeNull();
    expect(rolloutNamedIn('[rollout 1a2b3c4d: canary of 3] then more words')).toBeNull();
    expect(rolloutNamedIn('[rollout XYZ: canary of 3]')).toBeNull();
  });

  it('links only when the rollout lists the publish, and says which wave it released', () => {
    const v = view({
      released: 2,
      timeline: [...view().timeline, { position: 12, type: 'rollout_wave_released', actor: 'bo', recorded_at: T0, wave: 1, publish_id: WAVE1 }],
    });
    expect(rolloutHasPublish(v, ID)).toBe(true);
    expect(rolloutHasPublish(v, WAVE1)).toBe(true);
    expect(rolloutHasPublish(v, '00000000-0000-4000-8000-000000000003')).toBe(false);
    expect(waveOfPublish(v, ID)).toBe('canary of 3');
    expect(waveOfPublish(v, WAVE1)).toBe('wave 1 of 3');
    const rolledBack = view({
      status: 'aborted',
      timeline: [
        ...view().timeline,
        { position: 13, type: 'rollout_aborted', actor: 'bo', recorded_at: T0, reason: 'aborted by an operator', publish_id: WAVE1 },
      ],
    });
    expect(rolloutHasPublish(rolledBack, WAVE1)).toBe(true);
    expect(waveOfPublish(rolledBack, WAVE1)).toBeNull();
  });
});
