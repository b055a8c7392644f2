import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { CopyRows } from './copy-in.js';
import type { Database } from './database.js';

/*
 * The PostgreSQL client's side of the database: loaded by `openDatabase` only when it is given a
 * PostgreSQL URL, so a coordinator on the embedded database never loads `pg`.
 */

// int8 as text by default: positions stay exact and are normalised to numbers at the repository boundary.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));

const CHUNK_BYTES = 1 << 20;

/** What `pg` gives a query of its own to write on: the calls a COPY from the client uses. */
interface CopyConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

/**
 * A COPY from the client as `pg` runs a query object of its own: sent in the simple protocol; when
 * the server asks for the data, the rows go in slices of a mebibyte and then the end; the server's
 * ready-for-query after its completion answers it. An error (a key taken, a field that does not
 * parse) comes instead of completion, and `pg` hands it here without the ready that follows.
 */
class CopyFromClient {
  private rowCount = 0;
  private unexpected: Error | null = null;

  constructor(
    private readonly rows: CopyRows,
    private readonly answer: (err: Error | null, rowCount: number) => void,
  ) {}

  submit(connection: CopyConnection): void {
    connection.query(this.rows.statement('STDIN'));
  }

  handleCopyInResponse(connection: CopyConnection): void {
    const { data } = this.rows;
    for (let at = 0; at < data.length; at += CHUNK_BYTES) connection.sendCopyFromChunk(data.subarray(at, at + CHUNK_BYTES));
    connection.endCopyFrom();
  }

  handleCommandComplete(msg: { text: string }): void {
    this.rowCount = Number(/^COPY (\d+)$/.exec(msg.text)?.[1] ?? 0);
  }

  handleReadyForQuery(): void {
    this.answer(this.unexpected, this.rowCount);
  }

  handleError(err: Error): void {
    this.answer(err, 0);
  }

  // A COPY from the client answers none of these; should the server send one, the query fails.
  handleRowDescription(): void {
    this.unexpect('a row description');
  }
  handleDataRow(): void {
    this.unexpect('a data row');
  }
  handleEmptyQuery(): void {
    this.unexpect('an empty query response');
  }
  handlePortalSuspended(): void {
    this.unexpect('a suspended portal');
  }
  handleCopyData(): void {
    this.unexpect('copy data');
  }

  private unexpect(what: string): void {
    this.unexpected ??= new Error(`${this.rows.statement('STDIN')} was answered with ${what}`);
  }
}

type QueryFn = (config: unknown, values?: unknown, callback?: unknown) => unknown;

/**
 * `pg`'s client, with `copyInto`'s query sent as a COPY from the client. Every other query is the
 * client's own.
 */
class CopyingClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    const query = this.query.bind(this) as QueryFn;
    const copying: QueryFn = (config, values, callback) => {
      const rows = Array.isArray(values) && values.length === 1 && values[0] instanceof CopyRows ? values[0] : null;
      if (!rows) return query(config, values, callback);
      return new Promise((resolve, reject) => {
        query(new CopyFromClient(rows, (err, rowCount) => (err ? reject(err) : resolve({ command: 'COPY', rowCount, rows: [] }))));
      });
    };
    this.query = copying as pg.Client['query'];
  }
}

/**
 * A pooled connection whose session the server ends (PostgreSQL stopping or restarting, an
 * administrator terminating it, a session timeout) is dropped, whoever holds it at the time, and never
 * ends the process.
 *
 * The pool hears the connections it holds idle. One in use, mid-request or mid-transaction, reports
 * the end as an 'error' event on itself, and unheard that would end the process: here it is heard.
 * The query running has already failed with the server's reason; any later query on the connection
 * (a transaction's ROLLBACK, say) fails with that same reason, so the caller's error names what
 * happened rather than that the connection was closed.
 *
 * The server's farewell (an error of severity FATAL) arrives before its socket closes, so a client
 * released in between would go back to the pool as sound and fail the next request to take it. A
 * query that fails that way ends the client first, and the pool drops it when it comes back.
 */
class PooledClient extends CopyingClient {
  /** Why the server ended this connection's session, once it has. */
  private ended: Error | undefined;

  constructor(config?: string | pg.ClientConfig) {
    super(config);
    this.on('error', (err: Error) => void (this.ended ??= err));
    const query = this.query.bind(this) as (...args: unknown[]) => unknown;
    this.query = ((...args: unknown[]) => {
      // A query asked for a promise (not a callback, not a submittable such as a cursor) gets the reason.
      const promised = typeof args[args.length - 1] !== 'function' && typeof (args[0] as { submit?: unknown } | null)?.submit !== 'function';
      if (this.ended && promised) return Promise.reject(this.ended);
      const result = query(...args);
      if (result instanceof Promise) result.catch((err: unknown) => this.endIfSessionOver(err));
      return result;
    }) as pg.Client['query'];
  }

  private endIfSessionOver(err: unknown): void {
    const severity = (err as { severity?: unknown } | null)?.severity;
    if (severity !== 'FATAL' && severity !== 'PANIC') return;
    this.ended ??= err as Error;
    void this.end().catch(() => undefined);
  }
}

/** The coordinator's database over a pool of connections to PostgreSQL at `url`. */
export function openPostgres(url: string, poolSize: number): Kysely<Database> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, Client: PooledClient });
  // An idle pooled connection the server closed (PostgreSQL stopped or restarted) is dropped by the
  // pool, which then emits 'error'; unheard, that would end the process. The next query opens a new
  // connection and fails or succeeds on its own, and /readyz says which.
  pool.on('error', () => undefined);
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
