import { sql, type Kysely } from 'kysely';
import { testDatabases } from '../../../../test/support/databases.js';
import type { Db } from './connect.js';
import { copyField, copyInto } from './copy-in.js';

/**
 * `copyInto` on both databases: the rows as COPY's text format, inside the caller's transaction, on
 * a table of the test's own.
 */
const COLUMNS = ['n', 'label', 'doc'];

const line = (n: number, label: string, doc: string): string => `${n}\t${copyField(label)}\t${copyField(doc)}\n`;

async function rows(db: Kysely<unknown>): Promise<{ n: number; label: string; doc: string }[]> {
  const { rows } = await sql<{ n: number; label: string; doc: string }>`SELECT n, label, doc::text AS doc FROM copy_probe ORDER BY n`.execute(db);
  return rows;
}

describe.each(testDatabases)('copying rows in, on $name', (database) => {
  let db: Db;
  let kysely: Kysely<unknown>;
  beforeAll(async () => {
    db = await database.open();
    kysely = db.kysely as unknown as Kysely<unknown>;
    await sql`CREATE TABLE copy_probe (n integer PRIMARY KEY, label text NOT NULL, doc jsonb NOT NULL)`.execute(kysely);
  });
  afterAll(() => db.close());
  beforeEach(() => sql`DELETE FROM copy_probe`.execute(kysely));

  it('reads back every field as it was written: backslashes, tabs, newlines, carriage returns, and text beyond ASCII', async () => {
    const labels = ['plain', 'back\\slash', 'tab\there', 'new\nline', 'carriage\rreturn', '\\N', 'é ✓ 😀', '', ' edge spaces '];
    const docs = labels.map((label) => JSON.stringify({ label, quoted: '"q" \\ \t' }));
    const lines = labels.map((label, i) => line(i, label, docs[i])).join('');
    await kysely.transaction().execute((trx) => trx.executeQuery(copyInto('copy_probe', COLUMNS, lines)));
    const read = await rows(kysely);
    expect(read.map((r) => r.label)).toEqual(labels);
    expect(read.map((r) => JSON.parse(r.doc))).toEqual(labels.map((label) => ({ label, quoted: '"q" \\ \t' })));
  });

  it('sends copies queued without waiting on one transaction in order, each larger than one slice of COPY data', async () => {
    // Three copies of 3,000 rows with a 600-character document each: about 1.9 MB apiece, two slices.
    const doc = JSON.stringify({ pad: 'x'.repeat(600) });
    const batch = (from: number): string => Array.from({ length: 3_000 }, (_, i) => line(from + i, `row ${from + i}`, doc)).join('');
    await kysely.transaction().execute(async (trx) => {
      const sent = [0, 3_000, 6_000].map((from) => trx.executeQuery(copyInto('copy_probe', COLUMNS, batch(from))));
      await Promise.all(sent);
    });
    const read = await rows(kysely);
    expect(read).toHaveLength(9_000);
    expect(read[8_999]).toEqual({ n: 8_999, label: 'row 8999', doc: doc.replace(':', ': ') });
  });

  it('fails with the line PostgreSQL refused, rolls the transaction back whole, and leaves the connection usable', async () => {
    await kysely.transaction().execute((trx) => trx.executeQuery(copyInto('copy_probe', COLUMNS, line(1, 'kept', '{}'))));
    const refused = kysely.transaction().execute(async (trx) => {
      await trx.executeQuery(copyInto('copy_probe', COLUMNS, line(2, 'new', '{}')));
      await trx.executeQuery(copyInto('copy_probe', COLUMNS, line(3, 'fine', '{}') + line(1, 'taken', '{}')));
    });
    await expect(refused).rejects.toThrow(/copy_probe_pkey/);
    await expect(refused).rejects.toMatchObject({ where: expect.stringContaining('COPY copy_probe, line 2') });
    const notJson = kysely.transaction().execute((trx) => trx.executeQuery(copyInto('copy_probe', COLUMNS, line(4, 'bad', '{"open": '))));
    await expect(notJson).rejects.toThrow(/json/);
    expect(await rows(kysely)).toEqual([{ n: 1, label: 'kept', doc: '{}' }]);
    // The pool's connections, and the embedded database's one, answer the next statement.
    for (let i = 0; i < 3; i++) expect((await sql<{ one: number }>`SELECT 1 AS one`.execute(kysely)).rows).toEqual([{ one: 1 }]);
  });
});
