import { headBuckets } from '#bundle';
import { testDatabases } from '../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import { HeadBucketIndex } from './head-bucket-index.js';

const fleet = (n: number, gen: (node: string) => number, prefix = 'n') =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, { 'flor.json': `{"node":"${prefix}${i}","gen":${gen(`${prefix}${i}`)}}\n` }]));

describe.each(testDatabases)('head buckets kept in memory on $name', (database) => {
  let h: LedgerHarness;
  let other: LedgerHarness;
  beforeAll(async () => {
    h = await ledgerHarness(database);
    other = await ledgerHarness(database);
  });
  afterAll(async () => {
    await h?.close();
    await other?.close();
  });

  /** What the index answers, and the bucket digests of every active head read from the database, at one snapshot. */
  const read = (harness: LedgerHarness, index: HeadBucketIndex) =>
    harness.db.kysely
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => {
        const view = await index.at(trx);
        const heads = await trx.selectFrom('node_heads').select(['node', 'set_digest', 'retired']).execute();
        return { view, expected: headBuckets(heads.filter((r) => !r.retired).map((r) => [r.node, r.set_digest])), heads };
      });

  it('brought forward after publishes, a retirement and a re-add, it answers what a full read gives', async () => {
    const index = new HeadBucketIndex();
    await h.publish(fleet(300, () => 1));
    const first = await read(h, index);
    let { view, expected } = first;
    const { heads } = first;
    expect(view.buckets).toEqual(expected);
    expect(view.position).toBe((await h.head()).position);
    expect(view.nodesIn([...Array(256).keys()]).sort()).toEqual(heads.map((r) => r.node).sort());

    await h.publish(fleet(300, (n) => (n === 'n17' ? 2 : 1)));
    await h.retire('n42');
    ({ view, expected } = await read(h, index));
    expect(view.buckets).toEqual(expected);
    // A retired head has no line in its bucket's digest, but is still in the bucket.
    expect(view.nodesIn([...Array(256).keys()])).toContain('n42');
    await h.publish({ n42: { 'flor.json': 'back\n' }, fresh: { 'flor.json': 'new\n' } });
    ({ view, expected } = await read(h, index));
    expect(view.buckets).toEqual(expected);
    expect(view.position).toBe((await h.head()).position);
    // Those few events were read from the ledger; a publish of every node is read from the heads.
    await h.publish(fleet(300, () => 3));
    ({ view, expected } = await read(h, index));
    expect(view.buckets).toEqual(expected);
    expect(view.position).toBe((await h.head()).position);
  });

  it('a node stamped twice since the position kept counts with its last stamp', async () => {
    const index = new HeadBucketIndex();
    await h.publish(fleet(300, () => 4));
    expect((await read(h, index)).view.buckets).toEqual((await read(h, new HeadBucketIndex())).expected);
    await h.publish({ ...fleet(300, () => 4), n5: { 'flor.json': 'first\n' } });
    await h.publish({ ...fleet(300, () => 4), n5: { 'flor.json': 'second\n' } });
    await h.retire('n6');
    await h.publish({ ...fleet(300, () => 4), n6: { 'flor.json': 'again\n' } });
    const { view, expected, heads } = await read(h, index);
    expect(view.buckets).toEqual(expected);
    expect(heads.find((r) => r.node === 'n6')?.retired).toBe(false);
  });

  it('a database with another history past the position it kept is read in full', async () => {
    const index = new HeadBucketIndex();
    await other.publish(fleet(50, () => 1, 'a'));
    const kept = (await read(other, index)).view;
    // h holds a different ledger, further along: its event at the kept position has another hash.
    expect((await h.head()).position).toBeGreaterThan(kept.position);
    const { view, expected } = await read(h, index);
    expect(view.buckets).toEqual(expected);
    expect(view.nodesIn([...Array(256).keys()]).some((n) => n.startsWith('a'))).toBe(false);
  });

  it('follows the appends once read: brought forward without a read, and one bringing forward for reads at one head', async () => {
    const index = new HeadBucketIndex();
    await h.publish(fleet(200, () => 5));
    // Nothing kept before the first read: following it reads nothing.
    await index.follow(h.db.kysely);
    expect(index.position).toBeNull();

    const before = await read(h, index);
    expect(index.position).toBe(before.view.position);
    await h.publish(fleet(200, (n) => (n === 'n3' ? 6 : 5)));
    await h.retire('n4');
    expect(index.position).toBe(before.view.position);
    await index.follow(h.db.kysely);
    const head = await h.head();
    expect(index.position).toBe(head.position);

    // Calls while one runs make one more run, which ends current.
    const publishing = h.publish(fleet(200, () => 7));
    const follows = [index.follow(h.db.kysely), index.follow(h.db.kysely)];
    await publishing;
    follows.push(index.follow(h.db.kysely));
    await Promise.all(follows);
    expect(index.position).toBe((await h.head()).position);
    const { view, expected } = await read(h, index);
    expect(view.buckets).toEqual(expected);

    // Two reads at a head the index is not at yet share what is brought forward.
    await h.publish(fleet(200, () => 8));
    const [a, b] = await Promise.all([read(h, index), read(h, index)]);
    expect(a.view.position).toBe(b.view.position);
    expect(a.view.buckets).toBe(b.view.buckets);
    expect(a.view.buckets).toEqual(a.expected);
  });
});
