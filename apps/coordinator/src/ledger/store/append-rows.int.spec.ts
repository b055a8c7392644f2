import { sql, type Kysely } from 'kysely';
import { canonicalJson, sha256Hex } from '#bundle';
import { testDatabases } from '../../../../../test/support/databases.js';
import type { Database, Db } from '../../db/index.js';
import type { CheckpointSigner, TrustHead } from '../ledger-ports.js';
import { project, projectStampRun } from '../../projections/project.js';
import type { LedgerEvent } from '../domain/ledger.events.js';
import { appendEvents, type AppendInput } from './append.js';
import { readLedgerHead } from './read-head.js';
import { readTreeRoot, treeSize } from './tree.js';
import { appendUnderLock } from './append-path.js';
import { verifyLedger } from './verify.js';

/**
 * The rows an append writes (the ledger's, the Merkle tree's, the node heads and versions, the
 * publishes) for fixed events at a fixed time, held to digests of what the append path wrote before
 * its rows went in as one array parameter per column: taken from the build before that change, on
 * both databases (the publishes' from the build before their row was read from the ledger's). A
 * publish larger than one statement's rows, strings that an array literal must escape, and a second
 * publish moving some of the heads again.
 */
const NODES = 12_000;
const AT = new Date('2026-12-02T10:20:30.456Z');
const MESSAGE = 'all "quoted" \\ back\\slashed, {braced}, comma, NULL, é ✓ 😀\nand a newline';
const ACTOR = 'ci "pipeline" \\ ö';

const EXPECTED = {
  first: {
    position: NODES + 1,
    head: '87570cc6f34e70cb5aa1a34c975de53d447a149c43a18828b652f6f85805baca',
    root: '1d45a7dbd9ff301ded6e63e13475645f961327510d1a92b445f69c9cca707a93',
    ledger: '9520c6c2606acbd3c995ff293c1a38178eafbee33a91179cfc7538eb12230c96',
    heads: '0470350c34cbffb84e37dfcfb781b9a27765fda516a9166d3ecbe93f1925eccf',
    versions: '0923c964a008a1964e35da837aa41d3183d6647fe98e68477a75c74cc33adab8',
    tree: '69da9e6d451ed5b8c5736280db3bc16bddc17ded6c95015afba0e25c58d8a24c',
    publishes: 'c91112f7cc168a0b33656b4298a18a412a0157ff2becaa3d1878fbad166acfd7',
  },
  second: {
    position: NODES + 5,
    head: '4bf72a5973b87bd6dd946e1ac115e6ae23b2a64d565fcfaed47c1397982c6d64',
    root: 'b6899402666ef3fc9f033735ce5beb3c91e1e1a5950b8a02a792facf807e0146',
    ledger: '14dd10677ae5722887737d33d42f048aa1bf0d476f86d0e1af6f3a311b18a3e8',
    heads: 'a12bbea6e15aac1f616eb77f5c193c0be111873d4b18d02a704c9ae0391461f6',
    versions: 'c0d8ba62b5685d413cba20bccb0ae581106f89af89fa146daa376650487bf06d',
    tree: '1cc69a137ccb7eb760b45c6595a098580de1d376d2cd065fee09b54040c0a911',
    publishes: '629cba76efa68f9d8ada6a49862f078500e8badf5137abb239394adecb61016d',
  },
};

const digest = (n: number): string => sha256Hex(`content ${n}`);
const publishId = (n: number): string => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

function stamp(node: string, version: number, publish: string, extra: { retired?: boolean; restored_from?: number } = {}): LedgerEvent {
  const artifacts = extra.retired
    ? []
    : [
        { name: 'agent.json', sha256: digest(version), size: 100 + version },
        { name: `flor "${node}" \\.json`, sha256: digest(version * 7 + node.length), size: 2000 },
      ];
  return {
    type: 'node_set_stamped',
    stream: `node:${node}`,
    revision: version,
    data: {
      node,
      version,
      set_digest: sha256Hex(canonicalJson(artifacts)),
      retired: extra.retired ?? false,
      artifacts,
      publish_id: publish,
      ...(extra.restored_from !== undefined ? { restored_from: extra.restored_from } : {}),
    },
  };
}

function record(publish: string, changed: readonly { node: string; from: number; to: number }[], confirmWithin?: number): LedgerEvent {
  return {
    type: 'publish_recorded',
    stream: `publish:${publish}`,
    revision: 1,
    data: { publish_id: publish, kind: 'publish', message: MESSAGE, changed, unchanged: 0, ...(confirmWithin ? { confirm_within: confirmWithin } : {}) },
  };
}

const inputsOf = (events: readonly LedgerEvent[]): AppendInput[] =>
  events.map((event) => ({ event, meta: event.type === 'node_set_stamped' ? { actor: ACTOR, kid: 'kid-"1"' } : { actor: ACTOR } }));

const nodeName = (i: number): string => `node-${String(i).padStart(5, '0')}`;

/** A first publish of every node, and a second that moves three of them (one retired, one restored). */
function firstPublish(): LedgerEvent[] {
  const id = publishId(1);
  const stamps = Array.from({ length: NODES }, (_, i) => stamp(nodeName(i), 1, id));
  return [
    ...stamps,
    record(
      id,
      stamps.map((_, i) => ({ node: nodeName(i), from: 0, to: 1 })),
      600,
    ),
  ];
}

function secondPublish(): LedgerEvent[] {
  const id = publishId(2);
  return [
    stamp(nodeName(1), 2, id),
    stamp(nodeName(2), 2, id, { retired: true }),
    stamp(nodeName(3), 2, id, { restored_from: 1 }),
    record(
      id,
      [1, 2, 3].map((i) => ({ node: nodeName(i), from: 1, to: 2 })),
    ),
  ];
}

/** The signing trust, which these rows do not depend on: no checkpoint is signed here. */
const unsigned: CheckpointSigner = {
  trustUnderLock: async () => ({ version: 1, signingKid: 'kid-"1"', doc: {} as TrustHead['doc'], document: '{}', digest: '' }),
  stampCheckpoint: async () => undefined,
};

/** The append path's writes in one transaction: the rows, the tree and the read models. */
async function append(db: Kysely<Database>, events: readonly LedgerEvent[]): Promise<void> {
  await db.transaction().execute((trx) =>
    appendUnderLock(trx, unsigned, async () => ({ inputs: inputsOf(events), result: null, recordedAt: AT }), {
      stamps: (run, decided) => projectStampRun(trx, run, decided),
      rest: (stored) => project(trx, stored, true),
    }),
  );
}

/** sha256 of a table's rows, every column as PostgreSQL writes it as text (times in UTC): the same on both databases. */
async function rowsDigest(db: Kysely<Database>, query: string): Promise<string> {
  const { rows } = await sql.raw<Record<string, string | null>>(query).execute(db);
  return sha256Hex(canonicalJson(rows.map((r) => Object.values(r))));
}

const utc = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`;

async function state(db: Kysely<Database>) {
  const head = await readLedgerHead(db);
  return {
    position: head.position,
    head: head.hash,
    root: (await readTreeRoot(db, head.position)).toString('hex'),
    ledger: await rowsDigest(
      db,
      `SELECT position::text, stream, revision::text, type, data::text, meta::text, ${utc('recorded_at')}, prev_hash, hash FROM ledger ORDER BY position`,
    ),
    heads: await rowsDigest(
      db,
      `SELECT node, version::text, set_digest, retired::text, artifacts::text, kid, etag, position::text, publish_id, ${utc('updated_at')},
        confirm_within::text, confirmed_by FROM node_heads ORDER BY node`,
    ),
    versions: await rowsDigest(
      db,
      `SELECT node, version::text, set_digest, retired::text, artifacts::text, publish_id, actor, message, ${utc('recorded_at')}, position::text
        FROM node_versions ORDER BY node, version`,
    ),
    tree: await rowsDigest(db, `SELECT level::text, idx::text, encode(hash, 'hex') FROM ledger_tree ORDER BY level, idx`),
    publishes: await rowsDigest(
      db,
      `SELECT publish_id, position::text, kind, actor, message, changed::text, unchanged::text, ${utc('recorded_at')}, accepted_ineligible::text
        FROM publishes ORDER BY position`,
    ),
  };
}

describe.each(testDatabases)('the rows an append writes, on $name', (database) => {
  let db: Db;
  beforeAll(async () => {
    db = await database.open();
  });
  afterAll(() => db.close());

  it('are those the append path wrote before, byte for byte, and a failed append leaves none of its own', async () => {
    await append(db.kysely, firstPublish());
    const first = await state(db.kysely);
    expect(first).toEqual(EXPECTED.first);

    await append(db.kysely, secondPublish());
    const second = await state(db.kysely);
    expect(second).toEqual(EXPECTED.second);
    expect(await verifyLedger(db.kysely)).toEqual({ ok: true, position: NODES + 5, hash: second.head });

    // A publish whose last event collides with one the ledger holds (a stream revision taken), past the
    // first statement's rows: the whole append is rolled back, the rows already sent included. The error
    // is the rows' own, not that of the tree's or the read models' statements sent after them.
    const id = publishId(3);
    const stamps = Array.from({ length: NODES }, (_, i) => stamp(nodeName(i), i === NODES - 1 ? 1 : 3, id));
    await expect(append(db.kysely, [...stamps, record(id, [])])).rejects.toThrow('duplicate key value violates unique constraint "ledger_stream_revision_key"');
    expect(await state(db.kysely)).toEqual(second);
    expect(await treeSize(db.kysely)).toBe(NODES + 5);

    // An event of the second run that cannot be written (a number JSON has no text for): the first run's
    // rows, tree and heads were sent before it was met, and go with the rest of the transaction.
    const unwritable = publishId(5);
    const many = Array.from({ length: NODES }, (_, i) => stamp(nodeName(i), 3, unwritable));
    (many[NODES - 10].data as { version: number }).version = Infinity;
    await expect(append(db.kysely, [...many, record(unwritable, [])])).rejects.toThrow('canonicalJson: non-finite number');
    expect(await state(db.kysely)).toEqual(second);
    expect(await treeSize(db.kysely)).toBe(NODES + 5);

    // The heads and versions are read from the ledger rows between the first stamp and the last: stamps
    // given with a gap among them (the middle one of a publish left out) are refused, and the append
    // that asked is rolled back whole.
    const gapped = publishId(4);
    const three = [4, 5, 6].map((i) => stamp(nodeName(i), 2, gapped));
    const refused = db.kysely.transaction().execute(async (trx) => {
      const stored = await appendEvents(trx, await readLedgerHead(trx), inputsOf([...three, record(gapped, [])]), AT);
      expect(stored.map((e) => e.position)).toEqual([NODES + 6, NODES + 7, NODES + 8, NODES + 9]);
      await project(trx, [stored[0], stored[2], stored[3]]);
    });
    await expect(refused).rejects.toThrow(
      `projecting 2 stamps at ledger positions ${NODES + 6}-${NODES + 8} found 3: the stamps given are not a run of the ledger`,
    );
    expect(await state(db.kysely)).toEqual(second);

    // A publish's row is read from its record's ledger row: a record given at a position the ledger
    // holds something else at is refused, not projected from that.
    const misplaced = publishId(6);
    const moved = db.kysely.transaction().execute(async (trx) => {
      const stored = await appendEvents(trx, await readLedgerHead(trx), inputsOf([stamp(nodeName(7), 2, misplaced), record(misplaced, [])]), AT);
      await project(trx, [{ ...stored[1], position: stored[0].position }]);
    });
    await expect(moved).rejects.toThrow(`projecting publish ${misplaced} found no record of it at ledger position ${NODES + 6}`);
    expect(await state(db.kysely)).toEqual(second);
  });
});
