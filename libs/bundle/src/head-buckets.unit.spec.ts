import { createHash } from 'node:crypto';
import { HEAD_BUCKETS } from '#contracts';
import { BucketMaps, bucketOf, headBuckets, labelBuckets, labelsText } from './head-buckets.js';
import { sha256Hex } from './digest.js';

const digest = (s: string) => sha256Hex(s);
const fleet = (n: number): [string, string][] => Array.from({ length: n }, (_, i) => [`node-${i}`, digest(`set ${i}`)]);

describe('head buckets', () => {
  it('puts a node in the bucket of the first byte of md5(name)', () => {
    for (const name of ['a', 'edge-07', 'node-9999', 'x'.repeat(63)]) expect(bucketOf(name)).toBe(createHash('md5').update(name).digest()[0]);
  });

  it('digests each bucket as its lines in byte order of the names, empty buckets as no bytes', () => {
    const heads: [string, string][] = [
      ['a-b', digest('1')],
      ['a', digest('2')],
      ['a0', digest('3')],
    ];
    const buckets = headBuckets(heads);
    expect(buckets).toHaveLength(HEAD_BUCKETS);
    const expected = new Array<string>(HEAD_BUCKETS).fill('');
    for (const [node, d] of [...heads].sort((x, y) => Buffer.compare(Buffer.from(x[0]), Buffer.from(y[0])))) expected[bucketOf(node)] += `${node} ${d}\n`;
    expect(buckets).toEqual(expected.map((text) => sha256Hex(text)));
  });

  it('does not depend on the order heads come in', () => {
    const heads = fleet(500);
    expect(headBuckets([...heads].reverse())).toEqual(headBuckets(heads));
  });

  it('a changed, added or removed node changes its own bucket and no other', () => {
    const heads = fleet(500);
    const before = headBuckets(heads);
    const differing = (after: string[]) => after.flatMap((d, i) => (d === before[i] ? [] : [i]));
    const changed = heads.map(([n, d]): [string, string] => [n, n === 'node-42' ? digest('other') : d]);
    expect(differing(headBuckets(changed))).toEqual([bucketOf('node-42')]);
    expect(differing(headBuckets([...heads, ['node-new', digest('new')]]))).toEqual([bucketOf('node-new')]);
    expect(differing(headBuckets(heads.filter(([n]) => n !== 'node-7')))).toEqual([bucketOf('node-7')]);
  });
});

describe('label buckets', () => {
  const labels = (n: number) => Array.from({ length: n }, (_, i) => [`node-${i}`, { tags: [`t${i % 7}`, 'all'], groups: i % 2 ? ['odd'] : [] }] as const);

  it('digests each bucket as the lines `<node> <tags> <groups>`, each list de-duplicated, sorted and joined by commas', () => {
    const buckets = labelBuckets([['edge-07', { tags: ['web', 'db', 'web'], groups: ['ops', 'dev'] }]]);
    expect(labelsText({ tags: ['web', 'db', 'web'], groups: ['ops', 'dev'] })).toBe('db,web dev,ops');
    // Already sorted, or sorted with a repeat: the same text.
    expect(labelsText({ tags: ['db', 'web'], groups: ['dev', 'ops'] })).toBe('db,web dev,ops');
    expect(labelsText({ tags: ['db', 'db', 'web'], groups: ['dev', 'ops', 'ops'] })).toBe('db,web dev,ops');
    expect(buckets[bucketOf('edge-07')]).toBe(sha256Hex('edge-07 db,web dev,ops\n'));
    expect(buckets.filter((_, b) => b !== bucketOf('edge-07')).every((d) => d === sha256Hex(''))).toBe(true);
    // No tag and no group: what the coordinator records nothing for, left out.
    expect(labelBuckets([['edge-07', { tags: [], groups: [] }]])).toEqual(labelBuckets([]));
    expect(labelBuckets([['edge-07', { tags: [], groups: ['ops'] }]])[bucketOf('edge-07')]).toBe(sha256Hex('edge-07  ops\n'));
  });

  it('does not depend on the order of the nodes or of their lists, and a changed label changes its own bucket only', () => {
    const all = labels(2_000);
    const buckets = labelBuckets(all);
    const shuffled = [...all].reverse().map(([n, l]) => [n, { tags: [...l.tags].reverse(), groups: [...l.groups, ...l.groups] }] as const);
    expect(labelBuckets(shuffled)).toEqual(buckets);
    const changed = all.map(([n, l]) => (n === 'node-42' ? ([n, { ...l, groups: ['moved'] }] as const) : ([n, l] as const)));
    const after = labelBuckets(changed);
    expect(after.flatMap((d, b) => (d === buckets[b] ? [] : [b]))).toEqual([bucketOf('node-42')]);
  });
});

describe('BucketMaps', () => {
  const names = Array.from({ length: 2000 }, (_, i) => `node-${i}`);
  const filled = BucketMaps.empty<number>().edit((set) => names.forEach((n, i) => set(n, i))).maps;

  it('puts each node in its bucket, and edits only the buckets it writes, sharing the others and leaving the maps it came from as they were', () => {
    expect(filled.buckets).toHaveLength(HEAD_BUCKETS);
    for (const [b, map] of filled.buckets.entries()) for (const node of map.keys()) expect(bucketOf(node)).toBe(b);
    expect(filled.buckets.reduce((n, m) => n + m.size, 0)).toBe(names.length);

    const { maps, touched } = filled.edit((set) => {
      set('node-7', 70);
      set('node-8', undefined);
      set('node-new', 1);
    });
    expect(touched).toEqual(new Set([bucketOf('node-7'), bucketOf('node-8'), bucketOf('node-new')]));
    expect(maps.buckets[bucketOf('node-7')].get('node-7')).toBe(70);
    expect(maps.buckets[bucketOf('node-8')].has('node-8')).toBe(false);
    expect(maps.buckets[bucketOf('node-new')].get('node-new')).toBe(1);
    for (let b = 0; b < HEAD_BUCKETS; b++) {
      if (touched.has(b)) expect(maps.buckets[b]).not.toBe(filled.buckets[b]);
      else expect(maps.buckets[b]).toBe(filled.buckets[b]);
    }
    // The maps it came from are unchanged.
    expect(filled.buckets[bucketOf('node-7')].get('node-7')).toBe(7);
    expect(filled.buckets[bucketOf('node-8')].get('node-8')).toBe(8);
    expect(filled.buckets[bucketOf('node-new')].has('node-new')).toBe(false);
  });

  it('an edit that writes nothing touches no bucket', () => {
    const { maps, touched } = filled.edit(() => {});
    expect(touched.size).toBe(0);
    expect(maps.buckets.every((m, b) => m === filled.buckets[b])).toBe(true);
  });

  it('takes a bucket the caller worked out as the one to write', () => {
    const given = BucketMaps.empty<number>().edit((set) => names.forEach((n, i) => set(n, i, bucketOf(n)))).maps;
    expect(given.buckets.map((m) => [...m])).toEqual(filled.buckets.map((m) => [...m]));
    const { maps, touched } = filled.edit((set) => set('node-7', 70, 3));
    expect([...touched]).toEqual([3]);
    expect(maps.buckets[3].get('node-7')).toBe(70);
  });
});
