import { sha256Hex } from '#bundle';
import type { PublishRequest } from '#contracts';
import { testDatabases } from '../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import { putBlob } from '../bundles/blobs.repository.js';
import { writerOf } from '../../../../test/support/ledger-harness.js';
import { PublishTreeHandler } from './commands/publish-tree.handler.js';
import { PublishTreeCommand } from './commands/publish-tree.command.js';

const NODES = 2000;

describe.each(testDatabases)('publish cost on $name', (database) => {
  let h: LedgerHarness;
  beforeAll(async () => {
    h = await ledgerHarness(database);
  });
  afterAll(async () => {
    await h.close();
  });

  const count = async (table: 'ledger' | 'node_versions' | 'publishes' | 'node_heads') =>
    Number((await h.db.kysely.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

  it(`writes O(1) rows when one node of ${NODES} changes`, async () => {
    const shared = Buffer.from('{"shared":true}\n');
    const changed = Buffer.from('{"changed":true}\n');
    await putBlob(h.db.kysely, sha256Hex(shared), shared);
    await putBlob(h.db.kysely, sha256Hex(changed), changed);
    const tree = (changedNode?: string): PublishRequest => ({
      message: 'fleet',
      nodes: Object.fromEntries(
        Array.from({ length: NODES }, (_, i) => {
          const node = `n${i}`;
          return [node, { artifacts: { 'flor.json': sha256Hex(node === changedNode ? changed : shared) } }];
        }),
      ),
    });
    const first = await h.publishRequest(tree());
    expect(first.changed).toHaveLength(NODES);
    const untouchedBefore = await h.db.kysely.selectFrom('node_heads').select(['etag', 'updated_at']).where('node', '=', 'n7').executeTakeFirstOrThrow();
    const before = { ledger: await count('ledger'), versions: await count('node_versions'), publishes: await count('publishes'), heads: await count('node_heads') };

    const one = await h.publishRequest(tree('n1234'));

    expect(one.changed).toEqual([{ node: 'n1234', from: 1, to: 2 }]);
    expect(one.unchanged).toBe(NODES - 1);
    expect(await count('ledger')).toBe(before.ledger + 2);
    expect(await count('node_versions')).toBe(before.versions + 1);
    expect(await count('publishes')).toBe(before.publishes + 1);
    expect(await count('node_heads')).toBe(before.heads);
    expect(await h.db.kysely.selectFrom('node_heads').select(['etag', 'updated_at']).where('node', '=', 'n7').executeTakeFirstOrThrow()).toEqual(untouchedBefore);
  });

  it(`decides a large publish against the heads of the moment, whoever moved them`, async () => {
    const contents = ['{"gen":1}\n', '{"gen":2}\n', '{"gen":3}\n'].map((c) => Buffer.from(c));
    for (const c of contents) await putBlob(h.db.kysely, sha256Hex(c), c);
    const tree = (gen: (node: string) => number): PublishRequest => ({
      message: 'heads',
      nodes: Object.fromEntries(Array.from({ length: NODES }, (_, i) => [`m${i}`, { artifacts: { 'flor.json': sha256Hex(contents[gen(`m${i}`) - 1]) } }])),
    });
    const base = tree(() => 1);
    expect((await h.publishRequest(base)).changed).toHaveLength(NODES);
    // The same tree again: nothing changed, decided from the heads this writer just committed.
    expect(await h.publishRequest(base)).toMatchObject({ publish_id: null, changed: [], unchanged: NODES });

    // Another replica (its own writer, same database) changes one node, then this writer publishes the
    // old tree: it must see the other replica's head, not the one it last wrote.
    const replica = new PublishTreeHandler(writerOf(h.db, h.keys));
    expect((await replica.execute(new PublishTreeCommand(tree((n) => (n === 'm5' ? 2 : 1)), 'replica'))).changed).toEqual([{ node: 'm5', from: 1, to: 2 }]);
    expect((await h.publishRequest(base)).changed).toEqual([{ node: 'm5', from: 2, to: 3 }]);

    // This writer's own rollback and retire move its heads too.
    await h.publishRequest(tree((n) => (n === 'm6' ? 3 : 1)));
    expect((await h.rollback('m6', 1)).changed).toEqual([{ node: 'm6', from: 2, to: 3 }]);
    await h.retire('m7');
    const again = await h.publishRequest(base);
    expect(again.changed).toEqual([{ node: 'm7', from: 2, to: 3 }]);
    expect(again.unchanged).toBe(NODES - 1);

    // A refused write leaves the heads as committed: a publish expecting another position changes nothing.
    await expect(h.publishRequest({ ...tree(() => 2), expected_position: 1 })).rejects.toThrow(/expected 1/);
    expect(await h.publishRequest(base)).toMatchObject({ publish_id: null, unchanged: NODES });
  });
});

