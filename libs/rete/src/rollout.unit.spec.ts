import { formatDiagnostic, type Diagnostic } from './diagnostics.js';
import { EXAMPLE_RETE } from './example.js';
import type { Source } from './parse-file.js';
import { validateRete } from './validate.js';
import { compileRete } from './compile.js';
import { compiledSetDigests } from './set-digests.js';

const example = (): Source[] => Object.entries(EXAMPLE_RETE).map(([file, text]) => ({ file, text }));
const withRollout = (block: string): Source[] => [...example(), { file: 'rollout.yaml', text: `rollout:\n${block}` }];
const brief = (d: Diagnostic) => `${d.file}:${d.line}:${d.col} ${d.path} ${d.code}`;
const errorsOf = (sources: Source[]) =>
  validateRete(sources)
    .diagnostics.filter((d) => d.severity === 'error')
    .map(brief);

describe('the rete rollout block', () => {
  it('maps every field to the plan a publish carries, the canary resolved to node names', () => {
    const v = validateRete(
      withRollout('  canary: { tags: [staff, web] }\n  waves: [10, 50%, 100]\n  bake: 1h30m\n  failure_budget: 5%\n  confirm_share: 0.9\n  on_halt: hold\n'),
    );
    expect(v.diagnostics).toEqual([]);
    expect(v.rete?.rollout).toEqual({
      plan: { canary: ['alpha', 'laptop'], waves: [10, 50, 100], bake_seconds: 5400, failure_budget: { share: 0.05 }, confirm_share: 0.9, on_halt: 'hold' },
      place: { file: 'rollout.yaml', line: 2, col: 3 },
    });
  });

  it('carries only the fields it sets, so flags and the plan defaults fill the rest', () => {
    const v = validateRete(withRollout('  canary: { groups: [ops] }\n  failure_budget: 2\n'));
    expect(v.rete?.rollout?.plan).toEqual({ canary: ['beta', 'laptop'], failure_budget: { count: 2 } });
    // A group used only as a canary is in use.
    expect(v.diagnostics).toEqual([]);
    expect(validateRete(withRollout('  canary: { nodes: [beta] }\n')).rete?.rollout?.plan).toEqual({ canary: ['beta'] });
  });

  it("validates as the example rete's commented-out block once uncommented", () => {
    const sources = example().map((s) => (s.file === 'rete.yaml' && 'text' in s ? { ...s, text: s.text.replace(/^# (rollout: .*)$/m, '$1') } : s));
    expect(sources.find((s) => s.file === 'rete.yaml')).toMatchObject({ text: expect.stringMatching(/^rollout: /m) });
    const v = validateRete(sources);
    expect(v.diagnostics).toEqual([]);
    expect(v.rete?.rollout?.plan).toEqual({ canary: ['laptop'], waves: [50, 100], bake_seconds: 600 });
  });

  it('leaves the rete without a plan when there is no block', () => {
    expect(validateRete(example()).rete?.rollout).toBeUndefined();
  });

  it('reports each bad field at its place, with its path and code', () => {
    const sources = withRollout(
      ['  canary: { tags: [web] }', '  waves: [50, 20, 90]', '  bake: 300ms', '  failure_budget: lots', '  confirm_share: 90', '  on_halt: panic', ''].join(
        '\n',
      ),
    );
    expect(validateRete(sources).diagnostics.map(formatDiagnostic)).toEqual([
      'rollout.yaml:3:15: rollout.waves[1]: the shares must increase: 20% does not come after 50% [bad_waves]',
      'rollout.yaml:3:19: rollout.waves[2]: the last wave must reach 100%, every remaining node, not 90% [bad_waves]',
      'rollout.yaml:4:9: rollout.bake: must be a duration such as 30s, 5m, 1h or 1h30m (got "300ms") [bad_duration]',
      'rollout.yaml:5:19: rollout.failure_budget: must be a count of nodes such as 2, or a share such as "5%" or 0.05 (got "lots") [bad_share]',
      'rollout.yaml:6:18: rollout.confirm_share: must be a share: a percent such as "90%" or a fraction from 0 to 1 such as 0.9; write "90%" for 90 percent [bad_share]',
      'rollout.yaml:7:12: rollout.on_halt: must be one of "rollback", "hold", not the string "panic" [invalid_value]',
    ]);
  });

  it('refuses an unknown canary tag, group or node, a selector of two kinds, and an unknown key', () => {
    expect(validateRete(withRollout('  canary: { tags: [nosuch] }\n')).diagnostics.map(formatDiagnostic)).toEqual([
      'rollout.yaml:2:20: rollout.canary.tags[0]: no node carries the tag "nosuch" [unknown_tag]',
    ]);
    expect(errorsOf(withRollout('  canary: { groups: [nobody] }\n'))).toEqual(['rollout.yaml:2:22 rollout.canary.groups[0] unknown_group']);
    expect(errorsOf(withRollout('  canary:\n    nodes: [alpha, gamma]\n'))).toEqual(['rollout.yaml:3:20 rollout.canary.nodes[1] unknown_node']);
    expect(errorsOf(withRollout('  canary: { nodes: [alpha], tags: [web] }\n'))).toEqual(['rollout.yaml:2:11 rollout.canary bad_selector']);
    expect(validateRete(withRollout('  wave: [100]\n')).diagnostics.map((d) => `${brief(d)} ${d.message}`)).toEqual([
      'rollout.yaml:2:3 rollout.wave unknown_key unknown key "wave" (did you mean "waves"?)',
    ]);
  });

  it('refuses waves out of range, empty or too many, a bake past a week and a share past 100%', () => {
    expect(errorsOf(withRollout('  waves: [0, 101%, 100]\n'))).toEqual([
      'rollout.yaml:2:11 rollout.waves[0] bad_waves',
      'rollout.yaml:2:14 rollout.waves[1] bad_waves',
    ]);
    expect(errorsOf(withRollout('  waves: []\n'))).toEqual(['rollout.yaml:2:10 rollout.waves invalid_value']);
    expect(errorsOf(withRollout(`  waves: [${Array.from({ length: 21 }, (_, i) => i + 80).join(', ')}]\n`))).toEqual([
      'rollout.yaml:2:10 rollout.waves bad_waves',
    ]);
    expect(errorsOf(withRollout('  bake: 8d\n'))).toEqual(['rollout.yaml:2:9 rollout.bake bad_duration']);
    expect(errorsOf(withRollout('  confirm_share: 120%\n  failure_budget: -1\n'))).toEqual([
      'rollout.yaml:2:18 rollout.confirm_share bad_share',
      'rollout.yaml:3:19 rollout.failure_budget bad_share',
    ]);
  });

  it('names both places when two files define it', () => {
    const sources = [...withRollout('  waves: [100]\n'), { file: 'z.yaml', text: 'rollout:\n  bake: 5m\n' }];
    const [d] = validateRete(sources).diagnostics;
    expect(`${brief(d)} ${d.message}`).toBe('z.yaml:2:3 rollout duplicate_name rollout is defined twice: here and at rollout.yaml:2:3');
  });

  it('changes no node set: every set digest is the same with the block as without it', () => {
    const without = validateRete(example()).rete!;
    const withBlock = validateRete(withRollout('  canary: { tags: [web] }\n  waves: [50, 100]\n  bake: 10m\n  on_halt: hold\n')).rete!;
    expect(withBlock.rollout).toBeDefined();
    const a = compileRete(without);
    const b = compileRete(withBlock);
    expect(b).toEqual(a);
    const digests = (tree: typeof a) => [...tree].map(([node, files]) => compiledSetDigests(node, files).set_digest);
    expect(digests(b)).toEqual(digests(a));
  });
});
