import { EMPTY_SET_DIGEST, setDigest } from '#bundle';
import { DomainError } from '../../common/index.js';
import { changedNodesOf, decide, evolveHeads, type ArtifactRef, type Heads, type LedgerCommand, type NodeHead, type NodeSet } from './ledger.decider.js';
import type { LedgerEvent, NodeSetStamped, PublishRecorded } from './ledger.events.js';

const sha = (c: string) => c.repeat(64).slice(0, 64);
const A = sha('a');
const B = sha('b');
const C = sha('c');
const sizes = new Map([
  [A, 10],
  [B, 20],
  [C, 30],
]);
let n = 0;
const ctx = () => ({ publishId: `p${++n}` });

const NONE_INELIGIBLE = { ineligible: new Map(), allowIneligible: new Set<string>() };

function publish(
  nodes: Record<string, Record<string, string>>,
  prune = false,
  ineligible: Partial<Pick<Extract<LedgerCommand, { type: 'publish_tree' }>, 'ineligible' | 'allowIneligible'>> = {},
): LedgerCommand {
  return {
    type: 'publish_tree',
    message: 'm',
    prune,
    blobSizes: sizes,
    nodes: new Map(Object.entries(nodes).map(([k, v]) => [k, Object.entries(v).map(([name, sha256]): ArtifactRef => ({ name, sha256 }))])),
    ...NONE_INELIGIBLE,
    ...ineligible,
  };
}

function rollback(
  node: string,
  toVersion: number,
  target: NodeSet | undefined,
  extra: Partial<Extract<LedgerCommand, { type: 'rollback_node' }>> = {},
): LedgerCommand {
  return { type: 'rollback_node', node, toVersion, target, message: 'undo', ...NONE_INELIGIBLE, ...extra };
}

/** given(events) → when(command) → then: the events a decision appends. */
function given(events: LedgerEvent[]) {
  const heads = events.reduce((h, e) => evolveHeads(h, e), new Map<string, NodeSet>());
  return {
    heads: heads as Heads,
    when: (command: LedgerCommand) => decide(command, heads, ctx()),
  };
}

const stamps = (events: readonly LedgerEvent[]) => events.filter((e): e is NodeSetStamped => e.type === 'node_set_stamped');
const recordOf = (events: readonly LedgerEvent[]) => events.find((e): e is PublishRecorded => e.type === 'publish_recorded');

/** The typed error a decision throws; fails the test when it decides instead. */
function refusal(decide: () => unknown): DomainError {
  try {
    decide();
  } catch (e) {
    if (e instanceof DomainError) return e;
    throw e;
  }
  throw new Error('expected a refusal');
}

describe('ledger decider', () => {
  describe('which nodes of a tree changed', () => {
    const refs = (v: Record<string, string>) => Object.entries(v).map(([name, sha256]): ArtifactRef => ({ name, sha256 }));
    const tree = new Map([
      ['same', refs({ 'a.json': A, 'b.json': B })],
      ['reordered', refs({ 'b.json': B, 'a.json': A })],
      ['new-content', refs({ 'a.json': C, 'b.json': B })],
      ['renamed', refs({ 'a.json': A, 'c.json': B })],
      ['one-more', refs({ 'a.json': A, 'b.json': B, 'c.json': C })],
      ['one-less', refs({ 'a.json': A })],
      ['never-published', refs({ 'a.json': A })],
      ['retired', refs({ 'a.json': A, 'b.json': B })],
    ]);
    const headOf = (artifacts: Record<string, string>, retired = false): NodeSet => {
      const list = refs(artifacts).map((a) => ({ ...a, size: sizes.get(a.sha256)! }));
      return { version: 3, setDigest: retired ? EMPTY_SET_DIGEST : setDigest(list), retired, artifacts: retired ? [] : list };
    };
    const before = { 'a.json': A, 'b.json': B };
    const heads = new Map<string, NodeHead>([...tree.keys()].filter((k) => k !== 'never-published').map((k) => [k, headOf(before, k === 'retired')]));
    const changed = ['new-content', 'renamed', 'one-more', 'one-less', 'never-published', 'retired'];

    it('compares artifact lists when the heads carry them (heads kept in memory)', () => {
      expect(changedNodesOf(tree, heads)).toEqual(changed);
    });

    it('compares set digests when the heads carry none, with the same answer', () => {
      const digestsOnly = new Map([...heads].map(([k, h]) => [k, { version: h.version, setDigest: h.setDigest, retired: h.retired }]));
      expect(changedNodesOf(tree, digestsOnly)).toEqual(changed);
    });

    it('judges a head that carries its artifacts by them alone, taking no digest of the new set', () => {
      // A head whose digest is the new set's while its artifacts are not: only a digest taken of the
      // new set would call it unchanged. (A real head's digest is its artifacts'; this one tells whether a digest was taken.)
      const misleading = new Map<string, NodeHead>([['n', { ...headOf({ 'a.json': A }), setDigest: setDigest(refs({ 'a.json': C })) }]]);
      expect(changedNodesOf(new Map([['n', refs({ 'a.json': C })]]), misleading)).toEqual(['n']);
    });
  });

  describe('publish', () => {
    it('stamps version 1 on new nodes and records the publish last', () => {
      const d = given([]).when(publish({ alpha: { 'flor.json': A }, beta: { 'flor.json': B } }));
      expect(d.changed).toEqual([
        { node: 'alpha', from: 0, to: 1 },
        { node: 'beta', from: 0, to: 1 },
      ]);
      expect(d.events.map((e) => [e.stream, e.revision])).toEqual([
        ['node:alpha', 1],
        ['node:beta', 1],
        [expect.stringMatching(/^publish:/), 1],
      ]);
      expect(stamps(d.events)[0].data.set_digest).toBe(setDigest([{ name: 'flor.json', sha256: A }]));
      expect(stamps(d.events)[0].data.artifacts).toEqual([{ name: 'flor.json', sha256: A, size: 10 }]);
    });

    it('stamps a new version only on changed nodes', () => {
      const first = given([]).when(publish({ alpha: { 'flor.json': A }, beta: { 'flor.json': B } }));
      const d = given([...first.events]).when(publish({ alpha: { 'flor.json': A }, beta: { 'flor.json': C } }));
      expect(d.changed).toEqual([{ node: 'beta', from: 1, to: 2 }]);
      expect(d.unchanged).toBe(1);
      expect(stamps(d.events).map((e) => e.data.node)).toEqual(['beta']);
    });

    it('is a no-op for an identical tree, whatever the order of its keys', () => {
      const first = given([]).when(publish({ alpha: { 'a.json': A, 'b.json': B } }));
      const d = given([...first.events]).when(publish({ alpha: { 'b.json': B, 'a.json': A } }));
      expect(d.events).toEqual([]);
      expect(d.unchanged).toBe(1);
    });

    it('leaves nodes absent from the tree alone without prune', () => {
      const first = given([]).when(publish({ alpha: { f: A }, beta: { f: B } }));
      const d = given([...first.events]).when(publish({ alpha: { f: C } }));
      expect(stamps(d.events).map((e) => e.data.node)).toEqual(['alpha']);
    });

    it('retires nodes absent from the tree with prune', () => {
      const first = given([]).when(publish({ alpha: { f: A }, beta: { f: B } }));
      const d = given([...first.events]).when(publish({ alpha: { f: A } }, true));
      expect(d.changed).toEqual([{ node: 'beta', from: 1, to: 2 }]);
      expect(stamps(d.events)[0].data).toMatchObject({ retired: true, artifacts: [], set_digest: EMPTY_SET_DIGEST });
    });

    it('refuses a changed node whose blobs were never uploaded, naming them', () => {
      const missing = sha('d');
      try {
        given([]).when(publish({ alpha: { f: missing } }));
        throw new Error('expected a refusal');
      } catch (e) {
        expect(e).toBeInstanceOf(DomainError);
        expect((e as DomainError).code).toBe('missing_blobs');
        expect((e as DomainError).details).toEqual({ missing: [missing] });
      }
    });

    it('does not ask for blobs of unchanged nodes', () => {
      const first = given([]).when(publish({ alpha: { f: A } }));
      const cmd = publish({ alpha: { f: A }, beta: { f: B } });
      const d = decide({ ...cmd, blobSizes: new Map([[B, 20]]) } as LedgerCommand, given([...first.events]).heads, ctx());
      expect(d.changed).toEqual([{ node: 'beta', from: 0, to: 1 }]);
    });

    it('continues the version of a retired node that is published again', () => {
      const e1 = given([]).when(publish({ alpha: { f: A } })).events;
      const e2 = given([...e1]).when({ type: 'retire_node', node: 'alpha', message: 'bye' }).events;
      const d = given([...e1, ...e2]).when(publish({ alpha: { f: A } }));
      expect(d.changed).toEqual([{ node: 'alpha', from: 2, to: 3 }]);
      expect(stamps(d.events)[0].data.retired).toBe(false);
    });
  });

  describe('rollback', () => {
    const history = () => {
      const e1 = given([]).when(publish({ alpha: { f: A } })).events;
      const e2 = given([...e1]).when(publish({ alpha: { f: B } })).events;
      return [...e1, ...e2];
    };
    const v1: NodeSet = { version: 1, setDigest: setDigest([{ name: 'f', sha256: A }]), retired: false, artifacts: [{ name: 'f', sha256: A, size: 10 }] };

    it('stamps version+1 carrying the old content', () => {
      const d = given(history()).when(rollback('alpha', 1, v1));
      expect(d.changed).toEqual([{ node: 'alpha', from: 2, to: 3 }]);
      expect(stamps(d.events)[0].data).toMatchObject({ version: 3, set_digest: v1.setDigest, restored_from: 1, artifacts: v1.artifacts });
    });

    it('given a node that reverted its head on its own, when its report comes, then a rollback records the revert', () => {
      const d = given(history()).when(rollback('alpha', 1, v1, { reverted: { version: 2, reason: 'health check "web" failed' } }));
      expect(stamps(d.events)[0].data).toMatchObject({ version: 3, set_digest: v1.setDigest, restored_from: 1 });
      expect(recordOf(d.events)?.data).toMatchObject({ kind: 'rollback', reverted: { node: 'alpha', version: 2, to: 1, reason: 'health check "web" failed' } });
    });

    it('given a head that moved on since the reverted version (or a repeated report), then the revert appends nothing', () => {
      const moved = [...history(), ...given(history()).when(publish({ alpha: { f: C } })).events];
      expect(given(moved).when(rollback('alpha', 1, v1, { reverted: { version: 2, reason: 'r' } })).events).toEqual([]);
      const once = [...history(), ...given(history()).when(rollback('alpha', 1, v1, { reverted: { version: 2, reason: 'r' } })).events];
      expect(given(once).when(rollback('alpha', 1, v1, { reverted: { version: 2, reason: 'r' } })).events).toEqual([]);
    });

    it('refuses an unknown node, an unknown version and a target that is not older', () => {
      const g = given(history());
      const code = (c: LedgerCommand) => {
        try {
          g.when(c);
          return 'none';
        } catch (e) {
          return (e as DomainError).code;
        }
      };
      expect(code(rollback('ghost', 1, undefined))).toBe('unknown_node');
      expect(code(rollback('alpha', 9, undefined))).toBe('unknown_version');
      expect(code(rollback('alpha', 2, { ...v1, version: 2 }))).toBe('invalid_rollback_target');
    });

    it('is a no-op when the head already carries the target content', () => {
      const e1 = given([]).when(publish({ alpha: { f: A } })).events;
      const e2 = given([...e1]).when(publish({ alpha: { f: A, g: B } })).events;
      const e3 = given([...e1, ...e2]).when(publish({ alpha: { f: A } })).events;
      expect(given([...e1, ...e2, ...e3]).when(rollback('alpha', 1, v1)).events).toEqual([]);
    });
  });

  describe('retire', () => {
    it('stamps the final empty set', () => {
      const e1 = given([]).when(publish({ alpha: { f: A } })).events;
      const d = given([...e1]).when({ type: 'retire_node', node: 'alpha', message: 'decommissioned' });
      expect(stamps(d.events)[0].data).toMatchObject({ node: 'alpha', version: 2, retired: true, artifacts: [] });
      expect(d.events[d.events.length - 1]).toMatchObject({ type: 'publish_recorded', data: { kind: 'retire', message: 'decommissioned' } });
    });

    it('refuses to retire twice or to retire a node never published', () => {
      const e1 = given([]).when(publish({ alpha: { f: A } })).events;
      const e2 = given([...e1]).when({ type: 'retire_node', node: 'alpha', message: '' }).events;
      expect(() => given([...e1, ...e2]).when({ type: 'retire_node', node: 'alpha', message: '' })).toThrow(expect.objectContaining({ code: 'node_retired' }));
      expect(() => given([]).when({ type: 'retire_node', node: 'alpha', message: '' })).toThrow(expect.objectContaining({ code: 'unknown_node' }));
    });
  });

  describe('ineligible nodes', () => {
    const skew = { check: 'clock skew acceptable', detail: "900 s from the coordinator's clock (at most 300 s)" };
    const old = { check: 'agent version supported', detail: 'agent 0.0.9, at least 0.1.0 required' };
    const ineligible = new Map([
      ['alpha', [skew]],
      ['gamma', [skew, old]],
    ]);
    const published = () => given([]).when(publish({ alpha: { f: A }, beta: { f: A }, gamma: { f: A } })).events;

    it('refuses a publish that would give an ineligible node new content, naming each node and its failed lines', () => {
      const e = refusal(() => given([...published()]).when(publish({ alpha: { f: B }, beta: { f: B }, gamma: { f: B } }, false, { ineligible })));
      expect(e.code).toBe('ineligible_nodes');
      expect(e.details).toEqual({
        nodes: [
          { node: 'alpha', failed_briefing: [skew] },
          { node: 'gamma', failed_briefing: [skew, old] },
        ],
      });
      expect(e.message).toContain('allow_ineligible: ["alpha","gamma"]');
    });

    it('refuses a new node that enrolled ineligible before its first publish', () => {
      expect(refusal(() => given([]).when(publish({ alpha: { f: A } }, false, { ineligible }))).code).toBe('ineligible_nodes');
    });

    it('refuses the whole publish while one ineligible node is not accepted', () => {
      const e = refusal(() =>
        given([...published()]).when(publish({ alpha: { f: B }, gamma: { f: B } }, false, { ineligible, allowIneligible: new Set(['alpha']) })),
      );
      expect(e.details).toEqual({ nodes: [{ node: 'gamma', failed_briefing: [skew, old] }] });
    });

    it('stamps ineligible nodes the publish accepts, and records which with their failed lines', () => {
      const d = given([...published()]).when(
        publish({ alpha: { f: B }, beta: { f: B }, gamma: { f: B } }, false, { ineligible, allowIneligible: new Set(['gamma', 'alpha']) }),
      );
      expect(d.changed.map((c) => c.node)).toEqual(['alpha', 'beta', 'gamma']);
      const accepted = [
        { node: 'alpha', failed_briefing: [skew] },
        { node: 'gamma', failed_briefing: [skew, old] },
      ];
      expect(d.acceptedIneligible).toEqual(accepted);
      expect(recordOf(d.events)?.data.accepted_ineligible).toEqual(accepted);
    });

    it('never refuses an ineligible node whose content does not change', () => {
      const d = given([...published()]).when(publish({ alpha: { f: A }, beta: { f: B }, gamma: { f: A } }, false, { ineligible }));
      expect(d.changed.map((c) => c.node)).toEqual(['beta']);
      expect(recordOf(d.events)?.data).not.toHaveProperty('accepted_ineligible');
    });

    it('lets an ineligible node be retired, by retire or by prune', () => {
      const events = [...published()];
      expect(stamps(given(events).when({ type: 'retire_node', node: 'alpha', message: 'bye' }).events)[0].data.retired).toBe(true);
      const pruned = given(events).when(publish({ beta: { f: A } }, true, { ineligible }));
      expect(stamps(pruned.events).map((s) => [s.data.node, s.data.retired])).toEqual([
        ['alpha', true],
        ['gamma', true],
      ]);
    });

    it('ignores accepting a node that is not ineligible, and records no acceptance', () => {
      const d = given([...published()]).when(publish({ beta: { f: B } }, false, { ineligible, allowIneligible: new Set(['beta', 'alpha', 'nobody']) }));
      expect(d.changed.map((c) => c.node)).toEqual(['beta']);
      expect(d.acceptedIneligible).toEqual([]);
      expect(recordOf(d.events)?.data).not.toHaveProperty('accepted_ineligible');
    });

    it('refuses a rollback onto an ineligible node unless it is accepted, and records the acceptance', () => {
      const e1 = given([]).when(publish({ alpha: { f: A } })).events;
      const e2 = given([...e1]).when(publish({ alpha: { f: B } })).events;
      const v1: NodeSet = { version: 1, setDigest: setDigest([{ name: 'f', sha256: A }]), retired: false, artifacts: [{ name: 'f', sha256: A, size: 10 }] };
      expect(refusal(() => given([...e1, ...e2]).when(rollback('alpha', 1, v1, { ineligible }))).details).toEqual({
        nodes: [{ node: 'alpha', failed_briefing: [skew] }],
      });
      const d = given([...e1, ...e2]).when(rollback('alpha', 1, v1, { ineligible, allowIneligible: new Set(['alpha']) }));
      expect(d.changed).toEqual([{ node: 'alpha', from: 2, to: 3 }]);
      expect(recordOf(d.events)?.data.accepted_ineligible).toEqual([{ node: 'alpha', failed_briefing: [skew] }]);
    });
  });
});
