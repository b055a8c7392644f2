import type { z } from 'zod';
import { DomainError } from './domain-error.js';

/** Parses bytes from outside against a contract; the first ten issues are named by their path. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where: 'body' | 'query' | 'path'): z.infer<S> {
  const nul = findNul(value, where === 'body' ? '$' : where);
  if (nul) throw new DomainError(where === 'body' ? 'invalid_body' : 'invalid_query', `${nul}: strings may not contain NUL characters`);
  if (where === 'body' && (value === undefined || value === null)) {
    throw new DomainError('invalid_body', 'request body is empty: expected a JSON object');
  }
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues.slice(0, 10).map((i) => `${formatPath(where, i.path)}: ${messageOf(i)}`);
  const more = result.error.issues.length > 10 ? ` (and ${result.error.issues.length - 10} more)` : '';
  throw new DomainError(where === 'body' ? 'invalid_body' : 'invalid_query', `${issues.join('; ')}${more}`, {
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

function findNul(value: unknown, path: string): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = findNul(value[i], `${path}[${i}]`);
      if (hit) return hit;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k.includes('\u0000')) return `${path} (a key)`;
      const hit = findNul(v, `${path}.${k}`);
      if (hit) return hit;
    }
  }
  return null;
}
