import * as jose from 'jose';
import { canonicalJson, setDigest, sha256Hex, signBundle, type SigningKey } from '#bundle';
import { BundleRejected, verifyBundle } from './verify-bundle.js';

async function keyPair(): Promise<{ key: SigningKey; jwks: jose.JSONWebKeySet }> {
  const { privateKey, publicKey } = await jose.generateKeyPair('Ed25519', { extractable: true });
  const jwk = await jose.exportJWK(publicKey);
  const kid = await jose.calculateJwkThumbprint(jwk, 'sha256');
  return { key: { kid, privateKey }, jwks: { keys: [{ ...jwk, kid, alg: 'EdDSA' }] } };
}

function payload(version: number, files: Record<string, string>, node = 'alpha', retired = false) {
  const artifacts = Object.entries(files).map(([name, c]) => ({
    name,
    sha256: sha256Hex(c),
    size: Buffer.byteLength(c),
    content: Buffer.from(c).toString('base64'),
  }));
  return { node, version, set_digest: setDigest(artifacts), position: 1, publish_id: 'p', issued_at: '2026-11-29T00:00:00Z', retired, artifacts };
}

const sign = (p: unknown, key: SigningKey) => signBundle(Buffer.from(canonicalJson(p)), key);

async function rejection(promise: Promise<unknown>): Promise<{ code: string; version: number | null }> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof BundleRejected) return { code: err.code, version: err.version };
    throw err;
  }
  throw new Error('was accepted');
}

describe('verifyBundle', () => {
  it('accepts a bundle for this node at or above the high-water mark and returns its files', async () => {
    const { key, jwks } = await keyPair();
    const ok = await verifyBundle(await sign(payload(5, { 'flor.json': '{}\n' }), key), {
      pinned: jwks,
      trustVersion: 1,
      revoked: [],
      node: 'alpha',
      highWater: 5,
      checkpointPosition: 1,
    });
    expect(ok.payload.version).toBe(5);
    expect(ok.files.get('flor.json')?.toString()).toBe('{}\n');
  });

  it('rejects each kind of bad bundle with its own code', async () => {
    const { key, jwks } = await keyPair();
    const other = await keyPair();
    const ctx = { pinned: jwks, trustVersion: 2, revoked: [], node: 'alpha', highWater: 5, checkpointPosition: 1 };
    const good = payload(6, { 'flor.json': '{}\n' });
    expect(await rejection(verifyBundle(await sign(good, other.key), ctx))).toEqual({ code: 'unknown_key', version: null });
    expect(await rejection(verifyBundle(await sign(good, { kid: key.kid, privateKey: other.key.privateKey }), ctx))).toEqual({
      code: 'bad_signature',
      version: null,
    });
    expect(await rejection(verifyBundle('a.b', ctx))).toEqual({ code: 'malformed', version: null });
    expect(await rejection(verifyBundle(await sign(payload(6, {}, 'beta'), key), ctx))).toEqual({ code: 'wrong_node', version: 6 });
    expect(await rejection(verifyBundle(await sign(payload(4, {}), key), ctx))).toEqual({ code: 'replayed', version: 4 });
    const tampered = payload(6, { 'flor.json': '{}\n' });
    tampered.artifacts[0].content = Buffer.from('{"evil":1}\n').toString('base64');
    expect(await rejection(verifyBundle(await sign(tampered, key), ctx))).toEqual({ code: 'digest_mismatch', version: 6 });
    expect(await rejection(verifyBundle(await sign({ ...good, set_digest: sha256Hex('x') }, key), ctx))).toEqual({ code: 'digest_mismatch', version: 6 });
    expect(await rejection(verifyBundle(await sign({ ...good, extra: true }, key), ctx))).toEqual({ code: 'bad_payload', version: null });
    expect(await rejection(verifyBundle(await sign(payload(6, { a: '1' }, 'alpha', true), key), ctx))).toEqual({ code: 'bad_payload', version: 6 });
    expect(await rejection(verifyBundle(await sign(good, other.key), { ...ctx, revoked: [other.key.kid] }))).toEqual({ code: 'revoked_key', version: null });
  });

  it('refuses a bundle stamped after the newest checkpoint it verified, or with none held', async () => {
    const { key, jwks } = await keyPair();
    const jws = await sign({ ...payload(6, {}), position: 41 }, key);
    const ctx = { pinned: jwks, trustVersion: 1, revoked: [], node: 'alpha', highWater: 5 };
    expect((await verifyBundle(jws, { ...ctx, checkpointPosition: 41 })).payload.position).toBe(41);
    expect(await rejection(verifyBundle(jws, { ...ctx, checkpointPosition: 40 }))).toEqual({ code: 'stamped_after_checkpoint', version: 6 });
    expect(await rejection(verifyBundle(jws, { ...ctx, checkpointPosition: null }))).toEqual({ code: 'stamped_after_checkpoint', version: 6 });
  });
});
