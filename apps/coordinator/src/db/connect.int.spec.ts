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
