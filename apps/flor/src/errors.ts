/** Why a step of the agent failed; tests and the control socket carry the code, people read the message. */
export type AgentErrorCode =
  | 'not_enrolled'
  | 'already_enrolled'
  | 'coordinator_owned'
  | 'not_a_set'
  | 'set_mismatch'
  | 'wrong_node'
  | 'thumbprint_mismatch'
  | 'tls_pin_mismatch'
  | 'tls_untrusted'
  | 'insecure_http'
  | 'enrol_refused'
  | 'unreachable'
  | 'timeout'
  | 'aborted'
  | 'unavailable'
  | 'unauthorized'
  | 'node_retired'
  | 'http_error'
  | 'bad_response'
  | 'bad_config'
  | 'not_running'
  | 'activation_failed'
  | 'bad_resources'
  | 'unsupported_resource'
  | 'refused_resource'
  | 'unknown_user'
  | 'unknown_group'
  | 'resource_failed'
  | 'package_failed'
  | 'self_check_failed'
  | 'bad_state'
  | 'no_checkpoint';

export class AgentError extends Error {
  constructor(
    readonly code: AgentErrorCode,
    message: string,
    options?: { cause?: unknown; retryAfterMs?: number; retiredVersion?: number | null; status?: number },
  ) {
    super(message, options);
    this.name = 'AgentError';
    this.retryAfterMs = options?.retryAfterMs;
    this.retiredVersion = options?.retiredVersion ?? null;
    this.status = options?.status ?? null;
  }
  readonly retryAfterMs: number | undefined;
  /** The HTTP status the coordinator (or whatever answered for it) gave; null when nothing answered. */
  readonly status: number | null;
  /** node_retired: the node's final version, when the coordinator named it. */
  readonly retiredVersion: number | null;
}

/** A bad flag or argument: main exits 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
