import { sql, type Kysely } from 'kysely';
import { appendLeaves, leafHash, rootCoords, type Coord } from '#bundle';

/**
 * The ledger's Merkle tree (RFC 6962): every complete subtree's hash, by level and index, so a root
 * or a proof is a fold of a few rows and the tree can be served as tiles. Leaf i is the event at
 * position i + 1, its entry the 32 bytes of that event's chain hash. The append path extends it with
 * every append; here it is built for the events already there, a few thousand at a time (with the
 * database alone, as a migration must: the coordinator's code may change after it). And the
 * checkpoint row gains the tree's signed note beside the chain's: agents that know only the
 * chain's keep being served theirs.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('ledger_tree')
    .addColumn('level', 'smallint', (c) => c.notNull())
    .addColumn('idx', 'bigint', (c) => c.notNull())
    .addColumn('hash', 'bytea', (c) => c.notNull())
    .addPrimaryKeyConstraint('ledger_tree_pkey', ['level', 'idx'])
    .execute();
  await db.schema.alterTable('ledger_checkpoint').addColumn('tree_note', 'text').execute();
  const stored = new Map<string, Uint8Array>();
  const key = (c: Coord) => `${c.level}/${c.index}`;
  for (let size = 0; ;) {
    const { rows } = await sql<{
      position: string;
      hash: string;
    }>`SELECT position, hash FROM ledger WHERE position > ${size} ORDER BY position LIMIT 5000`.execute(db);
    if (rows.length === 0) break;
    rows.forEach((r, i) => {
      if (Number(r.position) !== size + i + 1)
        throw new Error(`ledger position ${r.position} follows ${size + i}: the ledger has a gap, and a tree over it would prove nothing`);
    });
    // The left siblings a batch needs were made by the batches before it, kept here until then.
    const made = appendLeaves(
      size,
      rows.map((r) => leafHash(Buffer.from(r.hash, 'hex'))),
      (c) => stored.get(key(c)) ?? missing(c),
    );
    for (const m of made) stored.set(key(m.coord), m.hash);
    for (let i = 0; i < made.length; i += 1000) {
      const slice = made.slice(i, i + 1000);
      await sql`INSERT INTO ledger_tree (level, idx, hash)
        SELECT l, i, decode(h, 'hex') FROM unnest(${sql.val(slice.map((m) => m.coord.level))}::smallint[], ${sql.val(slice.map((m) => m.coord.index))}::bigint[], ${sql.val(slice.map((m) => m.hash.toString('hex')))}::text[]) AS t(l, i, h)`.execute(
        db,
      );
    }
    size += rows.length;
    // Only the ones a later batch can still need stay in memory: the complete subtrees that make up the tree so far.
    const peaks = new Set(rootCoords(size).map(key));
    for (const k of [...stored.keys()]) if (!peaks.has(k)) stored.delete(k);
  }
}

function missing(c: Coord): never {
  throw new Error(`ledger tree hash ${c.level}/${c.index} is missing while it is built`);
}
