/** Every failure a user or a node can cause carries one of these codes; HTTP status is mapped at the edge. */
export type DomainErrorCode =
  | 'invalid_body'
  | 'invalid_query'
  | 'invalid_path'
  | 'missing_blobs'
  | 'invalid_deb'
  | 'invalid_archive'
  | 'package_conflict'
  | 'digest_mismatch'
  | 'stale_position'
  | 'unknown_node'
  | 'unknown_version'
  | 'unknown_publish'
  | 'node_retired'
  | 'invalid_rollback_target'
  | 'ineligible_nodes'
  | 'unauthenticated'
  | 'retired_credential'
  | 'forbidden'
  | 'out_of_scope'
  | 'invalid_enrolment_token'
  | 'not_found'
  | 'body_too_large'
  | 'unsupported_media_type'
  | 'unsupported_content_encoding'
  | 'ledger_busy'
  | 'rate_limited'
  | 'bad_url'
  | 'uri_too_long'
  | 'headers_too_large'
  | 'bad_request'
  | 'request_timeout'
  | 'unknown_key'
  | 'already_revoked'
  | 'token_expired'
  | 'token_revoked'
  | 'unknown_token'
  | 'ambiguous_token'
  | 'last_admin_token'
  | 'backup_unavailable'
  | 'invalid_prefer'
  | 'too_many_watches'
  | 'shutting_down'
  | 'database_unavailable'
  | 'rollout_in_progress'
  | 'invalid_rollout'
  | 'rollout_state'
  | 'unknown_rollout'
  | 'ambiguous_rollout'
  | 'not_confirmable'
  | 'already_confirmed'
  | 'witness_key_registered';

export class DomainError extends Error {
  constructor(
    readonly code: DomainErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DomainError';
  }
}
