import { labelBuckets, sha256Hex } from '#bundle';
import type { NodeLabels, PublishRequest } from '#contracts';
import { sql } from 'kysely';
import { testDatabases } from '../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import { putBlob } from '../bundles/blobs.repository.js';
import { PublishTreeCommand } from '../ledger/commands/publish-tree.command.js';
import { PublishTreeHandler } from '../ledger/commands/publish-tree.handler.js';
import type { AdmitChanges } from '../ledger/index.js';
import { recordedLabelBuckets, recordedLabels } from './labels-memo.js';
import { readAllNodeLabels } from './node-labels.repository.js';
import { scopeGuard } from './scope-guard.js';

const NODES = 400;
const names = Array.from({ length: NODES }, (_, i) => `n${i}`);
const labelsOf = (gen: number): Record<string, NodeLabels> =>
  Object.fromEntries(names.map((n, i) => [n, { tags: ['web', `site-${(i + gen) % 9}`], groups: i % 4 === 0 ? ['edge'] : [] }]));

describe.each(testDatabases)('recorded labels kept in memory on $name', (database) => {
  let h: LedgerHarness;
  let tree: PublishRequest['nodes'];
  beforeAll(async () => {
    h = await ledgerHarness(database);
    const bytes = Buffer.from('{}\n');
    await putBlob(h.db.kysely, sha256Hex(bytes), bytes);
    tree = Object.fromEntries(names.map((n) => [n, { artifacts: { 'flor.json': sha256Hex(bytes) } }]));
  });
  afterAll(() => h?.close());

  const publish = (labels: Record<string, NodeLabels>, admit: AdmitChanges | undefined = scopeGuard(null, 'publish', labels)) =>
    new PublishTreeHandler(h.writer).execute(new PublishTreeCommand({ message: 'labels', nodes: tree, labels }, 'tester', undefined, admit));
  /** The bucket digests of the labels as the table holds them. */
  const fromTable = async () => labelBuckets(await readAllNodeLabels(h.db.kysely));

  it('after every node, one node, and a node cleared are written, the buckets are those of the table', async () => {
    await publish(labelsOf(0));
    expect(await recordedLabelBuckets(h.db.kysely)).toEqual(await fromTable());
    await publish({ n7: { tags: ['db'], groups: ['core'] } });
    expect(await recordedLabelBuckets(h.db.kysely)).toEqual(await fromTable());
    await publish({ n8: { tags: [], groups: [] }, n9: { tags: ['web', 'web', 'a'], groups: ['z', 'b'] } });
    // The copy carried forward holds the labels as stored (each list de-duplicated and sorted), as a read gives them.
    await h.db.kysely.transaction().execute(async (trx) => {
      const copy = (await recordedLabels(trx)).labels;
      expect(copy.get('n9')).toEqual({ tags: ['a', 'web'], groups: ['b', 'z'] });
      expect(copy).toEqual(await readAllNodeLabels(trx));
    });
    expect(await recordedLabelBuckets(h.db.kysely)).toEqual(await fromTable());
  });

  it('a write this process made is taken as the copy once committed: the next read does not read the table again', async () => {
    await recordedLabelBuckets(h.db.kysely);
    await publish({ n11: { tags: ['cache'], groups: [] } });
    const written = await fromTable();
    // A row changed behind the version's back: a read of the table would see it, the copy does not.
    await sql`UPDATE node_labels SET tags = '["behind"]'::jsonb WHERE node = 'n12'`.execute(h.db.kysely);
    expect(await recordedLabelBuckets(h.db.kysely)).toEqual(written);
    expect(written).not.toEqual(await fromTable());
    await sql`UPDATE node_labels SET tags = '["web"]'::jsonb WHERE node = 'n12'`.execute(h.db.kysely);
    await publish({ n12: { tags: ['web'], groups: [] } });
  });

  it('a write rolled back leaves the labels before it, and its copy is never taken', async () => {
    const before = await recordedLabelBuckets(h.db.kysely);
    const guard = scopeGuard(null, 'publish', labelsOf(5))!;
    const refusing: AdmitChanges = async (trx, changed) => {
      await guard(trx, changed);
      throw new Error('refused after the labels were written');
    };
    await expect(publish(labelsOf(5), refusing)).rejects.toThrow('refused after the labels were written');
    expect(await recordedLabelBuckets(h.db.kysely)).toEqual(before);
    expect(await fromTable()).toEqual(before);
    // The next write builds on the labels the table holds, not on the rolled-back ones.
    await publish({ n13: { tags: ['late'], groups: [] } });
    expect(await recordedLabelBuckets(h.db.kysely)).toEqual(await fromTable());
  });

  it('labels another replica wrote, with a version of its own, are read from the table', async () => {
    await recordedLabelBuckets(h.db.kysely);
    await h.db.kysely.transaction().execute(async (trx) => {
      await sql`UPDATE node_labels SET tags = '["elsewhere"]'::jsonb WHERE node = 'n14'`.execute(trx);
      await sql`UPDATE node_labels_version SET version = 'another-replica' WHERE id = 1`.execute(trx);
    });
    const buckets = await recordedLabelBuckets(h.db.kysely);
    expect(buckets).toEqual(await fromTable());
    // And a write after it builds on what the other replica wrote.
    await publish({ n15: { tags: ['after'], groups: [] } });
    expect(await recordedLabelBuckets(h.db.kysely)).toEqual(await fromTable());
    expect((await readAllNodeLabels(h.db.kysely)).get('n14')?.tags).toEqual(['elsewhere']);
  });
});
