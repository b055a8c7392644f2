import { EXAMPLE_RETE, validateRete, type Rete } from '#rete';
import { RetectlError } from './errors.js';
import { refusePruneInWaves, resolveCanary, rolloutPlanLine, rolloutPlanOf } from './rollout-plan.js';

const reteWith = (block?: string): Rete => {
  const sources = Object.entries(EXAMPLE_RETE).map(([file, text]) => ({ file, text }));
  const { rete } = validateRete(block === undefined ? sources : [...sources, { file: 'rollout.yaml', text: `rollout:\n${block}` }]);
  if (!rete) throw new TypeError('the test rete does not validate');
  return rete;
};
const codeOf = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e instanceof RetectlError ? e.code : 'not a RetectlError';
  }
  return 'no error';
};

describe('the rollout plan a publish uses', () => {
  const block = reteWith('  canary: { tags: [staff] }\n  waves: [50, 100]\n  bake: 5m\n  on_halt: hold\n');

  it('is the rete block when no flag is given', () => {
    expect(rolloutPlanOf(block, {})).toEqual({
      plan: { canary: ['laptop'], waves: [50, 100], bake_seconds: 300, on_halt: 'hold' },
      block: { file: 'rollout.yaml', line: 2, col: 3 },
      flags: [],
    });
    expect(rolloutPlanLine(rolloutPlanOf(block, {}), block)).toBe(
      "rollout plan: canary laptop, then waves 50%, 100%; bake 5m; failure budget 0 nodes; confirm 100%; on halt hold (the rete's rollout block at rollout.yaml:2:3)",
    );
  });

  it('takes each field a flag gives from the flag, the others from the block', () => {
    const chosen = rolloutPlanOf(block, { bake: '90s', canary: 'group:ops', failureBudget: '10%' });
    expect(chosen?.plan).toEqual({ canary: ['beta', 'laptop'], waves: [50, 100], bake_seconds: 90, failure_budget: { share: 0.1 }, on_halt: 'hold' });
    expect(rolloutPlanLine(chosen, block)).toBe(
      "rollout plan: canary beta, laptop, then waves 50%, 100%; bake 1m30s; failure budget 10%; confirm 100%; on halt hold (the rete's rollout block at rollout.yaml:2:3; --canary, --bake, --failure-budget from the command line)",
    );
  });

  it('is the flags alone without a block, and none without either', () => {
    const plain = reteWith();
    expect(rolloutPlanOf(plain, {})).toBeUndefined();
    expect(rolloutPlanOf(plain, { rollout: true })).toBeUndefined();
    expect(rolloutPlanOf(plain, { waves: '10,50' })).toEqual({ plan: { waves: [10, 50, 100] }, flags: ['--waves'] });
    expect(rolloutPlanLine(rolloutPlanOf(plain, {}), plain)).toBeUndefined();
  });

  it('is none with --no-rollout, which says it sets the block aside and joins no other rollout flag', () => {
    expect(rolloutPlanOf(block, { rollout: false })).toBeUndefined();
    expect(rolloutPlanLine(undefined, block)).toBe(
      "rollout plan: none, every changed node at once (--no-rollout sets aside the rete's rollout block at rollout.yaml:2:3)",
    );
    expect(codeOf(() => rolloutPlanOf(block, { rollout: false, bake: '1m' }))).toBe('usage');
  });

  it('refuses --prune with a plan before anything is sent, and lets it through at once', () => {
    expect(codeOf(() => refusePruneInWaves(rolloutPlanOf(block, {}), true))).toBe('usage');
    expect(codeOf(() => refusePruneInWaves(rolloutPlanOf(reteWith(), { waves: '50' }), true))).toBe('usage');
    expect(codeOf(() => refusePruneInWaves(rolloutPlanOf(block, { rollout: false }), true))).toBe('no error');
    expect(codeOf(() => refusePruneInWaves(rolloutPlanOf(block, {}), false))).toBe('no error');
  });

  it('resolves a --canary selector as the rete resolves its selectors, refusing unknown names', () => {
    expect(resolveCanary(block, 'tag:web,staff')).toEqual(['alpha', 'laptop']);
    expect(resolveCanary(block, 'beta')).toEqual(['beta']);
    expect(codeOf(() => resolveCanary(block, 'node:nosuch'))).toBe('usage');
    expect(codeOf(() => resolveCanary(block, 'role:web'))).toBe('usage');
  });
});
