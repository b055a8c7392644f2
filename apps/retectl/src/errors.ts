/** Why a retectl run failed. Only `usage` maps to exit 2; every other code is a failure (exit 1). */
export type RetectlErrorCode =
  | 'usage'
  | 'config'
  | 'io'
  | 'invalid_rete'
  | 'stale_compile'
  | 'network'
  | 'tls'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'rejected'
  | 'server'
  | 'bad_response';

export class RetectlError extends Error {
  /** The coordinator's problem body, when the failure is its answer: commands read its code and extras. */
  readonly problem?: Readonly<Record<string, unknown>>;

  constructor(
    readonly code: RetectlErrorCode,
    message: string,
    options?: { cause?: unknown; problem?: Readonly<Record<string, unknown>> },
  ) {
    super(message, options);
    this.name = 'RetectlError';
    if (options?.problem) this.problem = options.problem;
  }
}

export const usageError = (message: string) => new RetectlError('usage', message);

/** A coordinator's refusal of a key it does not know (one that predates it), in the body or the query. */
export function refusedKey(e: unknown, code: 'invalid_body' | 'invalid_query', key: string): boolean {
  if (!(e instanceof RetectlError) || e.problem?.code !== code) return false;
  const issues = Array.isArray(e.problem.issues) ? (e.problem.issues as { path?: unknown; message?: unknown }[]) : [];
  return issues.some((i) => Array.isArray(i.path) && i.path.length === 0 && typeof i.message === 'string' && i.message.includes(`"${key}"`));
}
