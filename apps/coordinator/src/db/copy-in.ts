import type { PGlite } from '@electric-sql/pglite';
import { CompiledQuery } from 'kysely';

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
 * databases' connections recognise its one parameter (`CopyingClient` in postgres-client.ts,
 * `copyingEmbedded`) and send the rows as COPY data rather than as a parameter.
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
