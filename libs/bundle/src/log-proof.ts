import type { BundlePayload } from '#contracts';
import { canonicalJson } from './canonical-json.js';
import { chainHash, nodeStream } from './chain.js';
import { consistencyHashes, expandInclusion, extensionHashes, frontierRoot, HASH_SIZE, leafHash, verifyInclusion } from './merkle.js';
import { parseCheckpoint } from './checkpoint.js';
import { treeCheckpointText, treeOrigin, type TreeCheckpoint } from './tree-checkpoint.js';

/**
 * Proofs on the wire: what a poll answer carries so that its node checks that its bundle is in the
 * ledger's signed Merkle tree, and that the tree it is shown now extends the one it was shown before
 * (docs/decisions/0014-proofs-on-the-wire.md). The JWS body is signed once and served as is, so the
 * proofs travel in headers, each one line:
 *
 * - request  `florete-tree-size: N`: the size of the tree checkpoint the node holds (0 or absent: none);
 * - answer   `florete-tree-checkpoint`: the signed tree checkpoint note, base64; or, when the ledger checkpoint
 *   of the same answer (`florete-checkpoint`) names its size, time, trust version and chain hash,
 *   only what that one does not say: `<base64 root> <base64 key ID and signature>`
 *   (compactTreeCheckpoint), from which the node rebuilds the note and checks its signature;
 * - answer   `florete-tree-consistency: N <base64 hashes>`: the proof from the size the node sent to the checkpoint's;
 * - 200 only `florete-tree-inclusion: I <base64 hashes>`: the audit path of leaf I (the stamp event at position I + 1)
 *   in the checkpoint's tree, without the hashes the consistency proof of the same answer shows
 *   (compactInclusion): a new stamp is newer than the tree the node held, so the path's upper
 *   hashes are the ones that proof carries or computes;
 * - 200 only `florete-tree-leaf: <base64url canonical JSON>`: what the node needs beside its bundle to
 *   recompute that leaf: the stamp event's previous chain hash, its stream revision, its meta, and any
 *   field of its data the bundle does not carry.
 *
 * A node that keeps its tree's frontier (the complete subtrees its tree is made of, at most log₂ n + 1
 * hashes) says so, and is sent less:
 *
 * - request  `florete-tree-keeps: frontier`: the node holds the frontier of the size it sent (none
 *   sent: the empty one); `root`: it holds only that tree's root and wants the frontier;
 * - answer   `florete-tree-proof: N <base64 hashes>[ I <base64 hashes>[ <base64url leaf>]]`, instead of the
 *   consistency, inclusion and leaf headers, to a node that keeps the frontier of N leaves: the
 *   extension proof (the new tree's complete subtrees right of N, extensionProof: about 2·log₂ of how
 *   far behind the node is, where a consistency proof also carries the old tree's side), then on a 200
 *   the inclusion proof without what the extension proof shows and the leaf, as their own headers
 *   would carry them: one header, as the three are checked together;
 * - answer   `florete-tree-frontier: <base64 hashes>`, beside the consistency proof, to a node that
 *   holds only a root: the new tree's frontier, once, for it to keep.
 *
 * The leaf is never sent: the node rebuilds the stamp event from the bundle it verified, so a proof
 * of any other event, or of another version of its own, cannot pass.
 */
export const TREE_SIZE_HEADER = 'florete-tree-size';
export const TREE_CHECKPOINT_HEADER = 'florete-tree-checkpoint';
export const TREE_CONSISTENCY_HEADER = 'florete-tree-consistency';
export const TREE_INCLUSION_HEADER = 'florete-tree-inclusion';
export const TREE_LEAF_HEADER = 'florete-tree-leaf';
export const TREE_KEEPS_HEADER = 'florete-tree-keeps';
export const TREE_PROOF_HEADER = 'florete-tree-proof';
export const TREE_FRONTIER_HEADER = 'florete-tree-frontier';

/** The fields of a `node_set_stamped` event's data that a bundle payload carries itself. */
const CARRIED = ['node', 'version', 'set_digest', 'retired', 'artifacts', 'publish_id'] as const;

/** The rest of a stamp event: what the bundle does not say. */
export interface StampLeaf {
  /** The chain hash of the event before it (hex). */
  readonly prev_hash: string;
  readonly revision: number;
  readonly meta: Record<string, unknown>;
  /** Fields of its data beyond the ones the bundle carries (restored_from); empty for most. */
  readonly data: Record<string, unknown>;
}

export class LogProofError extends Error {
  constructor(
    readonly code: 'not_in_log' | 'checkpoint_fork' | 'checkpoint_rollback' | 'proof_malformed',
    message: string,
  ) {
    super(message);
    this.name = 'LogProofError';
  }
}

/** The stamp leaf of a ledger row's data: its data without what the bundle carries. */
export function stampLeafOf(row: { prev_hash: string; revision: number; meta: Record<string, unknown>; extra: Record<string, unknown> }): StampLeaf {
  const data = { ...row.extra };
  for (const k of CARRIED) delete data[k];
  return { prev_hash: row.prev_hash, revision: row.revision, meta: row.meta, data };
}

export function encodeStampLeaf(leaf: StampLeaf): string {
  return Buffer.from(canonicalJson(leaf), 'utf8').toString('base64url');
}

export function decodeStampLeaf(header: string): StampLeaf {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
  } catch {
    throw new LogProofError('proof_malformed', `${TREE_LEAF_HEADER} is not base64url JSON`);
  }
  const o = v as Partial<StampLeaf> | null;
  const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
  if (
    !isObject(o) ||
    typeof o.prev_hash !== 'string' ||
    !/^[0-9a-f]{64}$/.test(o.prev_hash) ||
    !Number.isSafeInteger(o.revision) ||
    !isObject(o.meta) ||
    !isObject(o.data)
  )
    throw new LogProofError('proof_malformed', `${TREE_LEAF_HEADER} is not {prev_hash, revision, meta, data}`);
  return { prev_hash: o.prev_hash, revision: o.revision!, meta: o.meta, data: o.data };
}

/**
 * The chain hash of the `node_set_stamped` event that stamped `payload`, rebuilt from the payload and
 * the rest of the event (`leaf`): the entry of its tree leaf. A leaf whose data names a field the
 * bundle carries is refused: the bundle's own word is the only one taken for those.
 */
export function stampEntry(
  payload: Pick<BundlePayload, 'node' | 'version' | 'set_digest' | 'retired' | 'artifacts' | 'publish_id' | 'position' | 'issued_at'>,
  leaf: StampLeaf,
): string {
  for (const k of CARRIED)
    if (Object.hasOwn(leaf.data, k)) throw new LogProofError('not_in_log', `${TREE_LEAF_HEADER} names the field ${k}, which the bundle carries itself`);
  return chainHash(leaf.prev_hash, {
    position: payload.position,
    stream: nodeStream(payload.node),
    revision: leaf.revision,
    type: 'node_set_stamped',
    data: {
      ...leaf.data,
      node: payload.node,
      version: payload.version,
      set_digest: payload.set_digest,
      retired: payload.retired,
      artifacts: payload.artifacts.map((a) => ({ name: a.name, sha256: a.sha256, size: a.size })),
      publish_id: payload.publish_id,
    },
    meta: leaf.meta,
    recorded_at: payload.issued_at,
  });
}

/**
 * The `florete-tree-proof` header from the extension proof (`N <base64>`, encodeProof) and, on a 200,
 * the inclusion proof (the same form) and the leaf (encodeStampLeaf).
 */
export function encodeTreeProof(extension: string, inclusion: string | null = null, leaf: string | null = null): string {
  return [extension, ...(inclusion === null ? [] : [inclusion]), ...(leaf === null ? [] : [leaf])].join(' ');
}

/**
 * The parts of a `florete-tree-proof` header, each in the form of its own header (a proof's trailing
 * empty base64 may have been cut, as HTTP trims a value's end). One with more parts than that is kept
 * whole as the extension proof, which then fails to decode: the node refuses it as malformed.
 */
export function decodeTreeProof(value: string): { extension: string; inclusion: string | null; leaf: string | null } {
  const t = value.trim().split(' ');
  if (t.length > 5) return { extension: value, inclusion: null, leaf: null };
  return { extension: `${t[0]} ${t[1] ?? ''}`, inclusion: t.length > 2 ? `${t[2]} ${t[3] ?? ''}` : null, leaf: t[4] ?? null };
}

/** `N <base64 of the hashes, concatenated>`: a size or an index, and a proof (possibly empty). */
export function encodeProof(n: number, hashes: readonly Uint8Array[]): string {
  return `${n} ${Buffer.concat(hashes).toString('base64')}`;
}

export function decodeProof(header: string, name: string): { n: number; hashes: Buffer[] } {
  const m = /^([0-9]{1,16}) ?([A-Za-z0-9+/]*={0,2})$/.exec(header.trim());
  const bytes = m ? Buffer.from(m[2], 'base64') : null;
  if (!m || !bytes || bytes.length % HASH_SIZE !== 0 || bytes.length > 64 * HASH_SIZE || !Number.isSafeInteger(Number(m[1])))
    throw new LogProofError('proof_malformed', `${name} is not "<n> <base64 hashes>"`);
  const hashes: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += HASH_SIZE) hashes.push(bytes.subarray(i, i + HASH_SIZE));
  return { n: Number(m[1]), hashes };
}

/**
 * Throws not_in_log unless `proof` shows the stamp of `payload` (rebuilt with `leaf`) in the tree of
 * `checkpoint`. `known`: what the answer's consistency proof showed (checkTreeExtends), which the
 * inclusion proof leaves out; null when the answer had none.
 */
export function checkStampIncluded(
  payload: Parameters<typeof stampEntry>[0],
  leaf: StampLeaf,
  proof: { n: number; hashes: readonly Uint8Array[] },
  checkpoint: Pick<TreeCheckpoint, 'size' | 'root'>,
  known: ReadonlyMap<string, Uint8Array> | null = null,
): void {
  if (proof.n !== payload.position - 1)
    throw new LogProofError(
      'not_in_log',
      `the inclusion proof is for leaf ${proof.n}, the bundle was stamped at position ${payload.position} (leaf ${payload.position - 1})`,
    );
  const entry = stampEntry(payload, leaf);
  const path = expandInclusion(proof.n, checkpoint.size, proof.hashes, known);
  if (!path || !verifyInclusion(leafHash(Buffer.from(entry, 'hex')), proof.n, checkpoint.size, path, Buffer.from(checkpoint.root, 'hex')))
    throw new LogProofError(
      'not_in_log',
      `version ${payload.version} stamped at position ${payload.position} is not in the signed tree of ${checkpoint.size} entries: its inclusion proof does not lead to the checkpoint's root`,
    );
}

/**
 * Throws unless the tree of `next` extends the one held: a smaller size is a rollback, a proof that
 * does not join the two roots a fork (the ledger was rewritten, or this is another one). Nothing
 * held: anything goes (trust on first use). Returns the hashes the proof showed, by range
 * (consistencyHashes), for the inclusion proof of the same answer; null when nothing was held.
 */
export function checkTreeExtends(
  held: Pick<TreeCheckpoint, 'size' | 'root'> | null,
  next: Pick<TreeCheckpoint, 'size' | 'root'>,
  proof: { n: number; hashes: readonly Uint8Array[] } | null,
): Map<string, Buffer> | null {
  if (held === null || held.size === 0) return null;
  if (next.size < held.size)
    throw new LogProofError(
      'checkpoint_rollback',
      `tree checkpoint of ${next.size} entries is smaller than the one held, of ${held.size} (replayed or rolled back)`,
    );
  if (next.size === held.size) {
    if (next.root !== held.root)
      throw new LogProofError(
        'checkpoint_fork',
        `tree checkpoint of ${next.size} entries has another root than the one held for that size: the ledger was rewritten or forked`,
      );
    return consistencyHashes(held.size, next.size, Buffer.from(held.root, 'hex'), Buffer.from(next.root, 'hex'), []);
  }
  if (!proof || proof.n !== held.size)
    throw new LogProofError('checkpoint_fork', `no consistency proof from the held tree of ${held.size} entries to the new one of ${next.size}`);
  const known = consistencyHashes(held.size, next.size, Buffer.from(held.root, 'hex'), Buffer.from(next.root, 'hex'), proof.hashes);
  if (!known)
    throw new LogProofError(
      'checkpoint_fork',
      `the tree of ${next.size} entries does not extend the one held, of ${held.size}: the consistency proof fails, the ledger was rewritten or forked`,
    );
  return known;
}

/**
 * As checkTreeExtends, for a node that keeps the frontier of the tree it holds (`held.frontier`; null:
 * nothing held, the empty frontier) and was sent an extension proof from its size. Returns the
 * hashes the proof showed, by range (for the inclusion proof of the same answer), and the new tree's
 * frontier to keep.
 */
export function checkTreeExtendsFrontier(
  held: (Pick<TreeCheckpoint, 'size' | 'root'> & { readonly frontier: readonly Uint8Array[] }) | null,
  next: Pick<TreeCheckpoint, 'size' | 'root'>,
  proof: { n: number; hashes: readonly Uint8Array[] },
): { known: Map<string, Buffer>; frontier: Buffer[] } {
  const size = held?.size ?? 0;
  if (next.size < size)
    throw new LogProofError(
      'checkpoint_rollback',
      `tree checkpoint of ${next.size} entries is smaller than the one held, of ${size} (replayed or rolled back)`,
    );
  if (proof.n !== size)
    throw new LogProofError('checkpoint_fork', `the extension proof starts from a tree of ${proof.n} entries; this node holds the frontier of ${size}`);
  const shown = extensionHashes(
    size,
    held ? Buffer.from(held.root, 'hex') : null,
    held?.frontier ?? [],
    next.size,
    Buffer.from(next.root, 'hex'),
    proof.hashes,
  );
  if (!shown)
    throw new LogProofError(
      'checkpoint_fork',
      size === next.size
        ? `tree checkpoint of ${next.size} entries has another root than the one held for that size: the ledger was rewritten or forked`
        : `the tree of ${next.size} entries does not extend the one held, of ${size}: the extension proof fails, the ledger was rewritten or forked`,
    );
  return shown;
}

/**
 * The frontier of the tree of `checkpoint` a `florete-tree-frontier` header carries, once it folds to
 * that checkpoint's root; throws checkpoint_fork otherwise.
 */
export function checkFrontier(header: string, checkpoint: Pick<TreeCheckpoint, 'size' | 'root'>): Buffer[] {
  const { hashes } = decodeProof(`0 ${header}`, TREE_FRONTIER_HEADER);
  if (frontierRoot(checkpoint.size, hashes)?.toString('hex') !== checkpoint.root)
    throw new LogProofError('checkpoint_fork', `the frontier sent does not make up the tree of ${checkpoint.size} entries the checkpoint signs`);
  return hashes;
}

/**
 * The tree checkpoint header for an answer that also carries the ledger checkpoint `chainNote`:
 * `<base64 root> <base64 of the signature line's key ID and signature>` when every other line of the
 * tree note (origin, size, time, trust, chain) follows from that checkpoint and the note has that one
 * signature (the coordinator signs both with the same key at the same append); null otherwise (the
 * whole note is sent). Used only when expanding it gives back exactly `treeNote`.
 */
export function compactTreeCheckpoint(treeNote: string, chainNote: string): string | null {
  const sig = /\n\n— (\S+) ([A-Za-z0-9+/]+={0,2})\n$/.exec(treeNote);
  const root = treeNote.split('\n', 3)[2];
  if (!sig || root === undefined) return null;
  const value = `${root} ${sig[2]}`;
  try {
    return expandTreeCheckpoint(value, chainNote) === treeNote ? value : null;
  } catch {
    return null;
  }
}

/**
 * The tree checkpoint note an answer's `florete-tree-checkpoint` header carries: base64 of the note,
 * or the compact form rebuilt with the ledger checkpoint note of the same answer (`chainNote`). The
 * note comes out unverified: its signature is checked over the rebuilt text as over any note, so a
 * line taken from a ledger checkpoint that the tree's signer did not sign fails there. Throws
 * proof_malformed for a compact form without a ledger checkpoint, or one that does not parse.
 */
export function expandTreeCheckpoint(header: string, chainNote: string | null): string {
  const m = /^([A-Za-z0-9+/]{43}=) ([A-Za-z0-9+/]+={0,2})$/.exec(header);
  if (!m) {
    if (header.includes(' ')) throw new LogProofError('proof_malformed', `${TREE_CHECKPOINT_HEADER} is neither a base64 note nor "<root> <signature>"`);
    return Buffer.from(header, 'base64').toString('utf8');
  }
  if (chainNote === null)
    throw new LogProofError('proof_malformed', `${TREE_CHECKPOINT_HEADER} in its short form needs the ledger checkpoint of the same answer`);
  let chain;
  try {
    chain = parseCheckpoint(chainNote).checkpoint;
  } catch {
    throw new LogProofError('proof_malformed', `${TREE_CHECKPOINT_HEADER} in its short form: the ledger checkpoint of the same answer does not parse`);
  }
  const origin = treeOrigin(chain.origin);
  const text = treeCheckpointText({
    origin,
    size: chain.position,
    root: Buffer.from(m[1], 'base64').toString('hex'),
    time: chain.time,
    trustVersion: chain.trustVersion,
    chain: chain.hash,
  });
  return `${text}\n— ${origin} ${m[2]}\n`;
}
