import { testDatabases } from '../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import { PublishTreeCommand } from './commands/publish-tree.command.js';
import { PublishTreeHandler } from './commands/publish-tree.handler.js';
import { verifyLedger } from './store/verify.js';
import { rebuildProjections } from '../projections/index.js';

describe.each(testDatabases)('operator confirmation on $name', (database) => {
  let h: LedgerHarness;
  beforeEach(async () => {
    h = await ledgerHarness(database);
    await h.publish({ a: { 'flor.json': 'a1' }, b: { 'flor.json': 'b1' } });
  });
  afterEach(async () => {
    await h.close();
  });

  const confirmOf = async (node: string) =>
    h.db.kysely.selectFrom('node_heads').select(['version', 'confirm_within', 'confirmed_by']).where('node', '=', node).executeTakeFirstOrThrow();
  const confirm = (publishId: string, actor = 'alice') => h.writer.write({ actor }, { type: 'confirm_publish', publishId });
  async function publishWithin(tree: Record<string, string>, within: number) {
    const { putBlob } = await import('../bundles/blobs.repository.js');
    const { createHash } = await import('node:crypto');
    const nodes: Record<string, { artifacts: Record<string, string> }> = {};
    for (const [node, content] of Object.entries(tree)) {
      const sha = createHash('sha256').update(content).digest('hex');
      await putBlob(h.db.kysely, sha, Buffer.from(content));
      nodes[node] = { artifacts: { 'flor.json': sha } };
    }
    return new PublishTreeHandler(h.writer).execute(new PublishTreeCommand({ message: 'needs confirming', nodes, confirm_within: within }, 'bob'));
  }

  it('records the window on the heads it stamps, and a confirmation with who, once; a rebuild gives the same', async () => {
    const r = await publishWithin({ a: 'a2', b: 'b2' }, 600);
    expect(await confirmOf('a')).toEqual({ version: 2, confirm_within: 600, confirmed_by: null });
    const before = await h.head();
    const c = await confirm(r.publish_id!);
    expect(c).toMatchObject({ publish_id: null, position: before.position + 1, unchanged: 2 });
    expect(await confirmOf('a')).toEqual({ version: 2, confirm_within: 600, confirmed_by: 'alice' });
    const again = await h.head();
    await expect(confirm(r.publish_id!, 'carol')).rejects.toThrow(
      expect.objectContaining({ code: 'already_confirmed', message: expect.stringContaining('by alice') }),
    );
    expect(await h.head()).toEqual(again);
    await rebuildProjections(h.db.kysely);
    expect(await confirmOf('b')).toEqual({ version: 2, confirm_within: 600, confirmed_by: 'alice' });
    expect((await verifyLedger(h.db.kysely)).ok).toBe(true);
  });

  it('confirms only the heads still at the publish: a node published over since keeps its own state', async () => {
    const r = await publishWithin({ a: 'a2', b: 'b2' }, 600);
    await h.publish({ b: { 'flor.json': 'b3' } });
    expect((await confirm(r.publish_id!)).unchanged).toBe(1);
    expect(await confirmOf('a')).toMatchObject({ confirmed_by: 'alice' });
    expect(await confirmOf('b')).toEqual({ version: 3, confirm_within: null, confirmed_by: null });
  });

  it('refuses, changing nothing: an unknown publish, one without a window, one no node runs any more', async () => {
    const plain = await h.publish({ a: { 'flor.json': 'a2' } });
    const head = await h.head();
    await expect(confirm('00000000-0000-4000-8000-000000000000')).rejects.toThrow(expect.objectContaining({ code: 'unknown_publish' }));
    await expect(confirm(plain.publish_id!)).rejects.toThrow(
      expect.objectContaining({ code: 'not_confirmable', message: expect.stringContaining('without --confirm-within') }),
    );
    expect(await h.head()).toEqual(head);
    const gone = await publishWithin({ b: 'b2' }, 60);
    await h.publish({ b: { 'flor.json': 'b3' } });
    await expect(confirm(gone.publish_id!)).rejects.toThrow(
      expect.objectContaining({ code: 'not_confirmable', message: expect.stringContaining('nothing to confirm') }),
    );
  });
});
