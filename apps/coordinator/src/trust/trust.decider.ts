import type { TrustDocument, TrustKey } from '#contracts';
import { DomainError } from '../common/index.js';

/** What an operator asks of the trust document. `newKey` is the key that signs from now on, when the signer changes. */
export type TrustChange =
  | { readonly kind: 'rotate'; readonly newKey: TrustKey }
  | { readonly kind: 'revoke'; readonly kid: string; readonly newKey: TrustKey | null; readonly known: boolean };

export interface TrustDecision {
  readonly doc: TrustDocument;
  /** The key that signs the new version: the signer of the previous one (threshold 1). */
  readonly signedBy: string;
  /** The key that signs bundles and checkpoints from this version on. */
  readonly signingKid: string;
}

/** The first key of a version signs bundles, checkpoints and the next version. */
export const signerOf = (doc: TrustDocument): string => doc.keys[0].kid;

/** Version 1: the coordinator's first key, signing itself. */
export function genesisTrust(key: TrustKey, issuedAt: string): TrustDocument {
  return { version: 1, keys: [key], revoked: [], issued_at: issuedAt, previous: null };
}

/**
 * The next trust version. A rotation replaces the signer; revoking the signer is a rotation that
 * also lists it as revoked; revoking an older key lists it and keeps the signer. Revoking a key
 * twice, or one this coordinator never had, is refused.
 */
export function nextTrust(prev: TrustDocument, prevDigest: string, change: TrustChange, issuedAt: string): TrustDecision {
  const signedBy = signerOf(prev);
  const base = { version: prev.version + 1, issued_at: issuedAt, previous: prevDigest };
  switch (change.kind) {
    case 'rotate':
      return { doc: { ...base, keys: [change.newKey], revoked: prev.revoked }, signedBy, signingKid: change.newKey.kid };
    case 'revoke': {
      if (prev.revoked.includes(change.kid)) throw new DomainError('already_revoked', `key ${change.kid} was already revoked`, { kid: change.kid });
      const isSigner = prev.keys.some((k) => k.kid === change.kid);
      if (!isSigner && !change.known) throw new DomainError('unknown_key', `no signing key ${change.kid} is known to this coordinator`, { kid: change.kid });
      const revoked = [...prev.revoked, change.kid];
      if (!isSigner) return { doc: { ...base, keys: prev.keys, revoked }, signedBy, signingKid: signedBy };
      if (!change.newKey) throw new TypeError('revoking the signing key needs the key that replaces it');
      return { doc: { ...base, keys: [change.newKey], revoked }, signedBy, signingKid: change.newKey.kid };
    }
    default: {
      const never: never = change;
      throw new TypeError(`unknown trust change ${JSON.stringify(never)}`);
    }
  }
}
