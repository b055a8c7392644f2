import type { TrustKey } from '#contracts';
import { DomainError } from '../common/index.js';
import { genesisTrust, nextTrust, signerOf } from './trust.decider.js';

const key = (kid: string): TrustKey => ({ kty: 'OKP', crv: 'Ed25519', x: 'A'.repeat(43), kid });
const at = '2026-11-30T00:00:00.000Z';
const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (err instanceof DomainError) return err.code;
    throw err;
  }
  return 'accepted';
};

describe('trust decider', () => {
  const v1 = genesisTrust(key('a'), at);

  it('rotates: the next version lists only the new key and is signed by the old one', () => {
    const d = nextTrust(v1, 'd1', { kind: 'rotate', newKey: key('b') }, at);
    expect(d).toEqual({ doc: { version: 2, keys: [key('b')], revoked: [], issued_at: at, previous: 'd1' }, signedBy: 'a', signingKid: 'b' });
    expect(signerOf(d.doc)).toBe('b');
  });

  it('revokes an older key without changing the signer, and the signer by rotating', () => {
    const v2 = nextTrust(v1, 'd1', { kind: 'rotate', newKey: key('b') }, at).doc;
    const old = nextTrust(v2, 'd2', { kind: 'revoke', kid: 'a', newKey: null, known: true }, at);
    expect(old).toMatchObject({ doc: { version: 3, keys: [key('b')], revoked: ['a'] }, signedBy: 'b', signingKid: 'b' });
    const signer = nextTrust(old.doc, 'd3', { kind: 'revoke', kid: 'b', newKey: key('c'), known: true }, at);
    expect(signer).toMatchObject({ doc: { version: 4, keys: [key('c')], revoked: ['a', 'b'] }, signedBy: 'b', signingKid: 'c' });
  });

  it('refuses to revoke a key twice or one it never had', () => {
    const v2 = nextTrust(v1, 'd1', { kind: 'revoke', kid: 'a', newKey: key('b'), known: true }, at).doc;
    expect(codeOf(() => nextTrust(v2, 'd2', { kind: 'revoke', kid: 'a', newKey: null, known: true }, at))).toBe('already_revoked');
    expect(codeOf(() => nextTrust(v2, 'd2', { kind: 'revoke', kid: 'zz', newKey: null, known: false }, at))).toBe('unknown_key');
  });
});
