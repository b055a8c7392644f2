import * as jose from 'jose';
import { BUNDLE_TYP, BundleVerifyError, keyThumbprint, signBundle, verifyBundleSignature } from './jws.js';

async function keyPair(kid: string) {
  const { privateKey, publicKey } = await jose.generateKeyPair('Ed25519', { extractable: true });
  const jwk = { ...(await jose.exportJWK(publicKey)), kid, alg: 'EdDSA' };
  return { signing: { kid, privateKey }, jwks: { keys: [jwk] } as jose.JSONWebKeySet };
}

async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'verified';
  } catch (e) {
    if (e instanceof BundleVerifyError) return e.code;
    throw e;
  }
}

describe('bundle JWS', () => {
  const payload = new TextEncoder().encode('{"node":"alpha","version":1}');

  it('round-trips the exact payload bytes with header {alg: EdDSA, kid, typ}', async () => {
    const k = await keyPair('k1');
    const jws = await signBundle(payload, k.signing);
    expect(jose.decodeProtectedHeader(jws)).toEqual({ alg: 'EdDSA', kid: 'k1', typ: BUNDLE_TYP });
    const verified = await verifyBundleSignature(jws, k.jwks);
    expect(Buffer.from(verified.payload).equals(Buffer.from(payload))).toBe(true);
    expect(verified.kid).toBe('k1');
  });

  it('is deterministic, so rebuilt projections sign identical bytes', async () => {
    const k = await keyPair('k1');
    expect(await signBundle(payload, k.signing)).toBe(await signBundle(payload, k.signing));
  });

  it('rejects a tampered payload, a foreign key, an unknown kid and a truncated token', async () => {
    const k = await keyPair('k1');
    const other = await keyPair('k1');
    const jws = await signBundle(payload, k.signing);
    const [h, , s] = jws.split('.');
    const tampered = `${h}.${Buffer.from('{"node":"alpha","version":9}').toString('base64url')}.${s}`;
    expect(await failure(verifyBundleSignature(tampered, k.jwks))).toBe('bad_signature');
    expect(await failure(verifyBundleSignature(jws, other.jwks))).toBe('bad_signature');
    expect(await failure(verifyBundleSignature(jws, { keys: [{ ...k.jwks.keys[0], kid: 'k2' }] }))).toBe('unknown_key');
    expect(await failure(verifyBundleSignature(jws.slice(0, jws.lastIndexOf('.')), k.jwks))).toBe('malformed');
    expect(await failure(verifyBundleSignature('not a jws', k.jwks))).toBe('malformed');
  });

  it('rejects a token of another type even when its signature is good', async () => {
    const k = await keyPair('k1');
    const jws = await new jose.CompactSign(payload).setProtectedHeader({ alg: 'EdDSA', kid: 'k1', typ: 'JWT' }).sign(k.signing.privateKey);
    expect(await failure(verifyBundleSignature(jws, k.jwks))).toBe('wrong_type');
  });

  it('computes the RFC 7638 thumbprint enrolment tokens carry', async () => {
    const k = await keyPair('k1');
    const { kid: _kid, alg: _alg, ...bare } = k.jwks.keys[0];
    expect(await keyThumbprint(k.jwks.keys[0])).toBe(await jose.calculateJwkThumbprint(bare, 'sha256'));
  });
});

describe('bundle JWS interoperability', () => {
  it('produces exactly the bytes jose would for the same key, header and payload', async () => {
    const { privateKey } = await jose.generateKeyPair('Ed25519', { extractable: true });
    const payload = new TextEncoder().encode('{"node":"beta","version":7}');
    const ours = await signBundle(payload, { kid: 'k9', privateKey });
    const theirs = await new jose.CompactSign(payload).setProtectedHeader({ alg: 'EdDSA', kid: 'k9', typ: BUNDLE_TYP }).sign(privateKey);
    expect(ours).toBe(theirs);
  });
});
