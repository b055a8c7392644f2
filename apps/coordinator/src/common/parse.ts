import type { z } from 'zod';
import { DomainError } from './domain-error.js';
import { boundIssues, clip, PROBLEM_LIMITS } from './problem-bounds.js';

const MAX_DEPTH = 32;
/** Issues named in `detail`; `issues[]` lists up to PROBLEM_LIMITS.issues. */
const DETAIL_ISSUES = 5;

/**
 * Parses bytes from outside against a contract; the first issues are named by their path, all of them
 * bounded. `plain`, when given, is a cheaper check that accepts only values the schema certainly
 * accepts unchanged (see isPlainPublishRequest); whatever it declines goes to the schema.
 */
export function parseInput<S extends z.ZodType>(
  schema: S,
  value: unknown,
  where: 'body' | 'query' | 'path',
  plain?: (value: unknown) => value is z.infer<S>,
): z.infer<S> {
  const code = where === 'body' ? 'invalid_body' : where === 'query' ? 'invalid_query' : 'invalid_path';
  const unstorable = findUnstorable(value, where === 'body' ? '$' : where);
  if (unstorable) throw new DomainError(code, unstorable);
  if (where === 'body' && (value === undefined || value === null)) {
    throw new DomainError('invalid_body', 'request body is empty: expected a JSON object');
  }
  if (plain?.(value)) return value;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const all = result.error.issues;
  const issues = boundIssues(all.slice(0, PROBLEM_LIMITS.issues).map((i) => ({ path: i.path.map(String), message: messageOf(i) })));
  const lines = issues.slice(0, DETAIL_ISSUES).map((i) => `${clip(formatPath(where, i.path), PROBLEM_LIMITS.message)}: ${i.message}`);
  const more = all.length > DETAIL_ISSUES ? ` (and ${all.length - DETAIL_ISSUES} more)` : '';
  throw new DomainError(code, `${lines.join('; ')}${more}`, { issues, ...(all.length > issues.length ? { issues_count: all.length } : {}) });
}

/**
 * A record key that fails its schema says why (zod nests the key's own issues). Unknown keys are
 * input: a few are named, each cut short, and the rest counted, never the whole list.
 */
function messageOf(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_key' && issue.issues.length > 0) return `key ${issue.issues.map((i) => i.message).join('; ')}`;
  if (issue.code === 'unrecognized_keys') {
    const named = issue.keys
      .slice(0, 2)
      .map((k) => JSON.stringify(clip(k, 40)))
      .join(', ');
    const rest = issue.keys.length > 2 ? ` and ${issue.keys.length - 2} more` : '';
    return `unknown key${issue.keys.length === 1 ? '' : 's'} ${named}${rest}`;
  }
  return issue.message;
}

function formatPath(where: string, path: readonly string[]): string {
  const root = where === 'body' ? '$' : where;
  return path.length === 0 ? root : `${root}.${path.join('.')}`;
}

interface Visit {
  readonly value: unknown;
  readonly parent?: Visit;
  readonly key?: string | number;
  readonly depth: number;
}

/** The path of a visit, built only when it is reported, each key cut short. */
function pathOf(visit: Visit, rootPath: string): string {
  const keys: string[] = [];
  for (let v: Visit | undefined = visit; v?.key !== undefined; v = v.parent)
    keys.push(typeof v.key === 'number' ? `[${v.key}]` : `.${clip(v.key, PROBLEM_LIMITS.value)}`);
  return clip(rootPath + keys.reverse().join(''), PROBLEM_LIMITS.message);
}

/**
 * What PostgreSQL cannot store in text or jsonb (NUL, unpaired UTF-16 surrogates) and nesting no
 * contract needs, found without recursion so a hostile body cannot exhaust the stack.
 */
function findUnstorable(root: unknown, rootPath: string): string | null {
  const stack: Visit[] = [{ value: root, depth: 0 }];
  while (stack.length > 0) {
    const visit = stack.pop()!;
    const { value, depth } = visit;
    if (typeof value === 'string') {
      const problem = badString(value);
      if (problem) return `${pathOf(visit, rootPath)}: ${problem}`;
      continue;
    }
    if (!value || typeof value !== 'object') continue;
    if (depth >= MAX_DEPTH) return `${pathOf(visit, rootPath)}: nested deeper than ${MAX_DEPTH} levels`;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) stack.push({ value: value[i], parent: visit, key: i, depth: depth + 1 });
      continue;
    }
    for (const key of Object.keys(value)) {
      const problem = badString(key);
      if (problem) return `${pathOf(visit, rootPath)} (a key): ${problem}`;
      stack.push({ value: (value as Record<string, unknown>)[key], parent: visit, key, depth: depth + 1 });
    }
  }
  return null;
}

function badString(s: string): string | null {
  if (s.includes('\u0000')) return 'strings may not contain NUL characters';
  if (!s.isWellFormed()) return 'strings may not contain unpaired UTF-16 surrogates';
  return null;
}
