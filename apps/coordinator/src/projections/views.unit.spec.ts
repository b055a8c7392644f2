import type { NodeRecord } from '../fleet/index.js';
import { fleetOverview, publishStatuses, publishTimeline } from './views.js';

const now = new Date('2026-01-01T12:00:00Z');
const ago = (s: number) => new Date(now.getTime() - s * 1000);
function node(name: string, o: Partial<NodeRecord> & { contact?: number | null; agent?: string; ineligible?: boolean; error?: string } = {}): NodeRecord {
  return {
    node: name,
    head: o.head ?? { version: 2, retired: false },
    headRow: null,
    liveCredentials: o.liveCredentials ?? 1,
    revokedCredentials: 0,
    pendingToken: false,
    appliedVersion: o.appliedVersion ?? 2,
    outcomes: o.outcomes ?? [],
    status: {
      last_contact: o.contact === null ? null : ago(o.contact ?? 10),
      last_result: null,
      last_error: o.error ?? null,
      agent_version: o.agent ?? '1.0.0',
      ineligible: o.ineligible ?? false,
      briefing: null,
    },
  };
}

describe('the fleet overview', () => {
  it('counts lifecycle, convergence, agent versions and contact ages, and lists the nodes needing attention first', () => {
    const records = [
      node('ok-1'),
      node('ok-2', { agent: '1.1.0', contact: 4000 }),
      node('behind', { appliedVersion: 1 }),
      node('off', { appliedVersion: 1, contact: null }),
      node('broken', { appliedVersion: 1, outcomes: [{ version: 2, result: 'failed', error: 'exit 1' }], error: 'exit 1' }),
      node('odd', { ineligible: true }),
      node('gone', { head: { version: 3, retired: true }, appliedVersion: 3 }),
    ];
    const o = fleetOverview(records, new Set(['ok-1']), now);
    expect(o.total).toBe(7);
    expect(o.lifecycle).toEqual({ unmanaged: 0, enrolled: 6, retired: 1 });
    expect(o.convergence).toEqual({ converged: 4, outstanding: 2, failed: 1, unpublished: 0 });
    expect(o.agent_versions).toEqual([
      { version: '1.0.0', nodes: 5 },
      { version: '1.1.0', nodes: 1 },
    ]);
    expect(o.never_contacted).toBe(1);
    expect(o.contact_age.map((b) => b.nodes)).toEqual([5, 0, 0, 1, 0, 0]);
    expect(o.attention.map((a) => [a.node, a.reasons])).toEqual([
      ['broken', ['failed']],
      ['odd', ['ineligible']],
      ['ok-1', ['stale_checkpoint']],
      ['behind', ['behind']],
    ]);
    expect(o.attention[0].last_error).toBe('exit 1');
    expect(o.attention_counts).toEqual({ failed: 1, ineligible: 1, stale_checkpoint: 1, behind: 1 });
  });
});

describe("a publish's convergence", () => {
  const recordedAt = ago(100);
  const change = (n: string) => ({ node: n, from: 1, to: 2 });
  it('counts each status, reverted apart from failed, and plots them against the time each node reported', () => {
    const fact = (n: string, appliedVersion: number, outcomes: NodeRecord['outcomes'], reportedAt: Date | null) => ({
      change: change(n),
      appliedVersion,
      outcomes,
      ineligible: false,
      lastContact: ago(5),
      reportedAt,
    });
    const facts = [
      fact('a', 2, [{ version: 2, result: 'applied', error: null }], ago(90)),
      fact('b', 1, [{ version: 2, result: 'failed', error: 'x' }], ago(50)),
      fact('c', 3, [{ version: 2, result: 'reverted', error: 'window ran out' }], ago(20)),
      fact('d', 1, [], null),
    ];
    const { counts, rows } = publishStatuses(facts);
    expect(counts).toEqual({ applied: 1, outstanding: 1, failed: 1, reverted: 1, superseded: 0 });
    expect(rows.find((r) => r.change.node === 'c')!.reason).toBe('window ran out');
    const t = publishTimeline(rows, recordedAt, now);
    expect(t.length).toBeLessThanOrEqual(60);
    expect(t[0]).toEqual({ seconds: 0, applied: 0, failed: 0, reverted: 0 });
    expect(t.at(-1)).toEqual({ seconds: 100, applied: 1, failed: 1, reverted: 1 });
    const at = (s: number) => t.filter((p) => p.seconds <= s).at(-1)!;
    expect(at(60)).toMatchObject({ applied: 1, failed: 1, reverted: 0 });
  });
});
