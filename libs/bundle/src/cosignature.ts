import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { parseCheckpoint } from './checkpoint.js';

/**
 * Cosignatures of checkpoints (C2SP tlog-cosignature, Ed25519 cosignature/v1): a witness's
 * statement that, at the time it names, the checkpoint is the largest consistent tree head it has
 * seen of the log the origin line names. The signed message is `cosignature/v1\ntime <unix
 * seconds>\n` followed by the checkpoint's whole note body (origin, size, root and its extension
 * lines, with the final newline); the signature line is `— <name> base64(key id ‖ u64 timestamp ‖
 * 64-byte signature)`, the key id the first four bytes of SHA-256(name ‖ "\n" ‖ 0x04 ‖ public key).
 * Each node of the fleet is a witness: its key is made at enrolment and recorded in the ledger.
 */

const COSIGNATURE_V1 = 0x04;

/** A witness as a verifier knows it: the name its lines carry and its raw 32-byte Ed25519 public key. */
export interface Witness {
  readonly name: string;
  /** base64 of the 32 raw bytes. */
  readonly publicKey: string;
}

/** A verified cosignature: whose, and when (unix seconds) it says it was made. */
export interface Cosigned {
  readonly name: string;
  readonly time: number;
}

/** The witness name of a node of a ledger (`<ledger origin>/node/<node>`): no spaces, as a note's key names. */
export function nodeWitnessName(ledgerOrigin: string, node: string): string {
  return `${ledgerOrigin}/node/${node}`;
}

/** The key id of a cosigner: SHA-256(name ‖ "\n" ‖ 0x04 ‖ 32-byte public key)[:4], big-endian. */
export function cosignerKeyId(name: string, publicKey: Buffer): number {
  if (publicKey.length !== 32) throw new TypeError('an Ed25519 public key has 32 bytes');
  return createHash('sha256')
    .update(Buffer.concat([Buffer.from(`${name}\n`, 'utf8'), Buffer.from([COSIGNATURE_V1]), publicKey]))
    .digest()
    .readUInt32BE(0);
}

/** The raw 32 bytes of an Ed25519 public key. */
export function rawPublicKey(key: KeyObject): Buffer {
  return Buffer.from((key.export({ format: 'jwk' }) as { x: string }).x, 'base64url');
}

function cosignedMessage(body: string, time: number): Buffer {
  return Buffer.from(`cosignature/v1\ntime ${time}\n${body}`, 'utf8');
}

/** The note body of a checkpoint (everything before the blank line, ending in a newline). */
export function noteBody(note: string): string {
  return parseCheckpoint(note).text;
}

/**
 * A cosignature line over a checkpoint note by `name` with `privateKey` (Ed25519), at `time` (unix
 * seconds): `— <name> <base64>`, without a newline.
 */
export function cosignCheckpoint(note: string, name: string, privateKey: KeyObject, time: number): string {
  if (!Number.isSafeInteger(time) || time < 0) throw new TypeError('a cosignature time is a non-negative whole number of seconds');
  const body = noteBody(note);
  const id = Buffer.alloc(12);
  id.writeUInt32BE(cosignerKeyId(name, rawPublicKey(createPublicKey(privateKey))), 0);
  id.writeBigUInt64BE(BigInt(time), 4);
  const sig = sign(null, cosignedMessage(body, time), privateKey);
  return `— ${name} ${Buffer.concat([id, sig]).toString('base64')}`;
}

/** A cosignature line split into its parts; null when it is not one (a plain note signature, say). */
export function parseCosignatureLine(line: string): { name: string; keyId: number; time: number; signature: Buffer } | null {
  const m = /^— (\S+) ([A-Za-z0-9+/]+=*)$/.exec(line);
  if (!m) return null;
  const bytes = Buffer.from(m[2], 'base64');
  if (bytes.length !== 4 + 8 + 64) return null;
  const time = bytes.readBigUInt64BE(4);
  if (time > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  return { name: m[1], keyId: bytes.readUInt32BE(0), time: Number(time), signature: bytes.subarray(12) };
}

/**
 * Whether a cosignature line is a valid cosignature of the note by this witness: its name and key id
 * match, and the Ed25519 signature verifies over the note's body at the line's time. Null when not;
 * never throws for a bad line.
 */
export function verifyCosignature(note: string, line: string, witness: Witness): Cosigned | null {
  const parsed = parseCosignatureLine(line);
  if (!parsed || parsed.name !== witness.name) return null;
  const raw = Buffer.from(witness.publicKey, 'base64');
  if (raw.length !== 32 || cosignerKeyId(witness.name, raw) !== parsed.keyId) return null;
  let body: string;
  try {
    body = noteBody(note);
  } catch {
    return null;
  }
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
  return verify(null, cosignedMessage(body, parsed.time), key, parsed.signature) ? { name: parsed.name, time: parsed.time } : null;
}
