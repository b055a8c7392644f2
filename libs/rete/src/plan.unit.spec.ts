import { localSetDigest, nodesToInspect, planPublish, type ArtifactDigests } from './plan.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const C = 'c'.repeat(64);
const set = (agent: string, flor: string): ArtifactDigests =>
  new Map([
    ['agent.json', agent],
    ['flor.json', flor],
  ]);
const head = (node: string, version: number, artifacts: ArtifactDigests, retired = false) => ({
  node,
  version,
  set_digest: localSetDigest(artifacts),
  retired,
});

describe('plan', () => {
  const local = new Map([
    ['alpha', set(A, B)],
    ['beta', set(A, C)],
    ['gamma', set(B, B)],
  ]);
  const heads = [head('alpha', 4, set(A, A)), head('beta', 2, set(A, C)), head('delta', 7, set(C, C))];

  it('fetches head artifacts only for nodes whose set digest differs', () => {
    expect(nodesToInspect(local, heads)).toEqual(['alpha']);
  });

  it('lists new, changed (with which artifacts), unchanged and, without prune, absent nodes', () => {
    const plan = planPublish(local, heads, new Map([['alpha', set(A, A)]]), false);
    expect(plan.entries).toEqual([
      { node: 'alpha', action: 'changed', version: 4, artifacts: ['flor.json'] },
      { node: 'beta', action: 'unchanged', version: 2 },
      { node: 'delta', action: 'absent', version: 7 },
      { node: 'gamma', action: 'new', artifacts: ['agent.json', 'flor.json'], readded: false },
    ]);
    expect(plan.changes).toBe(true);
  });

  it('retires absent nodes with prune, and treats a retired head as re-added', () => {
    const plan = planPublish(new Map([['delta', set(C, C)]]), [head('delta', 8, new Map(), true), head('beta', 2, set(A, C))], new Map(), true);
    expect(plan.entries).toEqual([
      { node: 'beta', action: 'retired', version: 2 },
      { node: 'delta', action: 'new', artifacts: ['agent.json', 'flor.json'], readded: true },
    ]);
  });

  it('has no changes when every node matches its head and nothing would be pruned', () => {
    const plan = planPublish(new Map([['beta', set(A, C)]]), [head('beta', 2, set(A, C)), head('old', 3, new Map(), true)], new Map(), true);
    expect(plan).toEqual({ entries: [{ node: 'beta', action: 'unchanged', version: 2 }], changes: false, ineligible: [] });
  });

  it('says how host resources change on new and changed nodes, and nothing when they do not', () => {
    const file = (path: string, sha256: string) => ({ path, mode: '0644', owner: 'root', group: 'root', content: { sha256, size: 1 } });
    const resources = {
      local: new Map([
        ['alpha', { files: [file('/etc/motd', B)], packages: [{ manager: 'apt' as const, name: 'florete-agent', version: '0.2.0' }] }],
        ['gamma', { files: [file('/etc/motd', A)], packages: [] }],
      ]),
      head: new Map([['alpha', { files: [file('/etc/motd', A)], packages: [{ manager: 'apt' as const, name: 'florete-agent', version: '0.1.0' }] }]]),
    };
    const plan = planPublish(local, heads, new Map([['alpha', set(A, A)]]), false, resources);
    expect(plan.entries.find((e) => e.node === 'alpha')).toEqual({
      node: 'alpha',
      action: 'changed',
      version: 4,
      artifacts: ['flor.json'],
      resources: [
        { kind: 'file', action: 'changed', path: '/etc/motd', changes: [{ field: 'content' }] },
        { kind: 'package', action: 'changed', manager: 'apt', name: 'florete-agent', from: '0.1.0', to: '0.2.0' },
      ],
    });
    expect(plan.entries.find((e) => e.node === 'gamma')).toEqual({
      node: 'gamma',
      action: 'new',
      artifacts: ['agent.json', 'flor.json'],
      readded: false,
      resources: [{ kind: 'file', action: 'added', path: '/etc/motd' }],
    });
    expect(plan.entries.find((e) => e.node === 'beta')).toEqual({ node: 'beta', action: 'unchanged', version: 2 });
  });

  it('ignores nodes the coordinator knows only from an enrolment token', () => {
    const plan = planPublish(new Map([['beta', set(A, C)]]), [{ node: 'beta', version: null, set_digest: null, retired: false }], new Map(), true);
    expect(plan.entries).toEqual([{ node: 'beta', action: 'new', artifacts: ['agent.json', 'flor.json'], readded: false }]);
  });

  it('names the ineligible nodes it would give new content, published or only enrolled, and no others', () => {
    const skew = [{ check: 'clock skew acceptable', detail: "900 s from the coordinator's clock (at most 300 s)" }];
    const flagged = (h: ReturnType<typeof head>) => ({ ...h, ineligible: true, failed_briefing: skew });
    const withFlags = [flagged(head('alpha', 4, set(A, A))), flagged(head('beta', 2, set(A, C))), flagged(head('delta', 7, set(C, C)))];
    const enrolledOnly = { node: 'gamma', version: null, set_digest: null, retired: false, ineligible: true, failed_briefing: skew };
    const plan = planPublish(local, [...withFlags, enrolledOnly], new Map([['alpha', set(A, A)]]), true);
    // beta is unchanged and delta would only be retired: neither is refused.
    expect(plan.ineligible).toEqual([
      { node: 'alpha', failed_briefing: skew },
      { node: 'gamma', failed_briefing: skew },
    ]);
    expect(planPublish(local, heads, new Map([['alpha', set(A, A)]]), false).ineligible).toEqual([]);
  });
});
