import pg from 'pg';
import { pino } from 'pino';
import { createPostgresDatabase, hasPostgres } from '../../../../test/support/databases.js';
import { openChangeFeed, type ChangeFeed } from './change-feed.js';
import { openDatabase, type Db } from './connect.js';

type Queued = pg.Client & { _queryQueue: unknown[]; pipeline?: boolean };

(hasPostgres ? describe : describe.skip)('change feed on PostgreSQL', () => {
  let db: Db;
  let feed: ChangeFeed | undefined;
  const query = pg.Client.prototype.query;
  /** Queries sent on a client that had one queued already: what pg warns of ("already executing a query") and pg 9 refuses. */
  let queuedBehind: string[];

  beforeEach(async () => {
    db = await openDatabase({ databaseUrl: await createPostgresDatabase(), dataDir: '/nonexistent' });
    queuedBehind = [];
    pg.Client.prototype.query = function (this: Queued, ...args: unknown[]) {
      if (this._queryQueue.length > 0 && !this.pipeline)
        queuedBehind.push(String(typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string })?.text));
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
  });

  afterEach(async () => {
    pg.Client.prototype.query = query;
    await feed?.close();
    await db.close();
  });

  it('sends one query at a time on its listening connection, however many barriers and pings cross', async () => {
    // Pings every 2 ms, and 100 writes settling at once: each barrier is acknowledged on the listening connection.
    feed = await openChangeFeed(db, pino({ level: 'silent' }), { trustMs: 3000, pingMs: 2, reconnectMs: 50 });
    const lags: number[] = [];
    feed.observeLag!((s) => void lags.push(s));
    for (let round = 0; round < 3; round++) await Promise.all(Array.from({ length: 100 }, () => feed!.settle()));
    expect(feed.trusted()).toBe(true);
    expect(lags.length).toBeGreaterThan(0);
    expect(queuedBehind).toEqual([]);
  });
});
