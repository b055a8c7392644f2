import type { PGlite } from '@electric-sql/pglite';
import { CompiledQuery } from 'kysely';
import pg from 'pg';

/**
 * Rows for PostgreSQL's `COPY ... FROM` in its text format: one line per row, its fields separated by
 * tabs, each field's text escaped by `copyField`. PostgreSQL parses each field straight into its
 * column; a statement that carries its rows as a document parses the document, then each field out
 * of it (bench/README.md, the ledger's rows by COPY).
 */
export class CopyRows {
  constructor(
    readonly table: string,
    readonly columns: readonly string[],
    readonly data: Buffer,
  ) {}

  /** The statement with the rows' source named by the database that runs it. */
  statement(source: 'STDIN' | `'/dev/blob'`): string {
    return `COPY ${this.table} (${this.columns.join(', ')}) FROM ${source}`;
  }
}

/**
 * A query that copies rows into a table, for `executeQuery` inside the caller's transaction: both
 * databases' connections recognise its one parameter (`CopyingClient`, `copyingEmbedded`) and send the
 * rows as COPY data rather than as a parameter.
 */
export function copyInto(table: string, columns: readonly string[], lines: string): CompiledQuery {
  const rows = new CopyRows(table, columns, Buffer.from(lines, 'utf8'));
  return CompiledQuery.raw(rows.statement('STDIN'), [rows]);
}

const SPECIAL = /[\\\n\r\t]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * A field's text as COPY's text format reads it back unchanged: a backslash, newline, carriage return
 * or tab is written as its backslash escape. A field holds no NUL: PostgreSQL's text has none.
 */
export function copyField(text: string): string {
  return SPECIAL.test(text) ? text.replace(/[\\\n\r\t]/g, (c) => ESCAPES[c]) : text;
}

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
export class CopyingClient extends pg.Client {
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
 * The embedded database for the dialect, with `copyInto`'s query run as PGlite runs a COPY: from the
 * blob it is given with the query, which it reads as `/dev/blob`. The dialect calls only `query` and
 * `close`.
 */
export function copyingEmbedded(pglite: PGlite): PGlite {
  const embedded: Pick<PGlite, 'query' | 'close'> = {
    query: ((text: string, params?: unknown[], options?: Parameters<PGlite['query']>[2]) => {
      const rows = params?.length === 1 && params[0] instanceof CopyRows ? params[0] : null;
      if (!rows) return pglite.query(text, params, options);
      return pglite.query(rows.statement(`'/dev/blob'`), [], { ...options, blob: new Blob([rows.data]) });
    }) as PGlite['query'],
    close: () => pglite.close(),
  };
  return embedded as PGlite;
}
