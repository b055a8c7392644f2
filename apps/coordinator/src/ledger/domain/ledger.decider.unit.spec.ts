import { EMPTY_SET_DIGEST, setDigest } from '#bundle';
import { DomainError } from '../../common/domain-error.js';
import { decide, evolve, type ArtifactRef, type Heads, type LedgerCommand, type NodeHead } from './ledger.decider.js';
import type { LedgerEvent, NodeSetStamped } from './ledger.events.js';

const sha = (c: string) => c.repeat(64).slice(0, 64);
const A = sha('a');
const B = sha('b');
const C = sha('c');
const sizes = new Map([[A, 10], [B, 20], [C, 30]]);
let n = 0;
const ctx = () => ({ publishId: `p${++n}` });

function publish(nodes: Record<string, Record<string, string>>, prune = false): LedgerCommand {
  return {
    type: 'publish_tree',
    message: 'm',
    prune,
    blobSizes: sizes,
    nodes: new Map(Object.entries(nodes).map(([k, v]) => [k, Object.entries(v).map(([name, sha256]): ArtifactRef => ({ name, sha256 }))])),
  };
}

/** given(events) → when(command) → then: the events a decision appends. */
function given(events: LedgerEvent[]) {
  const heads = events.reduce((h, e) => evolve(h, e), new Map<string, NodeHead>());
  return {
    heads: heads as Heads,
    when: (command: LedgerCommand) => decide(command, heads, ctx()),
  };
}

const stamps = (events: readonly LedgerEvent[]) => events.filter((e): e is NodeSetStamped => e.type === 'node_set_stamped');

describe('ledger decider', () => {
  describe('publish', () => {
    it('stamps version 1 on new nodes and records the publish last', () => {
      const d = given([]).when(publish({ alpha: { 'flor.json': A }, beta: { 'flor.json': B } }));
      expect(d.changed).toEqual([{ node: 'alpha', from: 0, to: 1 }, { node: 'beta', from: 0, to: 1 }]);
      expect(d.events.map((e) => [e.stream, e.revision])).toEqual([['node:alpha', 1], ['node:beta', 1], [expect.stringMatching(/^publish:/), 1]]);
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
    const v1: NodeHead = { version: 1, setDigest: setDigest([{ name: 'f', sha256: A }]), retired: false, artifacts: [{ name: 'f', sha256: A, size: 10 }] };

    it('stamps version+1 carrying the old content', () => {
      const d = given(history()).when({ type: 'rollback_node', node: 'alpha', toVersion: 1, target: v1, message: 'undo' });
      expect(d.changed).toEqual([{ node: 'alpha', from: 2, to: 3 }]);
      expect(stamps(d.events)[0].data).toMatchObject({ version: 3, set_digest: v1.setDigest, restored_from: 1, artifacts: v1.artifacts });
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
      expect(code({ type: 'rollback_node', node: 'ghost', toVersion: 1, target: undefined, message: '' })).toBe('unknown_node');
      expect(code({ type: 'rollback_node', node: 'alpha', toVersion: 9, target: undefined, message: '' })).toBe('unknown_version');
      expect(code({ type: 'rollback_node', node: 'alpha', toVersion: 2, target: { ...v1, version: 2 }, message: '' })).toBe('invalid_rollback_target');
    });

    it('is a no-op when the head already carries the target content', () => {
      const e1 = given([]).when(publish({ alpha: { f: A } })).events;
      const e2 = given([...e1]).when(publish({ alpha: { f: A, g: B } })).events;
      const e3 = given([...e1, ...e2]).when(publish({ alpha: { f: A } })).events;
      expect(given([...e1, ...e2, ...e3]).when({ type: 'rollback_node', node: 'alpha', toVersion: 1, target: v1, message: '' }).events).toEqual([]);
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
});
