import { CheckpointError, openCheckpoint, parseCheckpoint, type Checkpoint } from './checkpoint.js';
import { sha256Hex } from './digest.js';
import { decodeTrustDocument, pinOf, signedBy, TrustChainError, walkTrustChain, type TrustPin } from './trust.js';
import { openTreeCheckpoint, treeOrigin, type TreeCheckpoint } from './tree-checkpoint.js';
import type { TrustKey } from '#contracts';

/** The checkpoint origin (and note key name) of a ledger: fixed by the digest of its first trust version. */
export const ledgerOrigin = (genesisDigest: string): string => `florete.ledger/${genesisDigest.slice(0, 16)}`;

export type CheckpointAuditFailure =
  'checkpoint_malformed' | 'checkpoint_unknown_signer' | 'checkpoint_bad_signature' | 'checkpoint_origin' | 'checkpoint_trust' | 'checkpoint_revoked';

export class CheckpointAuditError extends Error {
  constructor(
    readonly code: CheckpointAuditFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CheckpointAuditError';
  }
}

/** A later trust version that changed something about the key that signed a checkpoint. */
export interface KeyEvent {
  readonly version: number;
  readonly at: string;
}

export interface AttributedCheckpoint {
  readonly checkpoint: Checkpoint;
  readonly kid: string;
  /** The first later version that no longer lists the key: rotated out, which casts no doubt on what it signed before. */
  readonly replaced: KeyEvent | null;
  /** The version that revoked the key, when one did; the checkpoint claims a time before it. */
  readonly revoked: KeyEvent | null;
}

/**
 * Verifies a checkpoint against the ledger's whole trust chain, as an auditor holding it long after
 * it was signed must: version 1 signs itself and fixes the origin; every later version is walked as
 * an agent walks it; the note must verify under the keys of the version it names.
 *
 * A key rotated out since stays good for what it signed: rotation retires a key, it does not say
 * it leaked. A revoked key is different: whoever holds it can sign any checkpoint with any time.
 * One that claims a time at or after the revocation is refused; one that claims an earlier time is
 * accepted with `revoked` set, because only the auditor's own record of when the file was kept can
 * tell an honest old checkpoint from a backdated forgery.
 */
export function attributeCheckpoint(note: string, trustDocuments: readonly string[]): AttributedCheckpoint {
  return attribute(note, trustDocuments, ledgerOrigin, openCheckpoint);
}

/** As attributeCheckpoint, for a checkpoint of the ledger's Merkle tree (origin `<ledger>/tree`). */
export function attributeTreeCheckpoint(
  note: string,
  trustDocuments: readonly string[],
): Omit<AttributedCheckpoint, 'checkpoint'> & { readonly checkpoint: TreeCheckpoint } {
  return attribute(note, trustDocuments, (digest) => treeOrigin(ledgerOrigin(digest)), openTreeCheckpoint);
}

function attribute<C extends { readonly time: string }>(
  note: string,
  trustDocuments: readonly string[],
  originOf: (genesisDigest: string) => string,
  open: (note: string, keys: readonly TrustKey[]) => { checkpoint: C; kid: string },
): Omit<AttributedCheckpoint, 'checkpoint'> & { readonly checkpoint: C } {
  const claimed = wrap(() => parseCheckpoint(note)).checkpoint;
  const chain = wrap(() => trustPins(trustDocuments));
  const origin = originOf(chain.genesisDigest);
  if (claimed.origin !== origin) throw new CheckpointAuditError('checkpoint_origin', `the checkpoint is of ${claimed.origin}; this coordinator's is ${origin}`);
  const pin = chain.pins.get(claimed.trustVersion);
  if (!pin)
    throw new CheckpointAuditError(
      'checkpoint_unknown_signer',
      `the checkpoint names trust version ${claimed.trustVersion}; the coordinator's trust chain ends at version ${chain.pins.size}`,
    );
  const { checkpoint, kid } = wrap(() => open(note, pin.keys));
  let replaced: KeyEvent | null = null;
  let revoked: KeyEvent | null = null;
  for (const [version, later] of chain.pins) {
    if (version <= claimed.trustVersion) continue;
    const at = chain.issuedAt.get(version)!;
    if (!replaced && !later.keys.some((k) => k.kid === kid)) replaced = { version, at };
    if (!revoked && later.revoked.includes(kid)) revoked = { version, at };
  }
  if (revoked && Date.parse(checkpoint.time) >= Date.parse(revoked.at)) {
    throw new CheckpointAuditError(
      'checkpoint_revoked',
      `the checkpoint is signed at ${checkpoint.time} by key ${kid}, which trust version ${revoked.version} revoked at ${revoked.at}: whoever signed it held a revoked key`,
    );
  }
  return { checkpoint, kid, replaced, revoked };
}

/** Every version's pin, from a self-signed version 1 forward; throws a TrustChainError at the first step that fails. */
export function trustPins(documents: readonly string[]): { pins: Map<number, TrustPin>; issuedAt: Map<number, string>; genesisDigest: string } {
  const decoded = documents.map(decodeTrustDocument).sort((a, b) => a.doc.version - b.doc.version);
  const genesis = decoded[0];
  if (!genesis || genesis.doc.version !== 1) throw new TrustChainError('trust_gap', 1, 'the trust chain has no version 1');
  const self = genesis.doc.keys.find((k) => k.kid === genesis.kid);
  if (!self || !signedBy(genesis.jws, self)) throw new TrustChainError('trust_forged', 1, 'trust version 1 is not signed by its own key');
  const pins = new Map<number, TrustPin>([[1, pinOf(genesis)]]);
  const issuedAt = new Map<number, string>([[1, genesis.doc.issued_at]]);
  let pin = pinOf(genesis);
  for (const step of decoded.slice(1)) {
    pin = walkTrustChain(pin, [step.jws]);
    pins.set(pin.version, pin);
    issuedAt.set(pin.version, step.doc.issued_at);
  }
  return { pins, issuedAt, genesisDigest: sha256Hex(genesis.jws) };
}

function wrap<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof CheckpointError) throw new CheckpointAuditError(err.code, err.message, { cause: err });
    if (err instanceof TrustChainError)
      throw new CheckpointAuditError('checkpoint_trust', `the coordinator's trust chain does not verify: ${err.message}`, { cause: err });
    throw err;
  }
}

/** A hash one source recorded for a ledger position. */
export interface Sighting {
  readonly position: number;
  readonly hash: string;
}

/**
 * The first of `sightings` (sorted by position) whose hash the ledger does not have at its
 * position, found in a logarithmic number of look-ups: each hash commits to the whole chain
 * before it, so once the ledger and a source part they never agree again.
 */
export async function firstDisagreement<S extends Sighting>(
  sightings: readonly S[],
  ledgerHashAt: (position: number) => Promise<string | null>,
): Promise<{ sighting: S; ledger: string | null } | null> {
  let lo = 0;
  let hi = sightings.length;
  let found: { sighting: S; ledger: string | null } | null = null;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const ledger = await ledgerHashAt(sightings[mid].position);
    if (ledger === sightings[mid].hash) {
      lo = mid + 1;
    } else {
      found = { sighting: sightings[mid], ledger };
      hi = mid;
    }
  }
  return found;
}

/** A checkpoint someone holds: a node, or the coordinator itself. */
export interface HeldBy extends Sighting {
  readonly witness: string;
  /** The ledger's hash today at that position; null when the ledger is shorter. */
  readonly ledgerHash: string | null;
}

export type WitnessFlag =
  | { readonly kind: 'fork'; readonly position: number; readonly hashes: readonly { readonly hash: string; readonly witnesses: readonly string[] }[] }
  | { readonly kind: 'ledger'; readonly witness: string; readonly position: number; readonly held: string; readonly ledger: string | null };

/**
 * What the fleet's checkpoints say against each other and against the ledger: two hashes for one
 * position is a forked or rewritten ledger, and so is a held hash the ledger no longer has.
 */
export function flagWitnesses(held: readonly HeldBy[]): WitnessFlag[] {
  const flags: WitnessFlag[] = [];
  const byPosition = new Map<number, Map<string, string[]>>();
  for (const h of held) {
    const hashes = byPosition.get(h.position) ?? new Map<string, string[]>();
    hashes.set(h.hash, [...(hashes.get(h.hash) ?? []), h.witness]);
    byPosition.set(h.position, hashes);
  }
  for (const [position, hashes] of [...byPosition].sort((a, b) => a[0] - b[0])) {
    if (hashes.size > 1) flags.push({ kind: 'fork', position, hashes: [...hashes].map(([hash, witnesses]) => ({ hash, witnesses })) });
  }
  for (const h of held) {
    if (h.ledgerHash !== h.hash) flags.push({ kind: 'ledger', witness: h.witness, position: h.position, held: h.hash, ledger: h.ledgerHash });
  }
  return flags;
}
