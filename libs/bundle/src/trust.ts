import { createPublicKey, KeyObject, verify, sign } from 'node:crypto';
import { TrustDocument, type TrustKey } from '#contracts/files';
import { canonicalJson } from './canonical-json.js';
import { sha256Hex } from './digest.js';
import type { SigningKey } from './jws.js';

export const TRUST_TYP = 'florete-trust+jws';

/**
 * What an agent trusts: a trust version and its keys. `digest` (sha256 of that version's JWS) links
 * the next version to it; it is null for a pin taken from enrolment alone, before any walk.
 */
export interface TrustPin {
  readonly version: number;
  readonly keys: readonly TrustKey[];
  readonly revoked: readonly string[];
  readonly digest: string | null;
}

export type TrustChainFailure = 'trust_malformed' | 'trust_gap' | 'trust_forged';

/** A trust version the agent refuses; `version` names the step of the chain that failed. */
export class TrustChainError extends Error {
  constructor(
    readonly code: TrustChainFailure,
    readonly version: number | null,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TrustChainError';
  }
}

/** Signs a trust document as a compact JWS; Ed25519 is deterministic, so the same inputs give the same bytes. */
export function signTrustDocument(doc: TrustDocument, key: SigningKey): string {
  const privateKey = key.privateKey instanceof KeyObject ? key.privateKey : KeyObject.from(key.privateKey as Parameters<typeof KeyObject.from>[0]);
  const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', kid: key.kid, typ: TRUST_TYP })).toString('base64url');
  const input = `${header}.${Buffer.from(canonicalJson(doc), 'utf8').toString('base64url')}`;
  return `${input}.${sign(null, Buffer.from(input), privateKey).toString('base64url')}`;
}

export interface DecodedTrust {
  readonly doc: TrustDocument;
  readonly kid: string;
  readonly jws: string;
}

/** Parses a trust JWS without checking its signature: the walk decides whom to check it against. */
export function decodeTrustDocument(jws: string): DecodedTrust {
  const parts = jws.split('.');
  if (parts.length !== 3) throw new TrustChainError('trust_malformed', null, 'trust document is not a compact JWS');
  let header: { alg?: unknown; kid?: unknown; typ?: unknown };
  let raw: unknown;
  try {
    header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
    raw = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
  } catch (cause) {
    throw new TrustChainError('trust_malformed', null, 'trust document is not a compact JWS of JSON', { cause });
  }
  const parsed = TrustDocument.safeParse(raw);
  const version = typeof (raw as { version?: unknown })?.version === 'number' ? (raw as { version: number }).version : null;
  if (!parsed.success) {
    throw new TrustChainError(
      'trust_malformed',
      version,
      `trust version ${version ?? '?'} does not match the trust contract: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  }
  if (header.alg !== 'EdDSA' || header.typ !== TRUST_TYP || typeof header.kid !== 'string') {
    throw new TrustChainError('trust_malformed', parsed.data.version, `trust version ${parsed.data.version} is not an EdDSA ${TRUST_TYP} with a kid`);
  }
  return { doc: parsed.data, kid: header.kid, jws };
}

/** True when `jws` carries a valid Ed25519 signature by `key`. */
export function signedBy(jws: string, key: TrustKey): boolean {
  const i = jws.lastIndexOf('.');
  try {
    const publicKey = createPublicKey({ key: { kty: key.kty, crv: key.crv, x: key.x }, format: 'jwk' });
    return verify(null, Buffer.from(jws.slice(0, i)), publicKey, Buffer.from(jws.slice(i + 1), 'base64url'));
  } catch {
    return false;
  }
}

/** The pin a version gives once it is trusted. */
export function pinOf(decoded: DecodedTrust): TrustPin {
  return { version: decoded.doc.version, keys: decoded.doc.keys, revoked: decoded.doc.revoked, digest: sha256Hex(decoded.jws) };
}

/**
 * Walks the chain forward from `pin`: each version must be the next number, be signed by a key the
 * version before it lists, name that version's digest (when known) and keep its revocations.
 * Versions at or below the pin are ignored (never a rollback); returns the pin of the last step,
 * or throws at the first step that fails, having trusted nothing from it on.
 */
export function walkTrustChain(pin: TrustPin, documents: readonly string[]): TrustPin {
  const steps = documents
    .map(decodeTrustDocument)
    .filter((d) => d.doc.version > pin.version)
    .sort((a, b) => a.doc.version - b.doc.version);
  let current = pin;
  for (const step of steps) {
    const { doc, kid } = step;
    if (doc.version !== current.version + 1)
      throw new TrustChainError(
        'trust_gap',
        doc.version,
        `trust version ${doc.version} does not follow version ${current.version}: version ${current.version + 1} is missing`,
      );
    const key = current.keys.find((k) => k.kid === kid);
    if (!key)
      throw new TrustChainError(
        'trust_forged',
        doc.version,
        `trust version ${doc.version} is signed by key ${kid}, which trust version ${current.version} does not list`,
      );
    if (!signedBy(step.jws, key))
      throw new TrustChainError('trust_forged', doc.version, `trust version ${doc.version}: the signature by key ${kid} does not verify`);
    if (current.digest !== null && doc.previous !== current.digest) {
      throw new TrustChainError(
        'trust_forged',
        doc.version,
        `trust version ${doc.version} does not name trust version ${current.version} as its previous version`,
      );
    }
    const dropped = current.revoked.filter((r) => !doc.revoked.includes(r));
    if (dropped.length > 0)
      throw new TrustChainError('trust_forged', doc.version, `trust version ${doc.version} takes back the revocation of ${dropped.join(', ')}`);
    const readmitted = doc.keys.filter((k) => doc.revoked.includes(k.kid));
    if (readmitted.length > 0) throw new TrustChainError('trust_forged', doc.version, `trust version ${doc.version} lists revoked key ${readmitted[0].kid}`);
    current = pinOf(step);
  }
  return current;
}

/**
 * The first version that lists `kid`: where an agent whose only pin is the key from its enrolment
 * starts walking. The documents are not trusted for this; the walk checks every step after it.
 */
export function firstVersionListing(documents: readonly string[], kid: string): number | null {
  const versions = documents
    .map(decodeTrustDocument)
    .filter((d) => d.doc.keys.some((k) => k.kid === kid))
    .map((d) => d.doc.version);
  return versions.length === 0 ? null : Math.min(...versions);
}
