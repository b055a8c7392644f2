import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Bearer secrets look like `<kind>.<id>.<secret>`: the id finds the row, the secret is compared
 * against its stored sha256 in constant time. Only the hash is ever stored.
 */
export type SecretKind = 'flt' | 'fln' | 'fle';

export interface IssuedSecret {
  readonly id: string;
  readonly secret: string;
  readonly hash: string;
  readonly token: string;
}

export function issueSecret(kind: SecretKind): IssuedSecret {
  const id = randomBytes(9).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  return { id, secret, hash: hashSecret(secret), token: `${kind}.${id}.${secret}` };
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

const SHAPE = /^(flt|fln|fle)\.([0-9a-f]{18})\.([A-Za-z0-9_-]{43})(?:\.([A-Za-z0-9_-]{43})(?:\.([A-Za-z0-9_-]{43}))?)?$/;

export interface ParsedSecret {
  readonly kind: SecretKind;
  readonly id: string;
  readonly secret: string;
  /** Enrolment tokens only: the thumbprint of the signing key the agent must pin. */
  readonly thumbprint?: string;
  /**
   * Enrolment tokens of a coordinator that serves TLS itself: the SPKI pin of its TLS key, which the
   * agent checks during the handshake before it sends the token. The coordinator only carries it.
   */
  readonly tlsPin?: string;
}

export function parseSecret(token: string): ParsedSecret | null {
  const m = SHAPE.exec(token);
  if (!m) return null;
  const kind = m[1] as SecretKind;
  if ((kind === 'fle') !== (m[4] !== undefined)) return null;
  return { kind, id: m[2], secret: m[3], ...(m[4] ? { thumbprint: m[4] } : {}), ...(m[5] ? { tlsPin: m[5] } : {}) };
}

const DUMMY_HASH = hashSecret('not a secret');

/** Constant-time comparison of a presented secret with a stored hash; pass null when no row matched. */
export function secretMatches(secret: string, storedHash: string | null): boolean {
  const presented = Buffer.from(hashSecret(secret), 'hex');
  const stored = Buffer.from(storedHash ?? DUMMY_HASH, 'hex');
  return timingSafeEqual(presented, stored) && storedHash !== null;
}

export function bearerOf(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string') return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : null;
}
