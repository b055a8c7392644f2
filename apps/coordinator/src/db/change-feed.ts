import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Db } from './connect.js';

/** The channel the database's triggers announce changes on (migration 0013). */
export const CHANGE_CHANNEL = 'florete_cache';
/** The prefix of every replica's listening session's application_name: how a writer finds the replicas. */
export const LISTENER_PREFIX = 'florete-cache:';

/** What changed under the poll cache: some keys, every key of a kind (`*`), or everything (the feed was re-established). */
export type Change =
  { readonly kind: 'heads' | 'credentials'; readonly keys: readonly string[] | '*' } | { readonly kind: 'checkpoint' } | { readonly kind: 'reset' };

/** A trigger's notification as a change; null for the feed's own messages (pings, barriers, acks). */
export function parseChange(payload: string): Change | null {
  if (payload === 'k') return { kind: 'checkpoint' };
  const kind = payload.startsWith('h:') ? 'heads' : payload.startsWith('c:') ? 'credentials' : null;
  if (!kind) return null;
  const rest = payload.slice(2);
  return { kind, keys: rest === '*' ? '*' : rest.split(',') };
}

export interface FeedOptions {
  /** How long a replica trusts its memory after its last round trip through the feed. */
  readonly trustMs: number;
  /** How often the listener sends itself a ping; well under trustMs. */
  readonly pingMs: number;
  /** Wait before listening again after the connection dropped. */
  readonly reconnectMs: number;
}

export const DEFAULT_FEED_OPTIONS: FeedOptions = { trustMs: 3000, pingMs: 500, reconnectMs: 250 };

/**
 * Whether a replica may answer from memory, and the barrier a write waits on before it answers.
 *
 * The rule that keeps every replica's memory correct, on PostgreSQL:
 * 1. A change and its notification commit together (the triggers), and PostgreSQL delivers
 *    notifications to each listener in commit order.
 * 2. Each replica's listener sends itself a ping every pingMs and notes when it sent it. It answers
 *    from memory only while its newest returned ping was sent less than trustMs ago. A ping sent
 *    after a change committed arrives after that change's notification, so a replica that trusts
 *    itself at time t has processed every change committed before t - trustMs.
 * 3. A write that changes what a poll answers (publish, rollback, retire, key rotation, revoke,
 *    enrolment) answers only after `settle()`: it sends a barrier and waits until every listening
 *    replica (their sessions are named `florete-cache:…` in pg_stat_activity) has acknowledged it,
 *    which each does after handling everything before it, or until trustMs has passed, after which
 *    a replica that missed the change no longer trusts its memory (rule 2). Either way, once the
 *    client has its answer no replica serves what the write replaced.
 * A dropped connection makes the replica distrust its memory at once; it listens again, forgets
 * everything (`reset`) and trusts itself again with its first ping back.
 *
 * On PGlite (one process) notifications are delivered before the commit returns, so the memory is
 * always current: trusted always, and settle() has nothing to wait for.
 */
export interface ChangeFeed {
  subscribe(fn: (change: Change) => void): void;
  /** Hears, in seconds, how long each of the listener's own pings took to come back: the feed's notification lag. */
  observeLag?(fn: (seconds: number) => void): void;
  trusted(): boolean;
  settle(): Promise<void>;
  close(): Promise<void>;
}

export async function openChangeFeed(db: Db, log: Logger, options: FeedOptions = DEFAULT_FEED_OPTIONS): Promise<ChangeFeed> {
  if (db.kind === 'pglite') return openEmbeddedFeed(db);
  if (!db.databaseUrl) throw new Error('a PostgreSQL change feed needs the database URL');
  // Loaded here, as the pool is (postgres-client.ts): an embedded coordinator never loads `pg`.
  const { Client } = (await import('pg')).default;
  const feed = new PostgresFeed(db, db.databaseUrl, log, options, Client);
  await feed.start();
  return feed;
}

async function openEmbeddedFeed(db: Db): Promise<ChangeFeed> {
  const subscribers: ((change: Change) => void)[] = [];
  const unlisten = await db.pglite!.listen(CHANGE_CHANNEL, (payload) => {
    const change = parseChange(payload);
    if (change) for (const fn of subscribers) fn(change);
  });
  return {
    subscribe: (fn) => void subscribers.push(fn),
    trusted: () => true,
    settle: async () => undefined,
    close: () => unlisten(),
  };
}

class PostgresFeed implements ChangeFeed {
  readonly name = `${LISTENER_PREFIX}${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly subscribers: ((change: Change) => void)[] = [];
  private client: pg.Client | null = null;
  private connected = false;
  private closed = false;
  private seq = 0;
  private readonly pingsSent = new Map<number, number>();
  /** performance.now() when the newest ping that came back was sent; -Infinity: none since (re)connecting. */
  private lastPingSentAt = Number.NEGATIVE_INFINITY;
  private pinger: NodeJS.Timeout | null = null;
  private readonly barriers = new Map<string, (replica: string) => void>();
  private lagObserver: (seconds: number) => void = () => undefined;
  /**
   * The last query sent on the listening connection, settled or not: each query waits for the one
   * before. Pings and barrier acknowledgements arrive independently, and pg deprecates sending a
   * query while another is still queued on the client (it will refuse it in pg 9).
   */
  private tail: Promise<unknown> = Promise.resolve();
  /** The connection a ping is queued or on the wire on: the next ping on it waits for that one's turn rather than queueing behind it. */
  private pinging: pg.Client | null = null;

  constructor(
    private readonly db: Db,
    private readonly url: string,
    private readonly log: Logger,
    private readonly options: FeedOptions,
    private readonly Client: typeof pg.Client,
  ) {}

  subscribe(fn: (change: Change) => void): void {
    this.subscribers.push(fn);
  }

  observeLag(fn: (seconds: number) => void): void {
    this.lagObserver = fn;
  }

  trusted(): boolean {
    return this.connected && performance.now() - this.lastPingSentAt < this.options.trustMs;
  }

  async start(): Promise<void> {
    await this.connect();
    this.pinger = setInterval(() => void this.ping(), this.options.pingMs);
    this.pinger.unref();
  }

  /** Sends a query on `client` once every query sent on it before has settled. */
  private query(client: pg.Client, text: string, values?: unknown[]): Promise<void> {
    const sent = this.tail.then(() => client.query(text, values)).then(() => undefined);
    this.tail = sent.catch(() => undefined);
    return sent;
  }

  private async connect(): Promise<void> {
    const client = new this.Client({ connectionString: this.url, application_name: this.name });
    // A new connection waits for nothing the last one was sending.
    this.tail = Promise.resolve();
    const down = (why: string) => {
      if (this.client !== client) return;
      this.client = null;
      this.connected = false;
      this.lastPingSentAt = Number.NEGATIVE_INFINITY;
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      if (this.closed) return;
      this.log.warn({ listener: this.name, reason: why }, 'change feed lost: polls go to the database until it is back');
      setTimeout(() => void this.reconnect(), this.options.reconnectMs).unref();
    };
    client.on('error', (err) => down(err.message));
    client.on('end', () => down('connection ended'));
    client.on('notification', (n) => this.onNotification(n.payload ?? ''));
    this.client = client;
    await client.connect();
    await this.query(client, `LISTEN ${CHANGE_CHANNEL}`);
    if (this.client !== client) return;
    this.connected = true;
    // Whatever happened while nobody listened is unknown: forget it all.
    this.emit({ kind: 'reset' });
    void this.ping();
  }

  private async reconnect(): Promise<void> {
    if (this.closed || this.client) return;
    try {
      await this.connect();
      this.log.info({ listener: this.name }, 'change feed listening again');
    } catch (err) {
      this.log.warn({ listener: this.name, err: (err as Error).message }, 'change feed: listening failed, trying again');
      this.client = null;
      if (!this.closed) setTimeout(() => void this.reconnect(), this.options.reconnectMs).unref();
    }
  }

  private emit(change: Change): void {
    for (const fn of this.subscribers) fn(change);
  }

  private async ping(): Promise<void> {
    const client = this.client;
    if (!client || !this.connected || this.pinging === client) return;
    this.pinging = client;
    const seq = ++this.seq;
    // Noted when queued, so no later than it is sent: trusting from it is never trusting too long.
    this.pingsSent.set(seq, performance.now());
    try {
      await this.query(client, `SELECT pg_notify($1, $2)`, [CHANGE_CHANNEL, `p:${this.name}:${seq}`]);
    } catch {
      this.pingsSent.delete(seq); // the connection's own handlers take it from here
    } finally {
      if (this.pinging === client) this.pinging = null;
    }
  }

  private onNotification(payload: string): void {
    const change = parseChange(payload);
    if (change) return this.emit(change);
    const [tag, ...rest] = payload.split(':');
    if (tag === 'p') {
      // p:<name with its own colons>:<seq>
      const seq = Number(rest.pop());
      if (rest.join(':') !== this.name || !this.pingsSent.has(seq)) return;
      this.lagObserver((performance.now() - this.pingsSent.get(seq)!) / 1000);
      this.lastPingSentAt = Math.max(this.lastPingSentAt, this.pingsSent.get(seq)!);
      for (const s of this.pingsSent.keys()) if (s <= seq) this.pingsSent.delete(s);
    } else if (tag === 'b') {
      // Everything before the barrier has been handled above, in order: acknowledge it.
      const client = this.client;
      if (client) this.query(client, `SELECT pg_notify($1, $2)`, [CHANGE_CHANNEL, `a:${rest[0]}:${this.name}`]).catch(() => undefined);
    } else if (tag === 'a') {
      const [token, ...name] = rest;
      this.barriers.get(token)?.(name.join(':'));
    }
  }

  async settle(): Promise<void> {
    const started = performance.now();
    const token = randomBytes(8).toString('hex');
    const acked = new Set<string>();
    let wake = () => {};
    this.barriers.set(token, (replica) => {
      acked.add(replica);
      wake();
    });
    try {
      const { rows } = await sql<{
        name: string;
      }>`SELECT application_name AS name FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE ${`${LISTENER_PREFIX}%`}`.execute(
        this.db.kysely,
      );
      const replicas = rows.map((r) => r.name);
      await sql`SELECT pg_notify(${CHANGE_CHANNEL}, ${`b:${token}`})`.execute(this.db.kysely);
      const deadline = started + this.options.trustMs + 100;
      while (!replicas.every((r) => acked.has(r))) {
        const left = deadline - performance.now();
        if (left <= 0) {
          this.log.warn(
            { missing: replicas.filter((r) => !acked.has(r)) },
            'change feed: replicas did not acknowledge a change in time; they stop trusting their memory',
          );
          return;
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    } finally {
      this.barriers.delete(token);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.pinger) clearInterval(this.pinger);
    const client = this.client;
    this.client = null;
    this.connected = false;
    await client?.end().catch(() => undefined);
  }
}
