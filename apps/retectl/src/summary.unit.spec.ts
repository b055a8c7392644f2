import type { Plan, PlanEntry } from '#rete';
import { bounded, formatPlan, formatPublish, LIST_LIMIT, publishResourcesLine, resourcesTouched } from './summary.js';

const plan = (entries: PlanEntry[]): Plan => ({ entries, changes: entries.some((e) => e.action !== 'unchanged' && e.action !== 'absent'), ineligible: [] });
const changed = (n: number): PlanEntry[] =>
  Array.from({ length: n }, (_, i) => ({ node: `n${String(i).padStart(5, '0')}`, action: 'changed', version: 1, artifacts: ['flor.json'] }));
const unchanged = (n: number): PlanEntry[] => Array.from({ length: n }, (_, i) => ({ node: `u${i}`, action: 'unchanged', version: 2 }));

describe('bounded lists', () => {
  it('lists up to the limit, then counts the rest and names --all', () => {
    expect(bounded([1, 2, 3], (n) => [`${n}`], { limit: 2 })).toEqual(['1', '2', '… and 1 more; --all to list them']);
    expect(bounded([1, 2], (n) => [`${n}`], { limit: 2 })).toEqual(['1', '2']);
    expect(bounded([1, 2, 3], (n) => [`${n}`], { limit: 2, all: true })).toEqual(['1', '2', '3']);
  });
});

describe('formatPlan', () => {
  it('puts the summary first and leaves unchanged nodes to the count', () => {
    expect(formatPlan(plan([...changed(2), ...unchanged(3)]))).toEqual([
      'plan: 0 new, 2 changed, 0 retired, 3 unchanged',
      '~ n00000: changed (flor.json) at version 1',
      '~ n00001: changed (flor.json) at version 1',
    ]);
  });

  it('lists every node, unchanged ones too, with --all', () => {
    expect(formatPlan(plan([...changed(1), ...unchanged(1)]), { all: true })).toEqual([
      'plan: 0 new, 1 changed, 0 retired, 1 unchanged',
      '~ n00000: changed (flor.json) at version 1',
      '  u0: unchanged at version 2',
    ]);
  });

  it('says when there is nothing to publish, and counts nodes kept outside the tree', () => {
    expect(formatPlan(plan([...unchanged(2), { node: 'gone', action: 'absent', version: 4 }]))).toEqual([
      'plan: 0 new, 0 changed, 0 retired, 2 unchanged, 1 kept outside the tree: nothing to publish',
      '! gone: not in the tree, kept at version 4 (--prune would retire it)',
    ]);
  });

  it('prints a bounded number of lines for 10,000 changed nodes', () => {
    const lines = formatPlan(plan([...changed(10_000), ...unchanged(5_000)]));
    expect(lines).toHaveLength(1 + LIST_LIMIT + 1);
    expect(lines[0]).toBe('plan: 0 new, 10000 changed, 0 retired, 5000 unchanged');
    expect(lines.at(-1)).toBe('… and 9980 more; --all to list them');
    expect(formatPlan(plan(changed(10_000)), { all: true })).toHaveLength(10_001);
  });

  it('sums the host resources and packages touched', () => {
    const entries: PlanEntry[] = [
      {
        node: 'a',
        action: 'new',
        artifacts: ['resources.json'],
        readded: false,
        resources: [
          { kind: 'file', action: 'added', path: '/etc/a' },
          { kind: 'package', action: 'added', manager: 'apt', name: 'nginx', version: '1.0' },
        ],
      },
      {
        node: 'b',
        action: 'changed',
        version: 3,
        artifacts: ['resources.json'],
        resources: [
          { kind: 'file', action: 'removed', path: '/etc/b' },
          { kind: 'file', action: 'added', path: '/etc/c' },
        ],
      },
      { node: 'c', action: 'changed', version: 3, artifacts: ['flor.json'] },
    ];
    expect(resourcesTouched(entries)).toBe('host resources on 2 nodes: files 2 added, 1 removed; packages 1 added');
    expect(formatPlan(plan(entries))[1]).toBe('host resources on 2 nodes: files 2 added, 1 removed; packages 1 added');
    expect(resourcesTouched(changed(3))).toBeUndefined();
  });
});

describe('formatPublish', () => {
  const body = (n: number, from = 1) => ({
    publish_id: 'p-1',
    position: 9,
    changed: Array.from({ length: n }, (_, i) => ({ node: `n${i}`, from, to: from + 1 })),
    unchanged: 7,
  });

  it('puts the summary first, then each changed node', () => {
    expect(formatPublish(body(2), 2, 2)).toEqual([
      'published p-1 at position 9: 2 changed, 7 unchanged (2 nodes sent, 2 blobs uploaded)',
      'n0 1 -> 2',
      'n1 1 -> 2',
    ]);
    expect(formatPublish(body(1, 0), 1, 1)[0]).toBe('published p-1 at position 9: 1 changed, 7 unchanged (1 node sent, 1 blob uploaded); of them 1 new');
    expect(formatPublish(body(2), 2, 0, {}, (n) => n === 'n1')).toEqual([
      'published p-1 at position 9: 2 changed, 7 unchanged (2 nodes sent, 0 blobs uploaded); of them 1 retired',
      'n0 1 -> 2',
      'n1 1 -> 2 (retired)',
    ]);
  });

  it('bounds the node lines unless --all', () => {
    expect(formatPublish(body(2_000), 2_000, 0)).toHaveLength(1 + LIST_LIMIT + 1);
    expect(formatPublish(body(2_000), 2_000, 0).at(-1)).toBe('… and 1980 more; --all to list them');
    expect(formatPublish(body(2_000), 2_000, 0, { all: true })).toHaveLength(2_001);
  });

  it('says nothing changed without a publish', () => {
    expect(formatPublish({ publish_id: null, position: 9, changed: [], unchanged: 40 }, 0, 0)).toEqual(['nothing changed: 40 unchanged']);
  });
});

describe('publishResourcesLine', () => {
  const file = (path: string) => ({ path, mode: '0644', owner: 'root', group: 'root', content: { artifact: 'x' } }) as never;
  const pkg = (name: string) => ({ manager: 'apt' as const, name, version: '1.0-1' });
  it("counts the files and packages the changed nodes' content sets, naming the packages", () => {
    const resources = new Map([
      ['a', { files: [file('/etc/a'), file('/etc/b')], packages: [pkg('nginx')] }],
      ['b', { files: [], packages: [pkg('nginx'), pkg('curl')] }],
      ['c', { files: [], packages: [] }],
    ]);
    expect(publishResourcesLine([{ node: 'a' }, { node: 'b' }, { node: 'c' }, { node: 'd' }], (n) => resources.get(n))).toBe(
      'host resources on 2 changed nodes: 2 files, 3 packages (curl, nginx)',
    );
  });
  it('says nothing when no changed node declares any', () => {
    expect(publishResourcesLine([{ node: 'a' }], () => undefined)).toBeUndefined();
  });
});
