import type { z } from 'zod';
import { DomainError } from './domain-error.js';

/** Parses bytes from outside against a contract; the first ten issues are named by their path. */
const MAX_DEPTH = 32;

/** Parses bytes from outside against a contract; the first ten issues are named by their path. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where: 'body' | 'query' | 'path'): z.infer<S> {
  const code = where === 'body' ? 'invalid_body' : where === 'query' ? 'invalid_query' : 'invalid_path';
  const unstorable = findUnstorable(value, where === 'body' ? '$' : where);
  if (unstorable) throw new DomainError(code, unstorable);
  if (where === 'body' && (value === undefined || value === null)) {
    throw new DomainError('invalid_body', 'request body is empty: expected a JSON object');
  }
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues.slice(0, 10).map((i) => `${formatPath(where, i.path)}: ${messageOf(i)}`);
  const more = result.error.issues.length > 10 ? ` (and ${result.error.issues.length - 10} more)` : '';
  throw new DomainError(code, `${issues.join('; ')}${more}`, {
    issues: result.error.issues.slice(0, 100).map((i) => ({ path: i.path.map(String), message: messageOf(i) })),
  });
}

/** A record key that fails its schema says why (zod nests the key's own issues). */
function messageOf(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_key' && issue.issues.length > 0) return `key ${issue.issues.map((i) => i.message).join('; ')}`;
  return issue.message;
}

function formatPath(where: string, path: readonly PropertyKey[]): string {
  const root = where === 'body' ? '$' : where;
  return path.length === 0 ? root : `${root}.${path.map(String).join('.')}`;
}

/**
 * What PostgreSQL cannot store in text or jsonb (NUL, unpaired UTF-16 surrogates) and nesting no
 * contract needs, found without recursion so a hostile body cannot exhaust the stack.
 */
function findUnstorable(root: unknown, rootPath: string): string | null {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: root, path: rootPath, depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === 'string') {
      const problem = badString(value);
      if (problem) return `${path}: ${problem}`;
      continue;
    }
    if (!value || typeof value !== 'object') continue;
    if (depth >= MAX_DEPTH) return `${path}: nested deeper than ${MAX_DEPTH} levels`;
    const entries = Array.isArray(value) ? value.map((v, i) => [`[${i}]`, v] as const) : Object.entries(value).map(([k, v]) => [`.${k}`, v] as const);
    for (const [key, v] of entries) {
      const problem = Array.isArray(value) ? null : badString(key.slice(1));
      if (problem) return `${path} (a key): ${problem}`;
      stack.push({ value: v, path: `${path}${key}`, depth: depth + 1 });
    }
  }
  return null;
}

function badString(s: string): string | null {
  if (s.includes('\u0000')) return 'strings may not contain NUL characters';
  if (!s.isWellFormed()) return 'strings may not contain unpaired UTF-16 surrogates';
  return null;
}
