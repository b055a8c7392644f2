/**
 * The ledger's rows into the database, the way the append sends them (COPY, `copyInto`) against the
 * statement it sent before, which stays here as the baseline: per 10,000 rows one statement carrying
 * the rows as a JSON document read as jsonb, beside their hashes as one bytea parameter. Both ways
 * send every chunk without waiting for the one before, as the append does, and are timed from the
 * rows' texts (the canonical data and meta, the hashes) to the last chunk written, in one
 * transaction that is then rolled back; the two ways run in turns on one database, which is vacuumed
 * after each. Prints each way's median and the ratio, on a throwaway PostgreSQL and on the embedded
 * database (fewer rows: it is the small fleet's database). Both ways must leave the same rows, or the
 * benchmark exits 1.
 *
 *   npm run bench:ledger-rows [-- --rows 100000 --embedded-rows 10000 --rounds 5]
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { HASH_SIZE, canonicalJson, sha256Hex } from '#bundle';
import { openDatabase, openMemoryDatabase, type Db } from '../apps/coordinator/src/db/connect.js';
import { migrateToLatest } from '../apps/coordinator/src/db/migrate.js';
import { copyInto } from '../apps/coordinator/src/db/copy-in.js';
import type { Database } from '../apps/coordinator/src/db/database.js';
import { LEDGER_COLUMNS, ledgerLine } from '../apps/coordinator/src/ledger/store/append.js';
import { parseCli } from './support/cli.js';
import { runBench, UsageError } from './support/cleanup.js';
import { startThrowawayPostgres } from './support/postgres.js';
import { fmt, formatTable, median, ms } from './support/table.js';

const CHUNK = 10_000;
const RECORDED_AT = '2026-12-04T10:20:30.456Z';
const say = (line: string): void => void process.stderr.write(`${line}\n`);

/** A row as the append has it once the event is hashed: the texts its chain hash covered, and the hashes. */
interface Row {
  readonly position: number;
  readonly stream: string;
  readonly revision: number;
  readonly type: string;
  readonly data: string;
  readonly meta: string;
  readonly prevHash: string;
  readonly hash: string;
  readonly hashBytes: Buffer;
}

/** A publish's stamps: one per node, two artifacts each, shaped as the decider makes them. */
function stampRows(count: number): Row[] {
  const meta = canonicalJson({ actor: 'bench', kid: 'k-2026-12' });
  const rows: Row[] = [];
  let prev = '0'.repeat(64);
  for (let i = 0; i < count; i++) {
    const node = `fleet-${String(i).padStart(6, '0')}`;
    const artifacts = [
      { name: 'agent.json', sha256: sha256Hex(`agent ${i}`), size: 312 + (i % 97) },
      { name: 'flor.json', sha256: sha256Hex(`flor ${i}`), size: 2048 + (i % 511) },
    ];
    const data = canonicalJson({
      artifacts,
      node,
      publish_id: '00000000-0000-4000-8000-000000000001',
      retired: false,
      set_digest: sha256Hex(canonicalJson(artifacts)),
      version: 1,
    });
    const hash = sha256Hex(`${prev}${i}`);
    rows.push({
      position: i + 1,
      stream: `node:${node}`,
      revision: 1,
      type: 'node_set_stamped',
      data,
      meta,
      prevHash: prev,
      hash,
      hashBytes: Buffer.from(hash, 'hex'),
    });
    prev = hash;
  }
  return rows;
}

/** The baseline: the statement the append sent before COPY, its document and hashes built per chunk. */
function sendByStatement(trx: Transaction<Database>, rows: readonly Row[]): Promise<unknown>[] {
  const sent: Promise<unknown>[] = [];
  for (let i = 0; i < rows.length; i += CHUNK) {
    const chunk = rows.slice(i, i + CHUNK);
    const hashes = Buffer.allocUnsafe((chunk.length + 1) * HASH_SIZE);
    hashes.write(chunk[0].prevHash, 0, 'hex');
    const doc: string[] = [];
    chunk.forEach((r, j) => {
      hashes.set(r.hashBytes, (j + 1) * HASH_SIZE);
      doc.push(`{"d":${r.data},"m":${r.meta},"r":${r.revision},"s":${JSON.stringify(r.stream)},"t":${JSON.stringify(r.type)}}`);
    });
    const before = chunk[0].position - 1;
    sent.push(
      sql`INSERT INTO ledger (position, stream, revision, type, data, meta, recorded_at, prev_hash, hash)
        SELECT ${before}::bigint + e.n, e.s, e.r, e.t, e.d, e.m, ${RECORDED_AT}::timestamptz,
          encode(substring(k.h FROM (e.n::integer - 1) * ${HASH_SIZE} + 1 FOR ${HASH_SIZE}), 'hex'),
          encode(substring(k.h FROM e.n::integer * ${HASH_SIZE} + 1 FOR ${HASH_SIZE}), 'hex')
        FROM (SELECT ${hashes}::bytea AS h) AS k, ROWS FROM (jsonb_to_recordset(${`[${doc.join(',')}]`}::jsonb) AS (d jsonb, m jsonb, r integer, s text, t text)) WITH ORDINALITY AS e(d, m, r, s, t, n)`.execute(
        trx,
      ),
    );
  }
  return sent;
}

/** The append's way: COPY, a line of text per row. */
function sendByCopy(trx: Transaction<Database>, rows: readonly Row[]): Promise<unknown>[] {
  const sent: Promise<unknown>[] = [];
  for (let i = 0; i < rows.length; i += CHUNK) {
    let lines = '';
    for (const r of rows.slice(i, i + CHUNK)) lines += ledgerLine(r.position, r, r.data, r.meta, RECORDED_AT, r.prevHash, r.hash);
    sent.push(trx.executeQuery(copyInto('ledger', LEDGER_COLUMNS, lines)));
  }
  return sent;
}

const WAYS = { statement: sendByStatement, COPY: sendByCopy } as const;
type Way = keyof typeof WAYS;

class RolledBack extends Error {}

/** One way's run: its time to the last row written, and a digest of the rows as the database holds them. */
async function run(db: Kysely<Database>, way: Way, rows: readonly Row[]): Promise<{ ms: number; digest: string }> {
  let taken = 0;
  let digest = '';
  try {
    await db.transaction().execute(async (trx) => {
      const t = performance.now();
      const sent = WAYS[way](trx, rows);
      for (const s of sent) await s;
      taken = performance.now() - t;
      const held = await sql<{
        d: string;
      }>`SELECT md5(string_agg(concat_ws('|', position, stream, revision, type, data::text, meta::text, recorded_at, prev_hash, hash), E'\n' ORDER BY position)) AS d FROM ledger`.execute(
        trx,
      );
      digest = held.rows[0].d;
      throw new RolledBack();
    });
  } catch (err) {
    if (!(err instanceof RolledBack)) throw err;
  }
  await sql`VACUUM ledger`.execute(db);
  return { ms: taken, digest };
}

async function measure(name: string, db: Db, count: number, rounds: number): Promise<string[][]> {
  await migrateToLatest(db.kysely);
  const rows = stampRows(count);
  const times: Record<Way, number[]> = { statement: [], COPY: [] };
  const digests = new Set<string>();
  for (let round = 0; round < rounds; round++) {
    // Each way first in turn, so neither always meets the other's vacuum.
    const order: Way[] = round % 2 === 0 ? ['statement', 'COPY'] : ['COPY', 'statement'];
    for (const way of order) {
      const { ms: taken, digest } = await run(db.kysely, way, rows);
      times[way].push(taken);
      digests.add(digest);
    }
    say(`  ${name}: round ${round + 1} of ${rounds}`);
  }
  if (digests.size !== 1) throw new Error(`on ${name}, the two ways left different rows (${digests.size} digests)`);
  const base = median(times.statement);
  const copy = median(times.COPY);
  return [
    [`${name}, ${fmt(count)} rows: statement (before)`, ms(base), `${fmt((base * 1000) / count, 1)} µs`, '1.00×'],
    [`${name}, ${fmt(count)} rows: COPY (now)`, ms(copy), `${fmt((copy * 1000) / count, 1)} µs`, `${(base / copy).toFixed(2)}×`],
  ];
}

runBench('ledger-rows', async () => {
  const { values } = parseCli({
    rows: { type: 'string', default: '100000' },
    'embedded-rows': { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '5' },
  });
  const [count, embeddedCount, rounds] = [values.rows, values['embedded-rows'], values.rounds].map(Number);
  if (![count, embeddedCount, rounds].every((n) => Number.isInteger(n) && n >= 1))
    throw new UsageError('--rows, --embedded-rows and --rounds take whole numbers of 1 or more');
  say('starting a throwaway PostgreSQL');
  const postgres = await openDatabase({ databaseUrl: (await startThrowawayPostgres()).url, dataDir: '/nonexistent' });
  const table: string[][] = [];
  try {
    table.push(...(await measure('PostgreSQL', postgres, count, rounds)));
  } finally {
    await postgres.close();
  }
  const embedded = await openMemoryDatabase();
  try {
    table.push(...(await measure('embedded', embedded, embeddedCount, rounds)));
  } finally {
    await embedded.close();
  }
  console.log(`the ledger's rows written, median of ${rounds} rounds, the two ways in turns\n`);
  console.log(formatTable(['way', 'written', 'per row', 'before / now'], table));
});
