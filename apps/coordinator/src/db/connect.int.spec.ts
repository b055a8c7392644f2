import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { createPostgresDatabase, hasPostgres } from '../../../../test/support/databases.js';
import { openDatabase, type Db } from './connect.js';

/**
 * A connection the server ends while the coordinator holds it: PostgreSQL stopped, restarted or the
 * session terminated in the middle of a request or a transaction. pg reports it as an 'error' event on
 * the client; the pool hears it only on the connections it holds idle, and an unheard 'error' ends the
 * process. Here the server ends the session with pg_terminate_backend, which is what a stopping
 * server does to each of its sessions.
 */
(hasPostgres ? describe : describe.skip)('a PostgreSQL connection the server ends while it is in use', () => {
  let db: Db;

  beforeEach(async () => {
    db = await openDatabase({ databaseUrl: await createPostgresDatabase(), dataDir: '/nonexistent' });
  });

  afterEach(async () => {
    await db.close();
  });

  /** Resolves once the server has no session with this pid. */
  async function gone(pid: number): Promise<void> {
    for (let i = 0; i < 100; i++) {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${pid}`.execute(db.kysely);
      if (rows[0].n === 0) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`session ${pid} still there`);
  }

  it('between two queries: the next query on it fails, the process lives on, and the pool opens a new one', async () => {
    await db.kysely.connection().execute(async (held) => {
      const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(held);
      await sql`SELECT pg_terminate_backend(${rows[0].pid})`.execute(db.kysely);
      await gone(rows[0].pid);
      // The client reads the server's farewell and its socket's end on the event loop's next turns.
      await new Promise((r) => setTimeout(r, 100));
      // The server's own reason, not that the client is closed.
      await expect(sql`SELECT 1`.execute(held)).rejects.toThrow('terminating connection due to administrator command');
    });
    const { rows } = await sql<{ one: number }>`SELECT 1 AS one`.execute(db.kysely);
    expect(rows).toEqual([{ one: 1 }]);
  });

  it('in the middle of a query: that query fails with the server’s reason, and the next request gets a sound connection', async () => {
    let pid = 0;
    const running = db.kysely.connection().execute(async (held) => {
      pid = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(held)).rows[0].pid;
      await sql`SELECT pg_sleep(30)`.execute(held);
    });
    while (pid === 0) await new Promise((r) => setTimeout(r, 10));
    await sql`SELECT pg_terminate_backend(${pid})`.execute(db.kysely);
    await expect(running).rejects.toThrow(/terminat/i);
    // At once, before the socket's end is read: the pool hands out the connection released last first.
    const { rows } = await sql<{ one: number }>`SELECT 1 AS one`.execute(db.kysely);
    expect(rows).toEqual([{ one: 1 }]);
    await gone(pid);
  });

  it('in a transaction: the caller gets the server’s reason, not the failed rollback’s, and nothing is written', async () => {
    await sql`CREATE TABLE kept (n int)`.execute(db.kysely);
    const written = db.kysely.transaction().execute(async (trx) => {
      await sql`INSERT INTO kept VALUES (1)`.execute(trx);
      const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx);
      await sql`SELECT pg_terminate_backend(${rows[0].pid})`.execute(db.kysely);
      await gone(rows[0].pid);
      await new Promise((r) => setTimeout(r, 100));
      await sql`INSERT INTO kept VALUES (2)`.execute(trx);
    });
    await expect(written).rejects.toThrow('terminating connection due to administrator command');
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM kept`.execute(db.kysely);
    expect(rows).toEqual([{ n: 0 }]);
  });
});

/**
 * The embedded database's shared memory is resident whole from start, so its size is an idle embedded
 * coordinator's memory. It is sized for one process: a buffer pool smaller than the tables it serves,
 * and a lock table for ten sessions. Both still do a large transaction's work.
 */
describe('the embedded database on a data dir', () => {
  let dataDir: string;
  let db: Db | undefined;

  // One data dir for the cases: creating one runs initdb, several seconds.
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'florete-embedded-'));
  });

  afterEach(async () => {
    await db?.close();
    db = undefined;
  });

  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  const shown = async (setting: string) => (await sql<Record<string, string>>`SELECT current_setting(${setting}) AS value`.execute(db!.kysely)).rows[0].value;

  it('keeps of the unpacked installation only what a running server reads, in a buffer of its own', async () => {
    db = await openDatabase({ dataDir });
    const fs = db.pglite!.Module.FS;
    // initdb's inputs, ICU's data and the encoding conversions are gone...
    for (const path of [
      '/pglite/share/postgresql/postgres.bki',
      '/pglite/share/postgresql/information_schema.sql',
      '/pglite/icu/icudt76l/coll/root.res',
      '/pglite/lib/postgresql/utf8_and_sjis.so',
    ]) {
      expect([path, fs.analyzePath(path).exists]).toEqual([path, false]);
    }
    // ...and what is kept no longer holds PGlite's 6 MB buffer.
    const utc = fs.lookupPath('/pglite/share/postgresql/timezone/UTC', {}).node as unknown as { contents: Uint8Array };
    expect(utc.contents.length).toBeGreaterThan(0);
    expect(utc.contents.buffer.byteLength).toBeLessThan(2 * 1024 * 1024);

    // The kept files read back whole: a time zone's rules, and PL/pgSQL's library.
    const { rows } = await db.kysely.transaction().execute(async (trx) => {
      await sql`SET LOCAL TIME ZONE 'Europe/Paris'`.execute(trx);
      return sql<{
        summer: string;
        winter: string;
      }>`SELECT '2026-07-01 12:00+00'::timestamptz::text AS summer, '2026-01-01 12:00+00'::timestamptz::text AS winter`.execute(trx);
    });
    expect(rows).toEqual([{ summer: '2026-07-01 14:00:00+02', winter: '2026-01-01 13:00:00+01' }]);
    await sql`DO $$ BEGIN PERFORM 1; END $$`.execute(db.kysely);
  });

  it('holds 4 MB of shared memory, and keeps and reads back tables larger than its buffer pool', async () => {
    db = await openDatabase({ dataDir });
    expect(await shown('shared_memory_size')).toBe('4MB');
    expect(await shown('shared_buffers')).toBe('1MB');
    expect(await shown('max_connections')).toBe('10');

    // About 20 MB of rows that do not compress, twenty times the buffer pool, written in one transaction.
    await sql`CREATE TABLE wide (n int PRIMARY KEY, body text NOT NULL)`.execute(db.kysely);
    await sql`INSERT INTO wide SELECT i, (SELECT string_agg(md5(i::text || '.' || j::text), '') FROM generate_series(1, 60) AS j) FROM generate_series(1, 10000) AS i`.execute(
      db.kysely,
    );
    await db.close();

    db = await openDatabase({ dataDir });
    const { rows } = await sql<{ n: number; bytes: number; distinct: number }>`
      SELECT count(*)::int AS n, sum(length(body))::int AS bytes, count(DISTINCT body)::int AS distinct FROM wide`.execute(db.kysely);
    expect(rows).toEqual([{ n: 10000, bytes: 10000 * 60 * 32, distinct: 10000 }]);
    const { rows: size } = await sql<{ bytes: number }>`SELECT pg_total_relation_size('wide')::int AS bytes`.execute(db.kysely);
    expect(size[0].bytes).toBeGreaterThan(4 * 4 * 1024 * 1024);
  });

  it('takes a thousand locks in one transaction', async () => {
    db = await openDatabase({ dataDir });
    const held = await db.kysely.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(i) FROM generate_series(1, 1000) AS i`.execute(trx);
      return (await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory'`.execute(trx)).rows[0].n;
    });
    expect(held).toBe(1000);
  });
});
