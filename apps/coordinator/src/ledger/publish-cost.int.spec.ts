import { sql } from 'kysely';
import { sha256Hex } from '#bundle';
import type { PublishRequest } from '#contracts';
import { testDatabases } from '../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import { ledgerBlobs, putBlob } from '../bundles/blobs.repository.js';
import type { LedgerBlobs } from './ledger-ports.js';
import { loadVersion, readVersionsPage } from './store/versions.js';
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
    Number(
      (
        await h.db.kysely
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

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
    const before = {
      ledger: await count('ledger'),
      versions: await count('node_versions'),
      publishes: await count('publishes'),
      heads: await count('node_heads'),
    };

    const one = await h.publishRequest(tree('n1234'));

    expect(one.changed).toEqual([{ node: 'n1234', from: 1, to: 2 }]);
    expect(one.unchanged).toBe(NODES - 1);
    expect(await count('ledger')).toBe(before.ledger + 2);
    expect(await count('node_versions')).toBe(before.versions + 1);
    expect(await count('publishes')).toBe(before.publishes + 1);
    expect(await count('node_heads')).toBe(before.heads);
    expect(await h.db.kysely.selectFrom('node_heads').select(['etag', 'updated_at']).where('node', '=', 'n7').executeTakeFirstOrThrow()).toEqual(
      untouchedBefore,
    );
  });

  it(`stores each stamp of an all-changed publish of ${NODES} nodes once: in the ledger, its tree, and its node's head`, async () => {
    const gens = ['{"stored":1}\n', '{"stored":2}\n'].map((c) => Buffer.from(c));
    for (const c of gens) await putBlob(h.db.kysely, sha256Hex(c), c);
    const tree = (gen: number): PublishRequest => ({
      message: 'stored once',
      nodes: Object.fromEntries(Array.from({ length: NODES }, (_, i) => [`t${i}`, { artifacts: { 'flor.json': sha256Hex(gens[gen]) } }])),
    });
    await h.publishRequest(tree(0));
    // Every table, as the database lists them (a view is not one): what a stamp costs is the rows it adds.
    const rowsPerTable = async () => {
      const tables = await h.db.kysely
        .selectFrom('information_schema.tables' as never)
        .select('table_name' as never)
        .where('table_schema' as never, '=', 'public' as never)
        .where('table_type' as never, '=', 'BASE TABLE' as never)
        .execute();
      const counts = new Map<string, number>();
      for (const { table_name: table } of tables as { table_name: string }[])
        counts.set(table, Number((await sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.table(table)}`.execute(h.db.kysely)).rows[0].n));
      return counts;
    };
    const before = await rowsPerTable();

    expect((await h.publishRequest(tree(1))).changed).toHaveLength(NODES);

    const after = await rowsPerTable();
    const grown = Object.fromEntries([...after].map(([table, n]) => [table, n - (before.get(table) ?? 0)]).filter(([, d]) => (d as number) > 0));
    // The stamps and the publish's record; each one's leaf in the tree and the complete subtrees it closes; the record's row.
    expect(grown).toEqual({ ledger: NODES + 1, ledger_tree: expect.any(Number), publishes: 1 });
    expect(grown.ledger_tree).toBeGreaterThanOrEqual(NODES + 1);
    expect(grown.ledger_tree).toBeLessThan(2 * (NODES + 1) + 64);
    // The versions are still there to read, each node's from its stamps.
    expect(await loadVersion(h.db.kysely, 't5', 2)).toMatchObject({
      version: 2,
      retired: false,
      artifacts: [{ name: 'flor.json', sha256: sha256Hex(gens[1]) }],
    });
    expect((await readVersionsPage(h.db.kysely, 't5', null, 10)).map((v) => [v.version, v.message])).toEqual([
      [2, 'stored once'],
      [1, 'stored once'],
    ]);
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
    expect(
      (
        await replica.execute(
          new PublishTreeCommand(
            tree((n) => (n === 'm5' ? 2 : 1)),
            'replica',
          ),
        )
      ).changed,
    ).toEqual([{ node: 'm5', from: 1, to: 2 }]);
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

  it("looks up the sizes of only the blobs the changed nodes' heads do not already name", async () => {
    const files = ['{"agent":1}\n', '{"flor":1}\n', '{"flor":2}\n', '{"extra":1}\n'].map((c) => Buffer.from(c));
    for (const c of files) await putBlob(h.db.kysely, sha256Hex(c), c);
    const [agent, flor1, flor2, extra] = files.map((c) => sha256Hex(c));
    const asked: string[] = [];
    const counting: LedgerBlobs = {
      sizes: (db, digests) => {
        asked.push(...digests);
        return ledgerBlobs.sizes(db, digests);
      },
      put: ledgerBlobs.put,
    };
    const publish = new PublishTreeHandler(writerOf(h.db, h.keys, counting));
    const tree = (flor: string, more: Record<string, string> = {}): PublishRequest => ({
      message: 'sizes',
      nodes: Object.fromEntries(Array.from({ length: NODES }, (_, i) => [`s${i}`, { artifacts: { 'agent.json': agent, 'flor.json': flor, ...more } }])),
    });
    expect((await publish.execute(new PublishTreeCommand(tree(flor1), 'sizes'))).changed).toHaveLength(NODES);
    expect(new Set(asked)).toEqual(new Set([agent, flor1]));

    // Every node changes one file: its other file's size comes from its head; a new file is looked up.
    asked.length = 0;
    const all = await publish.execute(new PublishTreeCommand(tree(flor2, { 'extra.json': extra }), 'sizes'));
    expect(all.changed).toHaveLength(NODES);
    expect(new Set(asked)).toEqual(new Set([flor2, extra]));
    const stamped = await h.db.kysely.selectFrom('node_heads').select('artifacts').where('node', '=', 's7').executeTakeFirstOrThrow();
    expect(stamped.artifacts).toEqual([
      { name: 'agent.json', sha256: agent, size: files[0].byteLength },
      { name: 'extra.json', sha256: extra, size: files[3].byteLength },
      { name: 'flor.json', sha256: flor2, size: files[2].byteLength },
    ]);

    // A digest the head has under another name is the same blob: its size is taken all the same.
    asked.length = 0;
    expect((await publish.execute(new PublishTreeCommand(tree(flor2, { 'extra.json': agent }), 'sizes'))).changed).toHaveLength(NODES);
    expect(asked).toEqual([]);
  });

  it('answers the repeat of the body it published last only while the ledger has not moved', async () => {
    const contents = ['{"rep":1}\n', '{"rep":2}\n'].map((c) => Buffer.from(c));
    for (const c of contents) await putBlob(h.db.kysely, sha256Hex(c), c);
    const tree = (gen: (node: string) => number): PublishRequest => ({
      message: 'repeat',
      nodes: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`r${i}`, { artifacts: { 'flor.json': sha256Hex(contents[gen(`r${i}`) - 1]) } }])),
    });
    const writer = writerOf(h.db, h.keys);
    const publish = (request: PublishRequest, digest: string) => new PublishTreeHandler(writer).execute(new PublishTreeCommand(request, 'pipeline', digest));
    const head = async () =>
      Number(
        (
          await h.db.kysely
            .selectFrom('ledger')
            .select((eb) => eb.fn.max('position').as('p'))
            .executeTakeFirstOrThrow()
        ).p,
      );

    // A body never published, or published by nobody here, is decided in full.
    expect(await writer.repeated('body-1')).toBeNull();
    const first = await publish(
      tree(() => 1),
      'body-1',
    );
    expect(first.changed).toHaveLength(50);
    // Right after it changed nodes, the same body changes nothing, and says so without deciding it.
    expect(await writer.repeated('body-1')).toEqual({ publish_id: null, position: first.position, changed: [], unchanged: 50 });
    expect(await writer.repeated('body-2')).toBeNull();

    // Another replica's publish moves the head: the repeat must be decided again, and it changes r3 back.
    const replica = new PublishTreeHandler(writerOf(h.db, h.keys));
    await replica.execute(
      new PublishTreeCommand(
        tree((n) => (n === 'r3' ? 2 : 1)),
        'replica',
      ),
    );
    expect(await writer.repeated('body-1')).toBeNull();
    const back = await publish(
      tree(() => 1),
      'body-1',
    );
    expect(back.changed).toEqual([{ node: 'r3', from: 2, to: 3 }]);
    expect(await writer.repeated('body-1')).toMatchObject({ position: back.position, unchanged: 50 });

    // Any append moves it, a retirement here too: retiring r4 and repeating must bring r4 back.
    await h.retire('r4');
    expect(await writer.repeated('body-1')).toBeNull();
    expect(
      (
        await publish(
          tree(() => 1),
          'body-1',
        )
      ).changed,
    ).toEqual([{ node: 'r4', from: 2, to: 3 }]);

    // A body that required a position repeats only while the ledger is there: after a publish that
    // changed something it is stale, and the full path refuses it.
    const at = await head();
    const pinned = await publish({ ...tree(() => 2), expected_position: at }, 'body-3');
    expect(pinned.changed).toHaveLength(50);
    expect(await writer.repeated('body-3')).toBeNull();
    await expect(publish({ ...tree(() => 2), expected_position: at }, 'body-3')).rejects.toThrow(/not the expected/);
    // The same required position when the publish changed nothing: still there, so it repeats.
    const now = await head();
    expect(await publish({ ...tree(() => 2), expected_position: now }, 'body-4')).toMatchObject({ publish_id: null, unchanged: 50 });
    expect(await writer.repeated('body-4')).toEqual({ publish_id: null, position: now, changed: [], unchanged: 50 });
    // A refused publish keeps nothing: body-3 was refused last, body-4 is still the one kept.
    expect(await writer.repeated('body-3')).toBeNull();
  });
});
