import { sql, type Kysely } from 'kysely';
import { HASH_SIZE, appendCoords, appendLeaves, leafHash, treeRoot, rootCoords, type Coord, type HashRead } from '#bundle';
import type { Database } from '../../db/index.js';

const CHUNK = 1000;
/** Rows per insert: they are one parameter, so only its size in memory bounds a statement. */
const INSERT_CHUNK = 20_000;
const key = (c: Coord): string => `${c.level}/${c.index}`;

/**
 * The stored hashes of the ledger's Merkle tree at `coords`, read in one statement per thousand,
 * as a HashRead. A coordinate not stored is an error when read: the tree is missing what its size
 * says it has.
 */
export async function readTreeHashes(db: Kysely<Database>, coords: readonly Coord[]): Promise<HashRead> {
  const loaded = new Map<string, Uint8Array>();
  const unique = [...new Map(coords.map((c) => [key(c), c])).values()];
  for (let i = 0; i < unique.length; i += CHUNK) {
    const slice = unique.slice(i, i + CHUNK);
    const { rows } = await sql<{ level: number; idx: string | number; hash: Uint8Array }>`
      SELECT t.level, t.idx, t.hash FROM ledger_tree t
      JOIN unnest(${sql.val(slice.map((c) => c.level))}::smallint[], ${sql.val(slice.map((c) => c.index))}::bigint[]) AS w(l, i) ON t.level = w.l AND t.idx = w.i`.execute(
      db,
    );
    for (const r of rows) loaded.set(`${r.level}/${r.idx}`, r.hash);
  }
  return (c) => {
    const h = loaded.get(key(c));
    if (!h) throw new Error(`the ledger tree has no hash at level ${c.level}, index ${c.index}`);
    return h;
  };
}

/** How many events the tree covers: one past its last leaf. */
export async function treeSize(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('ledger_tree')
    .select((eb) => eb.fn.max('idx').as('last'))
    .where('level', '=', 0)
    .executeTakeFirst();
  return row?.last === null || row?.last === undefined ? 0 : Number(row.last) + 1;
}

/** The chain hashes of the `count` events from position `first` on, in order: leaves' entries. */
export async function readChainHashes(db: Kysely<Database>, first: number, count: number): Promise<string[]> {
  if (count === 0) return [];
  const rows = await db
    .selectFrom('ledger')
    .select('hash')
    .where('position', '>=', first)
    .where('position', '<', first + count)
    .orderBy('position')
    .execute();
  if (rows.length !== count) throw new Error(`the ledger holds ${rows.length} of the ${count} events from position ${first}`);
  return rows.map((r) => r.hash);
}

/**
 * Extends the tree by the events after the first `size`, whose chain hashes are given: leaf i is the
 * event at position i + 1, its entry the 32 bytes of its chain hash. Stores each leaf's hash and the
 * complete subtrees they close (on average two rows an event), reading only the left siblings stored
 * before them. Events the tree does not cover yet before `size` (appended by a replica of a build
 * before the tree, during a rolling upgrade) are read from the ledger and added first; with no
 * hashes given, that is all it does: the tree catches up to the first `size` events.
 */
export async function extendTree(db: Kysely<Database>, size: number, chainHashes: readonly string[] = []): Promise<void> {
  const grower = treeGrower(db, await readTreeGrowth(db, size, chainHashes.length));
  await grower.run(chainHashes);
  grower.done();
}

/** What extending the tree by `count` events after the first `size` reads from the database. */
export interface TreeGrowth {
  /** How many events the tree covered. */
  readonly from: number;
  /** The chain hashes of the events before `size` that it did not cover. */
  readonly behind: readonly string[];
  /** The left siblings the new leaves' subtrees need. */
  readonly read: HashRead;
  readonly count: number;
}

/**
 * Reads what `treeGrower` needs to extend the tree by `count` events after the first `size`: the append
 * path reads it before it sends the events' rows, so that the new hashes are computed while
 * PostgreSQL writes those rows (a read sent after them would wait for them).
 */
export async function readTreeGrowth(db: Kysely<Database>, size: number, count: number): Promise<TreeGrowth> {
  const from = await treeSize(db);
  if (from > size) throw new Error(`the ledger tree covers ${from} events, more than the ${size} before this append`);
  const behind = await readChainHashes(db, from + 1, size - from);
  const read = await readTreeHashes(db, appendCoords(from, behind.length + count));
  return { from, behind, read, count };
}

/**
 * Extends the tree as `growth` read it run by run: `run` with the chain hashes of the next events
 * computes their hashes before its first await, and stores them in statements that follow any the
 * caller sent before; `done` checks that every event it was read for came. A left sibling made by an
 * earlier run is the last hash made on its level, so that is all kept between runs.
 */
export function treeGrower(db: Kysely<Database>, growth: TreeGrowth): { run(chainHashes: readonly string[]): Promise<void>; done(): void } {
  let at = growth.from;
  let behind = growth.behind;
  let left = growth.count;
  const lastMade = new Map<number, { readonly index: number; readonly hash: Uint8Array }>();
  const read: HashRead = (c) => {
    const made = lastMade.get(c.level);
    return made?.index === c.index ? made.hash : growth.read(c);
  };
  return {
    async run(chainHashes) {
      if (chainHashes.length > left) throw new Error(`the ledger tree was read for ${growth.count} new events, and is given more`);
      left -= chainHashes.length;
      const hashes = [...behind, ...chainHashes];
      behind = [];
      if (hashes.length === 0) return;
      const made = appendLeaves(
        at,
        hashes.map((h) => leafHash(Buffer.from(h, 'hex'))),
        read,
      );
      at += hashes.length;
      for (const m of made) lastMade.set(m.coord.level, { index: m.coord.index, hash: m.hash });
      for (let i = 0; i < made.length; i += INSERT_CHUNK) await insertHashes(db, made.slice(i, i + INSERT_CHUNK));
    },
    done() {
      if (left !== 0) throw new Error(`the ledger tree was read for ${growth.count} new events, and is given ${growth.count - left}`);
    },
  };
}

/**
 * Stores hashes in one statement: the hashes as one bytea parameter, HASH_SIZE bytes each, sent as bytes
 * (`pg` sends a Buffer in binary), and beside it each run of consecutive indexes of a level, which
 * is all an append makes (one run a level). A JSON array of [level, index, hex] was 90 bytes a row
 * for PostgreSQL to parse; an array parameter per column made `pg` escape every element of each.
 */
async function insertHashes(db: Kysely<Database>, made: readonly { coord: Coord; hash: Buffer }[]): Promise<void> {
  const ordered = [...made].sort((a, b) => a.coord.level - b.coord.level || a.coord.index - b.coord.index);
  // Sorted, a run goes on while the level is the same and the index the next one.
  const runs: { level: number; first: number; count: number; at: number }[] = [];
  ordered.forEach((m, at) => {
    const run = runs.at(-1);
    if (run && run.level === m.coord.level && run.first + run.count === m.coord.index) run.count++;
    else runs.push({ level: m.coord.level, first: m.coord.index, count: 1, at });
  });
  const hashes = Buffer.concat(ordered.map((m) => m.hash));
  if (hashes.length !== ordered.length * HASH_SIZE) throw new Error(`a ledger tree hash is not ${HASH_SIZE} bytes`);
  await sql`INSERT INTO ledger_tree (level, idx, hash)
    SELECT r.level, r.first + g.i, substring(${hashes}::bytea FROM (r.at + g.i) * ${HASH_SIZE} + 1 FOR ${HASH_SIZE})
    FROM jsonb_to_recordset(${JSON.stringify(runs)}::jsonb) AS r(level smallint, first bigint, count integer, at integer),
      LATERAL generate_series(0, r.count - 1) AS g(i)`.execute(db);
}

/** The root of the tree of the first `size` events. */
export async function readTreeRoot(db: Kysely<Database>, size: number): Promise<Buffer> {
  return treeRoot(size, await readTreeHashes(db, rootCoords(size)));
}
