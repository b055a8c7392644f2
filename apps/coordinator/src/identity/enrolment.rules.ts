import type { ParsedSecret } from './secrets.js';

/** An enrolment token as stored: only what the rules below look at. */
export interface StoredEnrolmentToken {
  readonly node: string;
  readonly used_at: Date | string | null;
  readonly expires_at: Date | string;
  readonly thumbprint: string;
}

/**
 * Pure: why an enrolment token that matched its secret may not enrol, or null when it may. Single
 * use, unexpired, and issued for the signing key the agent was told to expect.
 */
export function enrolmentTokenRefusal(row: StoredEnrolmentToken, presented: Pick<ParsedSecret, 'thumbprint'>, now: Date): string | null {
  if (row.used_at) return 'enrolment token was already used';
  if (new Date(row.expires_at) <= now) return `enrolment token expired at ${new Date(row.expires_at).toISOString()}`;
  if (row.thumbprint !== presented.thumbprint) return 'enrolment token carries the wrong key thumbprint';
  return null;
}
