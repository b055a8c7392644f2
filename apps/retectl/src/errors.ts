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
