import { generateKeyPairSync } from 'node:crypto';
import type { TrustKey } from '#contracts';
import { sha256Hex } from './digest.js';
import {
  CheckpointError,
  checkpointText,
  compareCheckpoints,
  noteKeyId,
  openCheckpoint,
  parseCheckpoint,
  signCheckpoint,
  type Checkpoint,
} from './checkpoint.js';

function newKey(kid: string) {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const x = (publicKey.export({ format: 'jwk' }) as { x: string }).x;
  const key: TrustKey = { kty: 'OKP', crv: 'Ed25519', x, kid };
  return { key, signer: { kid, privateKey } };
}

const k = newKey('k1');
const other = newKey('k2');
const cp: Checkpoint = { origin: 'florete.ledger/0123456789abcdef', position: 42, hash: sha256Hex('head'), time: '2026-11-30T10:00:00.000Z', trustVersion: 3 };

const failure = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    if (err instanceof CheckpointError) return err.code;
    throw err;
  }
  throw new Error('was accepted');
};

describe('checkpoint (C2SP signed note)', () => {
  it('is origin, size, base64 hash, extension lines, a blank line and an em-dash signature line', () => {
    const note = signCheckpoint(cp, k.signer);
    const lines = note.split('\n');
    expect(lines.slice(0, 6)).toEqual([
      'florete.ledger/0123456789abcdef',
      '42',
      Buffer.from(cp.hash, 'hex').toString('base64'),
      'time 2026-11-30T10:00:00.000Z',
      'trust 3',
      '',
    ]);
    expect(lines[6]).toMatch(/^— florete\.ledger\/0123456789abcdef [A-Za-z0-9+/]+=*$/);
    expect(lines[7]).toBe('');
    // key ID ‖ 64-byte Ed25519 signature, the key ID as the signed-note spec derives it.
    const sig = Buffer.from(lines[6].split(' ')[2], 'base64');
    expect(sig.length).toBe(68);
    expect(sig.readUInt32BE(0)).toBe(noteKeyId(cp.origin, k.key));
    expect(note.startsWith(checkpointText(cp))).toBe(true);
  });

  it('opens with a trusted key and gives back what was signed', () => {
    expect(openCheckpoint(signCheckpoint(cp, k.signer), [other.key, k.key])).toEqual({ checkpoint: cp, kid: 'k1' });
  });

  it('refuses a note signed by no trusted key, a bad signature, and altered text', () => {
    const note = signCheckpoint(cp, k.signer);
    expect(failure(() => openCheckpoint(note, [other.key]))).toBe('checkpoint_unknown_signer');
    expect(failure(() => openCheckpoint(note.replace('\n42\n', '\n43\n'), [k.key]))).toBe('checkpoint_bad_signature');
    const forged = signCheckpoint(cp, { kid: 'k1', privateKey: other.signer.privateKey });
    expect(failure(() => openCheckpoint(forged, [k.key]))).toBe('checkpoint_unknown_signer');
  });

  it('refuses malformed notes with a reason', () => {
    for (const bad of [
      '',
      'origin\n1\n',
      'o\n1\nAAAA\ntime x\ntrust 1\n\n— o AAAAAAA=\n',
      `o\n01\n${Buffer.alloc(32).toString('base64')}\ntime 2026-01-01T00:00:00Z\ntrust 1\n\n— o AAAAAAA=\n`,
    ]) {
      expect(failure(() => parseCheckpoint(bad))).toBe('checkpoint_malformed');
    }
  });

  it('orders checkpoints: newer accepted, older or forked or foreign refused', () => {
    const later = { ...cp, position: 43, hash: sha256Hex('next'), time: '2026-11-30T10:01:00.000Z' };
    expect(compareCheckpoints(null, cp)).toBe('newer');
    expect(compareCheckpoints(cp, later)).toBe('newer');
    expect(compareCheckpoints(cp, { ...cp, time: '2026-11-30T10:05:00.000Z' })).toBe('newer');
    expect(compareCheckpoints(cp, cp)).toBe('same');
    expect(compareCheckpoints(later, cp)).toMatchObject({ refused: 'checkpoint_rollback' });
    expect(compareCheckpoints(cp, { ...cp, time: '2026-11-30T09:00:00.000Z' })).toMatchObject({ refused: 'checkpoint_rollback' });
    expect(compareCheckpoints(cp, { ...later, time: '2026-11-30T09:00:00.000Z' })).toMatchObject({ refused: 'checkpoint_rollback' });
    expect(compareCheckpoints(cp, { ...cp, hash: sha256Hex('rewritten') })).toMatchObject({ refused: 'checkpoint_fork' });
    expect(compareCheckpoints(cp, { ...later, origin: 'florete.ledger/other' })).toMatchObject({ refused: 'checkpoint_origin' });
  });
});
