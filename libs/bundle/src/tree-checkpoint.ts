import type { TrustKey } from '#contracts';
import { CheckpointError, openCheckpoint, parseCheckpoint, signNote } from './checkpoint.js';

/**
 * Checkpoints of the ledger's Merkle tree, as C2SP tlog-checkpoint signed notes: origin, tree size,
 * the base64 RFC 6962 root, then the extension lines `time`, `trust` (as the chain's checkpoints
 * carry them) and `chain`, the base64 chain hash of the event at that size, which ties the tree to
 * the hash chain that the mirror's trailers and the older checkpoints name.
 *
 * Their origin is the ledger's with `/tree` added: the chain's checkpoints put the chain hash where
 * these put the root, so one origin for both would make the same size show two hashes, which
 * anyone comparing them would take for a forked ledger. Agents that know only the chain's keep
 * being served those.
 */
export interface TreeCheckpoint {
  readonly origin: string;
  readonly size: number;
  /** Hex. */
  readonly root: string;
  /** RFC 3339 UTC. */
  readonly time: string;
  readonly trustVersion: number;
  /** The chain hash of the event at position `size` (hex); 64 zeros for the empty ledger. */
  readonly chain: string;
}

export const TREE_ORIGIN_SUFFIX = '/tree';

/** The tree's origin for a ledger's (ledgerOrigin). */
export const treeOrigin = (ledgerOrigin: string): string => `${ledgerOrigin}${TREE_ORIGIN_SUFFIX}`;

const b64 = (hex: string): string => Buffer.from(hex, 'hex').toString('base64');

/** The note text that gets signed (ends in a newline). */
export function treeCheckpointText(c: TreeCheckpoint): string {
  if (!c.origin.endsWith(TREE_ORIGIN_SUFFIX)) throw new TypeError(`tree checkpoint origin ${JSON.stringify(c.origin)} must end in ${TREE_ORIGIN_SUFFIX}`);
  return `${c.origin}\n${c.size}\n${b64(c.root)}\ntime ${c.time}\ntrust ${c.trustVersion}\nchain ${b64(c.chain)}\n`;
}

/** Signs a tree checkpoint with its origin as the key name. */
export function signTreeCheckpoint(c: TreeCheckpoint, key: { kid: string; privateKey: unknown }): string {
  return signNote(treeCheckpointText(c), c.origin, key);
}

function fromParsed(note: string, checkpoint: { origin: string; position: number; hash: string; time: string; trustVersion: number }): TreeCheckpoint {
  const bad = (why: string) => new CheckpointError('checkpoint_malformed', `tree checkpoint ${why}`);
  if (!checkpoint.origin.endsWith(TREE_ORIGIN_SUFFIX))
    throw bad(`origin ${JSON.stringify(checkpoint.origin)} is not a tree's (it does not end in ${TREE_ORIGIN_SUFFIX})`);
  const text = note.slice(0, note.lastIndexOf('\n\n') + 1);
  const chainLine = text.split('\n').find((l) => l.startsWith('chain '));
  const chain = chainLine ? Buffer.from(chainLine.slice(6), 'base64') : null;
  if (!chain || chain.length !== 32 || chain.toString('base64') !== chainLine!.slice(6)) throw bad('has no "chain" line with a base64 sha256');
  return {
    origin: checkpoint.origin,
    size: checkpoint.position,
    root: checkpoint.hash,
    time: checkpoint.time,
    trustVersion: checkpoint.trustVersion,
    chain: chain.toString('hex'),
  };
}

/** Splits a tree checkpoint into its fields; checks no signature. */
export function parseTreeCheckpoint(note: string): TreeCheckpoint {
  return fromParsed(note, parseCheckpoint(note).checkpoint);
}

/** Verifies a tree checkpoint against trusted keys, as openCheckpoint does a chain checkpoint. */
export function openTreeCheckpoint(note: string, keys: readonly TrustKey[]): { checkpoint: TreeCheckpoint; kid: string } {
  const { checkpoint, kid } = openCheckpoint(note, keys);
  return { checkpoint: fromParsed(note, checkpoint), kid };
}
