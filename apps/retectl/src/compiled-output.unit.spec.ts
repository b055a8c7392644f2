import { bucketOf, labelBuckets } from '#bundle';
import { HEAD_BUCKETS, type NodeLabels } from '#contracts';
import type { Rete } from '#rete';
import { editedLabels, RecordedNodes, recordedLabels, recordedRete } from './compiled-output.js';

/** A record of n nodes, each with a made-up fingerprint, stamp and set digest, in its real head bucket. */
const recordOf = (n: number, set = (i: number) => `set${i}`): RecordedNodes => {
  const entries = new Map<string, string>();
  for (let i = 0; i < n; i++) {
    const node = `node-${String(i).padStart(5, '0')}`;
    entries.set(node, `fp${i} 1.5/2.5 ${set(i)} ${bucketOf(node)}`);
  }
  return RecordedNodes.of(entries);
};

describe('RecordedNodes.bucketDigests', () => {
  it('works out the buckets asked for as heads() does, and takes the others as known', () => {
    const before = recordOf(3000);
    const known = before.heads().buckets;
    // Two nodes get new sets: only their buckets can change.
    const after = recordOf(3000, (i) => (i === 7 || i === 2500 ? `new${i}` : `set${i}`));
    const only = new Set([bucketOf('node-00007'), bucketOf('node-02500')]);
    const got = after.bucketDigests(known, only);
    expect(got).toEqual(after.heads().buckets);
    expect(got).toHaveLength(HEAD_BUCKETS);
    expect(got.filter((d, b) => d !== known[b])).toHaveLength(only.size);
    // A bucket not asked for is taken from known, whatever the entries say.
    const stale = [...known];
    stale[[...only][0]] = 'stale';
    expect(after.bucketDigests(stale, new Set())).toEqual(stale);
  });

  it('gives a bucket asked for of a record of no nodes the digest of an empty bucket', () => {
    const known = recordOf(10).heads().buckets;
    const empty = recordOf(0).heads().buckets;
    expect(recordOf(0).bucketDigests(known, new Set([0, 1]))).toEqual([empty[0], empty[1], ...known.slice(2)]);
  });
});

describe('RecordedNodes.get and .with', () => {
  it("finds every node's entry, and none for a name it does not hold, however the names sort", () => {
    // Names that are each other's prefixes, and ones that sort between, before and after them.
    const names = ['a', 'a-b', 'a0', 'ab', 'b', 'node-1', 'node-10', 'node-2', 'z', 'zz9'];
    const record = RecordedNodes.of(new Map(names.map((n, i) => [n, `fp${i} 1.5/2.5 set${i} ${bucketOf(n)}`])));
    names.forEach((n, i) => expect(record.get(n)).toBe(`fp${i} 1.5/2.5 set${i} ${bucketOf(n)}`));
    for (const absent of ['', '0', 'a-', 'a-a', 'a-c', 'aa', 'node-', 'node-0', 'node-11', 'node-3', 'y', 'zz', 'zzz'])
      expect(record.get(absent)).toBeUndefined();
    expect(RecordedNodes.of(new Map()).get('a')).toBeUndefined();
  });

  it('finds each of 3,000 nodes, and writes new entries in their places only', () => {
    const record = recordOf(3000);
    for (let i = 0; i < 3000; i++) {
      const node = `node-${String(i).padStart(5, '0')}`;
      expect(record.get(node)).toBe(`fp${i} 1.5/2.5 set${i} ${bucketOf(node)}`);
    }
    const changed = [0, 1, 1499, 2998, 2999];
    const next = record.with(new Map(changed.map((i) => [`node-${String(i).padStart(5, '0')}`, `new${i}`])));
    expect(next.toMap()).toEqual(new Map([...record.toMap()].map(([node, entry], i) => [node, changed.includes(i) ? `new${i}` : entry])));
    expect(() => record.with(new Map([['node-03000', 'x']]))).toThrow('compile record: node-03000 is not recorded');
  });
});

describe('RecordedNodes.names', () => {
  it('lists every node in name order, but those left out', () => {
    const record = recordOf(1200);
    const all = Array.from({ length: 1200 }, (_, i) => `node-${String(i).padStart(5, '0')}`);
    expect(record.names()).toEqual(all);
    expect(record.names(new Set(['node-00000', 'node-00600', 'node-01199', 'not-a-node']))).toEqual(
      all.filter((n) => !['node-00000', 'node-00600', 'node-01199'].includes(n)),
    );
    expect(recordOf(0).names()).toEqual([]);
  });
});

describe('recordedLabels', () => {
  // Sorted, as nodeLabels gives them: some nodes with tags, some with groups only, some with neither.
  const labels = new Map<string, NodeLabels>(
    Array.from({ length: 3_000 }, (_, i) => [
      `node-${String(i).padStart(5, '0')}`,
      { tags: i % 3 === 0 ? [] : [`site-${i % 7}`, 'web'].sort(), groups: i % 5 === 0 ? ['ops', 'staff'] : [] },
    ]),
  );
  const rete = { mesh: { name: 'm', coordinator: 'https://c.example' }, nodes: [], groups: new Map(), acl: [] } as Rete;

  it('gives each node of the tree its own labels, empty lists for one with neither, and nothing for a node it does not hold', () => {
    const recorded = recordedRete(rete, labels);
    expect(recorded.labelBuckets).toEqual(labelBuckets(labels));
    // The tree leaves out one labelled node and holds one the compile did not label.
    const tree = new Set([...labels.keys()].filter((n) => n !== 'node-00001').concat('node-99999'));
    const given = recordedLabels(
      recorded,
      (n) => tree.has(n),
      () => [...tree].sort(),
    );
    expect(given.of('node-00001')).toBeUndefined();
    expect(given.of('node-99999')).toEqual({ tags: [], groups: [] });
    expect(given.of('node-00000')).toEqual({ tags: [], groups: ['ops', 'staff'] });
    expect(given.of('node-00002')).toEqual({ tags: ['site-2', 'web'], groups: [] });
    const all = given.all();
    expect(Object.keys(all)).toEqual([...tree].sort());
    for (const node of tree) expect(all[node]).toEqual(labels.get(node) ?? { tags: [], groups: [] });
  });
});

describe('editedLabels', () => {
  const name = (i: number) => `node-${String(i).padStart(5, '0')}`;
  // Some nodes with tags, some with groups only, some with neither (no line).
  const labelsOf = (edit: (i: number) => readonly string[] | undefined = () => undefined) =>
    new Map<string, NodeLabels>(
      Array.from({ length: 3_000 }, (_, i) => [
        name(i),
        { tags: [...(edit(i) ?? (i % 3 === 0 ? [] : [`site-${i % 7}`, 'web'].sort()))], groups: i % 5 === 0 ? ['ops', 'staff'] : [] },
      ]),
    );
  const rete = { mesh: { name: 'm', coordinator: 'https://c.example' }, nodes: [], groups: new Map(), acl: [] } as Rete;

  it("gives the labels' lines and bucket digests a record of the edited tags from nothing gives", () => {
    const before = recordedRete(rete, labelsOf());
    // The first and last lines, a node gaining its first label, one losing its last, one in a group losing its tags.
    const edits = new Map<string, readonly string[]>([
      [name(1), ['canary', 'site-1', 'web']],
      [name(2999), []],
      [name(3), ['canary']],
      [name(4), []],
      [name(10), []],
      [name(2998), ['a', 'z']],
    ]);
    const got = editedLabels(before.labels, before.labelBuckets, edits, recordOf(3000));
    const after = recordedRete(
      rete,
      labelsOf((i) => edits.get(name(i))),
    );
    expect(got.labels).toBe(after.labels);
    expect(got.labelBuckets).toEqual(after.labelBuckets);
    expect(got.labelBuckets.filter((d, b) => d !== before.labelBuckets[b]).length).toBeLessThanOrEqual(edits.size);
  });
});
