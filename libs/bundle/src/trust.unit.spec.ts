import { generateKeyPairSync } from 'node:crypto';
import type { TrustDocument, TrustKey } from '#contracts';
import { sha256Hex } from './digest.js';
import { firstVersionListing, pinOf, decodeTrustDocument, signTrustDocument, TrustChainError, walkTrustChain, type TrustPin } from './trust.js';

function newKey(name: string): { key: TrustKey; signer: { kid: string; privateKey: import('node:crypto').KeyObject } } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const x = (publicKey.export({ format: 'jwk' }) as { x: string }).x;
  return { key: { kty: 'OKP', crv: 'Ed25519', x, kid: name }, signer: { kid: name, privateKey } };
}

const a = newKey('key-a');
const b = newKey('key-b');
const c = newKey('key-c');
const evil = newKey('key-evil');

function doc(version: number, keys: TrustKey[], previous: string | null, revoked: string[] = []): TrustDocument {
  return { version, keys, revoked, issued_at: '2026-11-30T00:00:00.000Z', previous };
}

/** v1 {a} self-signed, v2 {b} by a, v3 {c} by b, v4 {c} revoking b, by c. */
function chain(): string[] {
  const v1 = signTrustDocument(doc(1, [a.key], null), a.signer);
  const v2 = signTrustDocument(doc(2, [b.key], sha256Hex(v1)), a.signer);
  const v3 = signTrustDocument(doc(3, [c.key], sha256Hex(v2)), b.signer);
  const v4 = signTrustDocument(doc(4, [c.key], sha256Hex(v3), ['key-b']), c.signer);
  return [v1, v2, v3, v4];
}

const codeOf = (fn: () => unknown): { code: string; version: number | null } => {
  try {
    fn();
  } catch (err) {
    if (err instanceof TrustChainError) return { code: err.code, version: err.version };
    throw err;
  }
  throw new Error('was accepted');
};

describe('trust chain walk', () => {
  const docs = chain();
  const enrolledWithA: TrustPin = { version: 1, keys: [a.key], revoked: [], digest: null };

  it('walks from the enrolment key to the head, step by step', () => {
    const head = walkTrustChain(enrolledWithA, docs);
    expect(head).toEqual({ version: 4, keys: [c.key], revoked: ['key-b'], digest: sha256Hex(docs[3]) });
  });

  it('starts an agent enrolled later at the first version listing its key, and ignores what lies behind its pin', () => {
    expect(firstVersionListing(docs, 'key-b')).toBe(2);
    expect(firstVersionListing(docs, 'key-c')).toBe(3);
    expect(firstVersionListing(docs, 'key-z')).toBeNull();
    const pinned = pinOf(decodeTrustDocument(docs[2]));
    expect(walkTrustChain(pinned, docs).version).toBe(4);
    expect(walkTrustChain(walkTrustChain(pinned, docs), docs).version).toBe(4);
  });

  it('refuses a version signed by a key the version before it does not list', () => {
    const forged = signTrustDocument(doc(2, [evil.key], sha256Hex(docs[0])), evil.signer);
    expect(codeOf(() => walkTrustChain(enrolledWithA, [docs[0], forged]))).toEqual({ code: 'trust_forged', version: 2 });
  });

  it('refuses a version whose signature does not verify under the kid it names', () => {
    const forged = signTrustDocument(doc(2, [evil.key], sha256Hex(docs[0])), { kid: 'key-a', privateKey: evil.signer.privateKey });
    expect(codeOf(() => walkTrustChain(enrolledWithA, [forged]))).toEqual({ code: 'trust_forged', version: 2 });
  });

  it('refuses a step that does not name its previous version, a gap, and a revocation taken back', () => {
    const head = walkTrustChain(enrolledWithA, docs);
    const unlinked = signTrustDocument(doc(5, [c.key], sha256Hex('something else'), ['key-b']), c.signer);
    expect(codeOf(() => walkTrustChain(head, [unlinked]))).toEqual({ code: 'trust_forged', version: 5 });
    const gap = signTrustDocument(doc(6, [c.key], sha256Hex(docs[3]), ['key-b']), c.signer);
    expect(codeOf(() => walkTrustChain(head, [gap]))).toEqual({ code: 'trust_gap', version: 6 });
    const unrevoked = signTrustDocument(doc(5, [c.key, b.key], sha256Hex(docs[3])), c.signer);
    expect(codeOf(() => walkTrustChain(head, [unrevoked]))).toEqual({ code: 'trust_forged', version: 5 });
  });

  it('a key revoked in the chain can no longer sign a step after it', () => {
    const head = walkTrustChain(enrolledWithA, docs);
    const byRevoked = signTrustDocument(doc(5, [evil.key], sha256Hex(docs[3]), ['key-b']), b.signer);
    expect(codeOf(() => walkTrustChain(head, [byRevoked]))).toEqual({ code: 'trust_forged', version: 5 });
  });

  it('refuses a document that does not match the contract', () => {
    const bad = signTrustDocument({ ...doc(2, [b.key], sha256Hex(docs[0])), keys: [] } as TrustDocument, a.signer);
    expect(codeOf(() => walkTrustChain(enrolledWithA, [bad]))).toEqual({ code: 'trust_malformed', version: 2 });
    expect(codeOf(() => walkTrustChain(enrolledWithA, ['a.b']))).toEqual({ code: 'trust_malformed', version: null });
  });
});
