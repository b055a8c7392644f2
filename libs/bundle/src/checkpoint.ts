import { createHash, createPublicKey, KeyObject, sign, verify } from 'node:crypto';
import type { TrustKey } from '#contracts';

/**
 * Ledger checkpoints as C2SP signed notes (a tlog checkpoint): origin, tree size (the ledger
 * position), the base64 head hash, then two extension lines, the signing time and the trust
 * version of the signing key; a blank line; one `— <name> <base64(key id ‖ signature)>` line per
 * Ed25519 signature. The hash is the ledger's chain hash at that position, not a Merkle root.
 */
export interface Checkpoint {
  readonly origin: string;
  readonly position: number;
  /** Hex, as the ledger stores it. */
  readonly hash: string;
  /** RFC 3339 UTC. */
  readonly time: string;
  readonly trustVersion: number;
}

export interface NoteSignature {
  readonly name: string;
  readonly keyId: number;
  readonly signature: Buffer;
}

export type CheckpointFailure = 'checkpoint_malformed' | 'checkpoint_unknown_signer' | 'checkpoint_bad_signature';

export class CheckpointError extends Error {
  constructor(
    readonly code: CheckpointFailure,
    message: string,
  ) {
    super(message);
    this.name = 'CheckpointError';
  }
}

const ED25519 = 0x01;
const MAX_SIGNATURES = 16;
const MAX_NOTE = 4096;

/** The note text that gets signed (ends in a newline). */
export function checkpointText(c: Checkpoint): string {
  if (!/^[^\s+]+$/.test(c.origin)) throw new TypeError(`checkpoint origin ${JSON.stringify(c.origin)} must be non-empty, without spaces or "+"`);
  return `${c.origin}\n${c.position}\n${Buffer.from(c.hash, 'hex').toString('base64')}\ntime ${c.time}\ntrust ${c.trustVersion}\n`;
}

/** C2SP key ID: the first four bytes of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ 32-byte public key), big-endian. */
export function noteKeyId(name: string, key: TrustKey): number {
  const raw = Buffer.from(key.x, 'base64url');
  return createHash('sha256')
    .update(Buffer.concat([Buffer.from(`${name}\n`, 'utf8'), Buffer.from([ED25519]), raw]))
    .digest()
    .readUInt32BE(0);
}

function privateOf(key: KeyObject | { privateKey: unknown }): KeyObject {
  const k = key instanceof KeyObject ? key : (key.privateKey as KeyObject);
  return k instanceof KeyObject ? k : KeyObject.from(k as Parameters<typeof KeyObject.from>[0]);
}

/** Signs a checkpoint with the origin as the key name. */
export function signCheckpoint(c: Checkpoint, key: { kid: string; privateKey: unknown }): string {
  return signNote(checkpointText(c), c.origin, key);
}

/** A signed note: `text` (ending in a newline), a blank line, and one Ed25519 signature line by `name`. */
export function signNote(text: string, name: string, key: { kid: string; privateKey: unknown }): string {
  const privateKey = privateOf(key as { privateKey: unknown });
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' }) as { x: string };
  const id = Buffer.alloc(4);
  id.writeUInt32BE(noteKeyId(name, { kty: 'OKP', crv: 'Ed25519', x: jwk.x, kid: key.kid }));
  const sig = sign(null, Buffer.from(text, 'utf8'), privateKey);
  return `${text}\n— ${name} ${Buffer.concat([id, sig]).toString('base64')}\n`;
}

/** Splits a note into its text, body fields and signature lines; checks no signature. */
export function parseCheckpoint(note: string): { checkpoint: Checkpoint; text: string; signatures: NoteSignature[] } {
  const bad = (why: string) => new CheckpointError('checkpoint_malformed', `checkpoint ${why}`);
  if (note.length > MAX_NOTE) throw bad(`is longer than ${MAX_NOTE} characters`);
  if (/[\u0000-\u0009\u000b-\u001f]/.test(note)) throw bad('contains control characters');
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) throw bad('has no blank line before its signatures');
  const text = note.slice(0, split + 1);
  const sigLines = note.slice(split + 2, -1).split('\n');
  if (sigLines.length > MAX_SIGNATURES) throw bad(`has more than ${MAX_SIGNATURES} signatures`);
  const signatures = sigLines.map((line) => {
    const m = /^— (\S+) ([A-Za-z0-9+/]+=*)$/.exec(line);
    if (!m) throw bad(`signature line ${JSON.stringify(line.slice(0, 80))} is not "— <name> <base64>"`);
    const bytes = Buffer.from(m[2], 'base64');
    if (bytes.length < 5) throw bad('signature is too short');
    return { name: m[1], keyId: bytes.readUInt32BE(0), signature: bytes.subarray(4) };
  });
  const lines = text.slice(0, -1).split('\n');
  if (lines.length < 3) throw bad('has fewer than three lines');
  const [origin, size, hash, ...extensions] = lines;
  if (!/^(0|[1-9][0-9]{0,15})$/.test(size) || !Number.isSafeInteger(Number(size)))
    throw bad(`size ${JSON.stringify(size.slice(0, 20))} is not a decimal number`);
  const hashBytes = Buffer.from(hash, 'base64');
  if (hashBytes.length !== 32 || hashBytes.toString('base64') !== hash) throw bad('hash is not a base64 sha256');
  const ext = new Map(extensions.map((l) => [l.split(' ')[0], l.slice(l.indexOf(' ') + 1)]));
  const time = ext.get('time');
  const trust = ext.get('trust');
  if (!time || Number.isNaN(Date.parse(time))) throw bad('has no "time" line');
  if (!trust || !/^[1-9][0-9]{0,9}$/.test(trust)) throw bad('has no "trust" line');
  return { checkpoint: { origin, position: Number(size), hash: hashBytes.toString('hex'), time, trustVersion: Number(trust) }, text, signatures };
}

/**
 * Verifies a checkpoint against trusted keys: every signature from a known key must verify and at
 * least one must; signatures from unknown keys are ignored. Returns the checkpoint and the kid that
 * signed it.
 */
export function openCheckpoint(note: string, keys: readonly TrustKey[]): { checkpoint: Checkpoint; kid: string } {
  const { checkpoint, text, signatures } = parseCheckpoint(note);
  let signer: string | null = null;
  for (const s of signatures) {
    for (const key of keys) {
      if (s.name !== checkpoint.origin || noteKeyId(s.name, key) !== s.keyId) continue;
      const publicKey = createPublicKey({ key: { kty: key.kty, crv: key.crv, x: key.x }, format: 'jwk' });
      if (!verify(null, Buffer.from(text, 'utf8'), publicKey, s.signature)) {
        throw new CheckpointError('checkpoint_bad_signature', `checkpoint at position ${checkpoint.position}: the signature by key ${key.kid} does not verify`);
      }
      signer = key.kid;
    }
  }
  if (signer === null) throw new CheckpointError('checkpoint_unknown_signer', `checkpoint at position ${checkpoint.position} is signed by no trusted key`);
  return { checkpoint, kid: signer };
}

export type CheckpointOrder = 'newer' | 'same' | { readonly refused: 'checkpoint_rollback' | 'checkpoint_fork' | 'checkpoint_origin'; readonly reason: string };

/**
 * How a verified checkpoint compares with the one held: never a lower position or an older time,
 * never another origin, and one position has one hash (two are a forked or rewritten ledger).
 */
export function compareCheckpoints(held: Checkpoint | null, next: Checkpoint): CheckpointOrder {
  if (held === null) return 'newer';
  if (next.origin !== held.origin) return { refused: 'checkpoint_origin', reason: `checkpoint of ledger ${next.origin}, this agent follows ${held.origin}` };
  if (next.position < held.position)
    return {
      refused: 'checkpoint_rollback',
      reason: `checkpoint at position ${next.position} is older than the one held at position ${held.position} (replayed or rolled back)`,
    };
  if (next.position === held.position && next.hash !== held.hash) {
    return {
      refused: 'checkpoint_fork',
      reason: `checkpoint at position ${next.position} has another hash than the one held for that position: the ledger was rewritten or forked`,
    };
  }
  if (Date.parse(next.time) < Date.parse(held.time))
    return { refused: 'checkpoint_rollback', reason: `checkpoint signed at ${next.time} is older than the one held, signed at ${held.time} (replayed)` };
  return next.position === held.position && next.time === held.time ? 'same' : 'newer';
}
