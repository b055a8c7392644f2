import type { ReteErrorCode, ReteWarningCode } from '#contracts/files';

/** One finding of validation, located by the YAML parser's source positions (1-based line and column). */
export interface Diagnostic {
  readonly severity: 'error' | 'warning';
  readonly code: ReteErrorCode | ReteWarningCode;
  readonly file: string;
  readonly line: number;
  readonly col: number;
  /** Where in the file's data: `nodes[0].services[1].port`; empty for the whole file. */
  readonly path: string;
  readonly message: string;
}

/** A place in the rete, kept on merged definitions so cross-file errors can name both places. */
export interface Place {
  readonly file: string;
  readonly line: number;
  readonly col: number;
}

export const placeText = (p: Place): string => `${p.file}:${p.line}:${p.col}`;

/** The most of a value a message repeats: a 5 MB value is named by its start and length, not reprinted. */
const QUOTE_MAX = 80;

/** A value from the rete as a message quotes it: `"web"`, or `"aaaa…" (5242880 characters)`. */
export function quoteValue(value: string): string {
  if (value.length <= QUOTE_MAX) return JSON.stringify(value);
  // Never cut between the two halves of a surrogate pair: half a character prints as garbage.
  const end = isHighSurrogate(value.charCodeAt(QUOTE_MAX - 1)) ? QUOTE_MAX - 1 : QUOTE_MAX;
  return `${JSON.stringify(`${value.slice(0, end)}…`)} (${codePoints(value)} characters)`;
}

const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;

function codePoints(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) if (!isHighSurrogate(value.charCodeAt(i)) || i === value.length - 1) n++;
  return n;
}

/** `file:line:col: path: message [code]`, the line compilers and linters print. */
export function formatDiagnostic(d: Diagnostic): string {
  const prefix = d.severity === 'warning' ? 'warning: ' : '';
  return `${placeText(d)}: ${d.path ? `${d.path}: ` : ''}${prefix}${d.message} [${d.code}]`;
}

/** Errors first by place, then warnings: a stable order whatever order the files were read in. */
export function sortDiagnostics(list: readonly Diagnostic[]): Diagnostic[] {
  const rank = (d: Diagnostic) => (d.severity === 'error' ? 0 : 1);
  return [...list].sort(
    (a, b) => rank(a) - rank(b) || cmp(a.file, b.file) || a.line - b.line || a.col - b.col || cmp(a.code, b.code) || cmp(a.message, b.message),
  );
}

export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
