import { sha256Hex } from '#bundle';
import type { PublishRequest } from '#contracts';
import { testDatabases } from '../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import { putBlob } from '../bundles/blobs.repository.js';

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
});
