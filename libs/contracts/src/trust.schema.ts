import { z } from 'zod';
import { Sha256, Timestamp } from './primitives.schema.js';

/** An Ed25519 public key as a JWK; its kid is its RFC 7638 thumbprint. */
export const TrustKey = z.object({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'must be a base64url Ed25519 public key'),
  kid: z.string().min(1).max(128),
  alg: z.literal('EdDSA').optional(),
  use: z.literal('sig').optional(),
});
export type TrustKey = z.infer<typeof TrustKey>;

/**
 * One version of the trust document: the keys that may sign bundles, checkpoints and the next
 * version. Version 1 is signed by its own key; every later version by a key of the version before
 * it, so an agent walks forward from the version it pinned. `revoked` only grows.
 */
export const TrustDocument = z.strictObject({
  version: z.number().int().positive(),
  keys: z.array(TrustKey).min(1).max(16),
  revoked: z.array(z.string().min(1).max(128)).max(1024),
  issued_at: Timestamp,
  /** sha256 of the previous version's compact JWS; null for version 1. */
  previous: Sha256.nullable(),
});
export type TrustDocument = z.infer<typeof TrustDocument>;

/** `GET /v1/trust`: the signed versions after `after`, oldest first (compact JWS, typ florete-trust+jws). */
export const TrustChainResponse = z.object({
  head: z.number().int().positive(),
  versions: z.array(z.object({ version: z.number().int().positive(), document: z.string() })),
});
export type TrustChainResponse = z.infer<typeof TrustChainResponse>;

export const TrustChainQuery = z.strictObject({
  after: z
    .string()
    .regex(/^(0|[1-9][0-9]{0,9})$/, 'must be a trust version number')
    .transform(Number)
    .optional()
    .describe('only versions after this one (default 0: all)'),
});

/** What `keys rotate` and `keys revoke` did: the signing key now, the trust version that says so, how many heads were re-signed. */
export const KeyChangeResponse = z.object({
  kid: z.string(),
  trust_version: z.number().int().positive(),
  revoked: z.array(z.string()),
  resigned: z.number().int().nonnegative(),
});
export type KeyChangeResponse = z.infer<typeof KeyChangeResponse>;
