/**
 * What a problem answer may hold. A hostile request must not be able to make the coordinator write
 * (or build in memory) an answer much larger than a line of text: the limits apply to every part
 * that can carry input back, and a last check keeps the whole body under `bytes`.
 */
export const PROBLEM_LIMITS = {
  /** Issues listed in `issues[]`; the rest are counted. */
  issues: 20,
  /** Characters of one message. */
  message: 200,
  /** Characters of a value taken from the request (a key, a header, a path segment). */
  value: 64,
  /** Items of any other list in the body (missing digests, …); the rest are counted. */
  list: 20,
  /** The serialized body. */
  bytes: 16 * 1024,
} as const;

/** Cuts text to `max` characters, saying how long it was: `abc… (5242880 characters)`. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  // Never cut a surrogate pair in two: the answer must stay well-formed UTF-16.
  let end = max;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}… (${text.length} characters)`;
}

/** A value from the request, quoted for a message and cut to PROBLEM_LIMITS.value. */
export function quoteInput(value: unknown): string {
  const text = typeof value === 'string' ? value : String(value);
  return JSON.stringify(clip(text, PROBLEM_LIMITS.value));
}

export interface BoundedIssue {
  path: string[];
  message: string;
}

/** The first PROBLEM_LIMITS.issues issues, each message and path segment cut to its limit. */
export function boundIssues(issues: readonly BoundedIssue[]): BoundedIssue[] {
  return issues.slice(0, PROBLEM_LIMITS.issues).map((i) => ({
    path: i.path
      .slice(0, 8)
      .map((p) => clip(p, PROBLEM_LIMITS.value))
      .concat(i.path.length > 8 ? [`… (${i.path.length - 8} more)`] : []),
    message: clip(i.message, PROBLEM_LIMITS.message),
  }));
}

/**
 * The last line of defence: the body as it will be sent, under PROBLEM_LIMITS.bytes whatever
 * the parts held. Long lists are cut to their first items (with the full count beside them),
 * then issues are dropped from the end, then the detail is cut.
 */
export function boundProblem<P extends { detail: string; [extra: string]: unknown }>(problem: P): P {
  const out: Record<string, unknown> = { ...problem, detail: clip(problem.detail, 2000) };
  for (const [key, value] of Object.entries(out)) {
    if (typeof value === 'string' && key !== 'detail') out[key] = clip(value, PROBLEM_LIMITS.message);
    if (Array.isArray(value) && value.length > PROBLEM_LIMITS.list && key !== 'issues') {
      out[key] = value.slice(0, PROBLEM_LIMITS.list);
      out[`${key}_count`] = value.length;
    }
  }
  const size = () => Buffer.byteLength(JSON.stringify(out));
  const issues = Array.isArray(out.issues) ? [...out.issues] : undefined;
  while (issues && issues.length > 0 && size() > PROBLEM_LIMITS.bytes) {
    issues.pop();
    out.issues = issues;
  }
  if (size() > PROBLEM_LIMITS.bytes) {
    for (const key of Object.keys(out)) {
      if (!['type', 'title', 'status', 'detail', 'code'].includes(key)) delete out[key];
    }
    out.detail = clip(String(out.detail), PROBLEM_LIMITS.message);
  }
  return out as P;
}
