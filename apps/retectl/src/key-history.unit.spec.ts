import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { sha256Hex, signTrustDocument, TrustChainError } from '#bundle';
import type { TrustDocument, TrustKey } from '#contracts';
import { keyHistory } from './key-history.js';

function newKey(kid: string): { key: TrustKey; signer: { kid: string; privateKey: KeyObject } } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const x = (publicKey.export({ format: 'jwk' }) as { x: string }).x;
  return { key: { kty: 'OKP', crv: 'Ed25519', x, kid }, signer: { kid, privateKey } };
}

const [a, b, c, d] = ['key-a', 'key-b', 'key-c', 'key-d'].map(newKey);
const at = (day: number) => `2026-11-0${day}T00:00:00.000Z`;
const doc = (version: number, keys: TrustKey[], previous: string | null, revoked: string[] = []): TrustDocument => ({
  version,
  keys,
  revoked,
  issued_at: at(version),
  previous,
});

/**
 * As the coordinator writes them: v1 a, self-signed; v2 rotates to b; v3 revokes the unused d (a
 * failed rotation left it in the key file); v4 revokes the signer b, which rotates to c; v5 revokes
 * the retired a.
 */
function chain(): string[] {
  const v1 = signTrustDocument(doc(1, [a.key], null), a.signer);
  const v2 = signTrustDocument(doc(2, [b.key], sha256Hex(v1)), a.signer);
  const v3 = signTrustDocument(doc(3, [b.key], sha256Hex(v2), ['key-d']), b.signer);
  const v4 = signTrustDocument(doc(4, [c.key], sha256Hex(v3), ['key-d', 'key-b']), b.signer);
  const v5 = signTrustDocument(doc(5, [c.key], sha256Hex(v4), ['key-d', 'key-b', 'key-a']), c.signer);
  return [v1, v2, v3, v4, v5];
}

describe('keyHistory', () => {
  it('gives each key its state and the trust version and time of each step, in the order the chain named them', () => {
    expect(keyHistory(chain())).toEqual({
      trust_version: 5,
      signer: 'key-c',
      keys: [
        { kid: 'key-a', state: 'revoked', listed_version: 1, listed_at: at(1), retired_version: 2, retired_at: at(2), revoked_version: 5, revoked_at: at(5) },
        { kid: 'key-b', state: 'revoked', listed_version: 2, listed_at: at(2), retired_version: 4, retired_at: at(4), revoked_version: 4, revoked_at: at(4) },
        {
          kid: 'key-d',
          state: 'revoked',
          listed_version: null,
          listed_at: null,
          retired_version: null,
          retired_at: null,
          revoked_version: 3,
          revoked_at: at(3),
        },
        {
          kid: 'key-c',
          state: 'active',
          listed_version: 4,
          listed_at: at(4),
          retired_version: null,
          retired_at: null,
          revoked_version: null,
          revoked_at: null,
        },
      ],
    });
  });

  it('says retired for a key rotated out and not revoked, in any order the versions come', () => {
    const history = keyHistory(chain().slice(0, 2).reverse());
    expect(history.keys.map((k) => [k.kid, k.state])).toEqual([
      ['key-a', 'retired'],
      ['key-b', 'active'],
    ]);
    expect(history.signer).toBe('key-b');
  });

  it('reads nothing from a chain that does not verify', () => {
    const [v1] = chain();
    const forged = signTrustDocument(doc(2, [d.key], sha256Hex(v1)), d.signer);
    expect(() => keyHistory([v1, forged])).toThrow(TrustChainError);
    expect(() => keyHistory(chain().slice(1))).toThrow(/no version 1/);
  });
});
