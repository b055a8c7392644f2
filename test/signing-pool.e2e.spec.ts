import { generateKeyPairSync, randomBytes, verify } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { jest } from '@jest/globals';

jest.setTimeout(60_000);

/**
 * The signing threads as the built coordinator runs them (the compiled worker beside the compiled
 * pool): a batch signed on threads gives, in order, the very bytes the calling thread gives, each a
 * valid Ed25519 signature of its payload.
 */
describe('the signing pool, built', () => {
  it('signs a batch on threads exactly as on one thread, in order', async () => {
    type Pool = { signAll(p: readonly Uint8Array[], k: { kid: string; privateKey: unknown }): Promise<string[]>; close(): Promise<void> };
    const { SigningPool } = (await import(pathToFileURL(resolve('dist/apps/coordinator/src/bundles/signing-pool.js')).href)) as { SigningPool: new (size?: number, threshold?: number, idleMs?: number) => Pool };
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const key = { kid: 'k-pool', privateKey };
    const payloads = Array.from({ length: 301 }, (_, i) => Buffer.from(JSON.stringify({ i, pad: randomBytes(64).toString('base64') })));
    const threads = new SigningPool(3, 1, 300);
    const inline = new SigningPool(1);
    try {
      const a = await threads.signAll(payloads, key);
      const b = await inline.signAll(payloads, key);
      // The threads did the signing: the compiled worker was found and started, one per slice.
      const workersOf = () => (threads as unknown as { workers: unknown[] | null }).workers;
      expect(workersOf()).toHaveLength(3);
      expect(a).toHaveLength(payloads.length);
      expect(a).toEqual(b);
      for (const [i, jws] of a.entries()) {
        const [header, payload, signature] = jws.split('.');
        expect(Buffer.from(payload, 'base64url').equals(payloads[i])).toBe(true);
        expect(verify(null, Buffer.from(`${header}.${payload}`), publicKey, Buffer.from(signature, 'base64url'))).toBe(true);
      }
      // With no batch for a while the threads stop; the next batch starts them again, with the same answer.
      await new Promise((r) => setTimeout(r, 1000));
      expect(workersOf()).toBeNull();
      expect(await threads.signAll(payloads, key)).toEqual(b);
      expect(workersOf()).toHaveLength(3);
    } finally {
      await threads.close();
    }
  });
});
