import { KeyObject, sign } from 'node:crypto';
import type * as jose from 'jose';

/**
 * jose, loaded the first time a signature is verified or a thumbprint taken: what imports this library
 * for its digests (retectl compile) does not load it.
 */
const loadJose = (): Promise<typeof jose> => import('jose');

export const BUNDLE_TYP = 'florete-bundle+jws';

export interface SigningKey {
  readonly kid: string;
  readonly privateKey: jose.CryptoKey | jose.KeyObject;
}

/**
 * Signs a bundle payload (already-canonical bytes) as a compact JWS. Ed25519 is deterministic, so the
 * same key and payload always give the same JWS: the same ETag stands for the same bytes on every
 * replica. Signed with node:crypto directly: after a fleet-wide change every node fetches, so every
 * replica signs, a bundle per node, and WebCrypto's per-call overhead (jose's path) costs more for
 * the same bytes (bench:primitives; decision 0001).
 */
export async function signBundle(payload: Uint8Array, key: SigningKey): Promise<string> {
  const privateKey = key.privateKey instanceof KeyObject ? key.privateKey : KeyObject.from(key.privateKey as Parameters<typeof KeyObject.from>[0]);
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new TypeError(`signing key ${key.kid} is not an Ed25519 private key`);
  const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', kid: key.kid, typ: BUNDLE_TYP })).toString('base64url');
  const input = `${header}.${Buffer.from(payload).toString('base64url')}`;
  return `${input}.${sign(null, Buffer.from(input), privateKey).toString('base64url')}`;
}

export type BundleVerifyFailure = 'malformed' | 'unknown_key' | 'bad_signature' | 'wrong_type' | 'wrong_algorithm';

export class BundleVerifyError extends Error {
  constructor(
    readonly code: BundleVerifyFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'BundleVerifyError';
  }
}

/** Verifies a compact JWS against a pinned JWKS and returns its payload bytes and kid. */
export async function verifyBundleSignature(jws: string, jwks: jose.JSONWebKeySet): Promise<{ payload: Uint8Array; kid: string }> {
  const jose = await loadJose();
  let header: jose.ProtectedHeaderParameters;
  try {
    header = jose.decodeProtectedHeader(jws);
  } catch (cause) {
    throw new BundleVerifyError('malformed', 'bundle is not a compact JWS', { cause });
  }
  if (jws.split('.').length !== 3) throw new BundleVerifyError('malformed', 'bundle is not a compact JWS');
  if (header.alg !== 'EdDSA') throw new BundleVerifyError('wrong_algorithm', `bundle alg ${String(header.alg)} is not EdDSA`);
  if (header.typ !== BUNDLE_TYP) throw new BundleVerifyError('wrong_type', `bundle typ ${String(header.typ)} is not ${BUNDLE_TYP}`);
  const jwk = jwks.keys.find((k) => k.kid === header.kid);
  if (!jwk) throw new BundleVerifyError('unknown_key', `bundle is signed by unknown key ${String(header.kid)}`);
  const key = await jose.importJWK(jwk, 'EdDSA');
  try {
    const { payload } = await jose.compactVerify(jws, key, { algorithms: ['EdDSA'] });
    return { payload, kid: jwk.kid as string };
  } catch (cause) {
    throw new BundleVerifyError('bad_signature', 'signature does not verify', { cause });
  }
}

/** RFC 7638 thumbprint of a public JWK, as carried by enrolment tokens. */
export async function keyThumbprint(jwk: jose.JWK): Promise<string> {
  return (await loadJose()).calculateJwkThumbprint(jwk, 'sha256');
}
