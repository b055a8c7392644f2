import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { TrustDocument, TrustKey } from '#contracts';
import { sha256Hex } from './digest.js';
import { signCheckpoint, type Checkpoint } from './checkpoint.js';
import { signTrustDocument } from './trust.js';
import { attributeCheckpoint, CheckpointAuditError, firstDisagreement, flagWitnesses, ledgerOrigin } from './checkpoint-audit.js';

function newKey(kid: string): { key: TrustKey; signer: { kid: string; privateKey: KeyObject } } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { key: { kty: 'OKP', crv: 'Ed25519', x: (publicKey.export({ format: 'jwk' }) as { x: string }).x, kid }, signer: { kid, privateKey } };
}

const a = newKey('key-a');
const b = newKey('key-b');
const c = newKey('key-c');
const evil = newKey('key-evil');
const doc = (version: number, keys: TrustKey[], previous: string | null, issued: string, revoked: string[] = []): TrustDocument => ({
  version,
  keys,
  revoked,
  issued_at: issued,
  previous,
});

/** v1 {a} on day 1, v2 {b} by a on day 2 (a rotated out), v3 {c} by b on day 3 revoking b. */
const v1 = signTrustDocument(doc(1, [a.key], null, '2026-01-01T00:00:00.000Z'), a.signer);
const v2 = signTrustDocument(doc(2, [b.key], sha256Hex(v1), '2026-01-02T00:00:00.000Z'), a.signer);
const v3 = signTrustDocument(doc(3, [c.key], sha256Hex(v2), '2026-01-03T00:00:00.000Z', ['key-b']), b.signer);
const chain = [v3, v1, v2];
const origin = ledgerOrigin(sha256Hex(v1));
const cp = (trustVersion: number, time: string, position = 7): Checkpoint => ({ origin, position, hash: sha256Hex(`head ${position}`), time, trustVersion });

const failure = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    if (err instanceof CheckpointAuditError) return err.code;
    throw err;
  }
  throw new Error('was accepted');
};

describe('a kept checkpoint against the trust chain', () => {
  it('accepts one signed by a key rotated out since, and says when it was replaced', () => {
    const kept = attributeCheckpoint(signCheckpoint(cp(1, '2026-01-01T12:00:00.000Z'), a.signer), chain);
    expect(kept).toMatchObject({ kid: 'key-a', replaced: { version: 2 }, revoked: null, checkpoint: { position: 7, trustVersion: 1 } });
  });

  it('accepts one signed by the current key', () => {
    expect(attributeCheckpoint(signCheckpoint(cp(3, '2026-01-04T00:00:00.000Z'), c.signer), chain)).toMatchObject({
      kid: 'key-c',
      replaced: null,
      revoked: null,
    });
  });

  it('accepts a key revoked later only for a time before the revocation, and says so', () => {
    expect(attributeCheckpoint(signCheckpoint(cp(2, '2026-01-02T12:00:00.000Z'), b.signer), chain)).toMatchObject({
      kid: 'key-b',
      revoked: { version: 3, at: '2026-01-03T00:00:00.000Z' },
    });
    expect(failure(() => attributeCheckpoint(signCheckpoint(cp(2, '2026-01-03T00:00:00.000Z'), b.signer), chain))).toBe('checkpoint_revoked');
  });

  it('refuses another ledger, an altered note, an unknown trust version, a wrong key and a forged chain', () => {
    const note = signCheckpoint(cp(1, '2026-01-01T12:00:00.000Z'), a.signer);
    expect(
      failure(() => attributeCheckpoint(signCheckpoint({ ...cp(1, '2026-01-01T12:00:00.000Z'), origin: 'florete.ledger/0000000000000000' }, a.signer), chain)),
    ).toBe('checkpoint_origin');
    expect(failure(() => attributeCheckpoint(note.replace('\n7\n', '\n8\n'), chain))).toBe('checkpoint_bad_signature');
    expect(failure(() => attributeCheckpoint(signCheckpoint(cp(4, '2026-01-05T00:00:00.000Z'), c.signer), chain))).toBe('checkpoint_unknown_signer');
    expect(failure(() => attributeCheckpoint(signCheckpoint(cp(2, '2026-01-02T12:00:00.000Z'), a.signer), chain))).toBe('checkpoint_unknown_signer');
    const forged = signTrustDocument(doc(2, [evil.key], sha256Hex(v1), '2026-01-02T00:00:00.000Z'), evil.signer);
    expect(failure(() => attributeCheckpoint(note, [v1, forged]))).toBe('checkpoint_trust');
    expect(failure(() => attributeCheckpoint('not a note', chain))).toBe('checkpoint_malformed');
  });
});

describe('firstDisagreement', () => {
  const sightings = Array.from({ length: 100 }, (_, i) => ({ position: i * 3 + 1, hash: `h${i * 3 + 1}` }));

  it('finds the first sighting the ledger parts from, in few look-ups', async () => {
    let lookups = 0;
    const rewrittenFrom = 151;
    const found = await firstDisagreement(sightings, async (p) => {
      lookups++;
      return p >= rewrittenFrom ? `other${p}` : `h${p}`;
    });
    expect(found).toEqual({ sighting: { position: 151, hash: 'h151' }, ledger: 'other151' });
    expect(lookups).toBeLessThanOrEqual(8);
  });

  it('is null when the ledger agrees everywhere, and names a position the ledger lost', async () => {
    expect(await firstDisagreement(sightings, async (p) => `h${p}`)).toBeNull();
    expect(await firstDisagreement(sightings, async (p) => (p > 200 ? null : `h${p}`))).toEqual({ sighting: { position: 202, hash: 'h202' }, ledger: null });
  });
});

describe('flagWitnesses', () => {
  it('flags one position with two hashes, and a held hash the ledger no longer has', () => {
    const flags = flagWitnesses([
      { witness: 'alpha', position: 9, hash: 'old', ledgerHash: 'new' },
      { witness: 'beta', position: 9, hash: 'old', ledgerHash: 'new' },
      { witness: '(coordinator)', position: 9, hash: 'new', ledgerHash: 'new' },
      { witness: 'gamma', position: 4, hash: 'x', ledgerHash: 'x' },
    ]);
    expect(flags).toEqual([
      {
        kind: 'fork',
        position: 9,
        hashes: [
          { hash: 'old', witnesses: ['alpha', 'beta'] },
          { hash: 'new', witnesses: ['(coordinator)'] },
        ],
      },
      { kind: 'ledger', witness: 'alpha', position: 9, held: 'old', ledger: 'new' },
      { kind: 'ledger', witness: 'beta', position: 9, held: 'old', ledger: 'new' },
    ]);
  });

  it('flags nothing when every witness agrees with the ledger', () => {
    expect(
      flagWitnesses([
        { witness: 'alpha', position: 9, hash: 'h', ledgerHash: 'h' },
        { witness: 'beta', position: 5, hash: 'g', ledgerHash: 'g' },
      ]),
    ).toEqual([]);
  });
});
