import {
  attributeTreeCheckpoint,
  CheckpointAuditError,
  consistencyCoords,
  consistencyProof,
  nodeWitnessName,
  rootCoords,
  tilePath,
  TREE_ORIGIN_SUFFIX,
  verifyConsistency,
  verifyCosignature,
  type TreeCheckpoint,
} from '#bundle';
import { LedgerEventPage } from '#contracts';
import type { CoordinatorClient } from '../client.js';
import { allWitnesses } from './coordinator-reads.js';
import { tileReader, tilesFor } from './tree-tiles.js';

/** A node's cosignature that holds: its key is the one the ledger recorded, its line verifies, its tree is a prefix of today's. */
export interface Cosigner {
  readonly node: string;
  readonly size: number;
  readonly root: string;
  /** Unix seconds the cosignature names. */
  readonly time: number;
}

export interface CosignerVerdict {
  readonly required: number;
  /** The largest tree size at least `required` nodes vouch for (each cosigned it or a larger tree that extends it); null when none. */
  readonly witnessed: number | null;
  readonly tree: { readonly size: number; readonly root: string };
  readonly cosigners: readonly Cosigner[];
  /** Cosignatures that do not hold, each with the node and why: a forged one, or a ledger rewritten under its witnesses. */
  readonly refused: readonly { readonly node: string; readonly reason: string }[];
}

/**
 * Checks the fleet's cosignatures of the ledger's tree (C2SP tlog-cosignature): for each node that
 * reported one, its key must be the one the ledger recorded for it (the event at the position the
 * coordinator names must say so), the tree checkpoint must be signed by a key of the trust chain,
 * the cosignature line must verify under the node's witness name, and today's tree must extend the
 * cosigned one (a consistency proof computed from the tiles, checked against both roots). The
 * coordinator cannot make a cosignature up: it holds no node's key. `required` nodes must vouch
 * for some size for the check to pass.
 */
export async function verifyCosigners(client: CoordinatorClient, documents: readonly string[], required: number): Promise<CosignerVerdict> {
  const now = attributeTreeCheckpoint((await client.getBytes('/v1/ledger/tree/checkpoint')).toString('utf8'), documents).checkpoint;
  const { items } = await allWitnesses(client);

  const refused: { node: string; reason: string }[] = [];
  const candidates: { node: string; checkpoint: TreeCheckpoint; time: number }[] = [];
  for (const w of items) {
    if (!w.cosigned) continue;
    if (!w.witness_key || w.witness_key.position === null) {
      refused.push({ node: w.node, reason: 'it reported a cosignature, and the coordinator names no witness key of it in the ledger' });
      continue;
    }
    const recorded = await keyRecorded(client, w.node, w.witness_key.public_key, w.witness_key.position);
    if (recorded !== null) {
      refused.push({ node: w.node, reason: recorded });
      continue;
    }
    let checkpoint: TreeCheckpoint;
    try {
      checkpoint = attributeTreeCheckpoint(w.cosigned.note, documents).checkpoint;
    } catch (err) {
      if (!(err instanceof CheckpointAuditError)) throw err;
      refused.push({ node: w.node, reason: `the tree checkpoint it cosigned: ${err.code}: ${err.message}` });
      continue;
    }
    const name = nodeWitnessName(checkpoint.origin.slice(0, -TREE_ORIGIN_SUFFIX.length), w.node);
    const cosigned = verifyCosignature(w.cosigned.note, w.cosigned.cosignature, { name, publicKey: w.witness_key.public_key });
    if (!cosigned) {
      refused.push({
        node: w.node,
        reason: `its cosignature does not verify under ${name} with the key the ledger recorded at position ${w.witness_key.position}`,
      });
      continue;
    }
    if (checkpoint.size > now.size) {
      refused.push({ node: w.node, reason: `it cosigned a tree of ${checkpoint.size} entries; the tree now has ${now.size}: the ledger was rolled back` });
      continue;
    }
    candidates.push({ node: w.node, checkpoint, time: cosigned.time });
  }

  // One fetch of every tile the consistency proofs read.
  const sizes = [...new Set(candidates.map((c) => c.checkpoint.size).filter((s) => s >= 1 && s < now.size))];
  const coords = [...rootCoords(now.size), ...sizes.flatMap((s) => consistencyCoords(s, now.size))];
  const tiles = new Map<string, Buffer>();
  for (const t of tilesFor(coords, now.size)) tiles.set(tilePath(t), await client.getBytes(`/v1/ledger/tree/${tilePath(t)}`));
  const { read } = tileReader(tiles, now.size);
  const cosigners: Cosigner[] = [];
  for (const c of candidates) {
    const { size, root } = c.checkpoint;
    const extends_ =
      size === 0 ||
      verifyConsistency(
        size,
        now.size,
        Buffer.from(root, 'hex'),
        Buffer.from(now.root, 'hex'),
        size === now.size ? [] : consistencyProof(size, now.size, read),
      );
    if (extends_) cosigners.push({ node: c.node, size, root, time: c.time });
    else
      refused.push({
        node: c.node,
        reason: `the tree now does not extend the one it cosigned (${size} entries, root ${root}): the ledger was rewritten at or before entry ${size}`,
      });
  }
  // A cosigner of a larger tree vouches for every prefix of it: the K-th largest size is the largest K nodes vouch for.
  const bySize = cosigners.map((c) => c.size).sort((a, b) => b - a);
  return {
    required,
    witnessed: required >= 1 && bySize.length >= required ? bySize[required - 1] : null,
    tree: { size: now.size, root: now.root },
    cosigners,
    refused,
  };
}

/** Null when the ledger's event at `position` records this key for this node; else why not. */
async function keyRecorded(client: CoordinatorClient, node: string, key: string, position: number): Promise<string | null> {
  const { body } = await client.call('GET', `/v1/ledger/events?after=${position - 1}&limit=1`, LedgerEventPage);
  const e = body.items[0];
  if (!e || e.position !== position) return `the ledger has no event at position ${position}, where the coordinator says its witness key was recorded`;
  const recorded = e.type === 'node_enrolled' ? e.data.witness_key : e.type === 'node_witness_key_registered' ? e.data.public_key : undefined;
  if (e.data.node !== node || recorded !== key) return `the ledger's event at position ${position} (${e.type}) does not record this witness key for ${node}`;
  return null;
}
