import { sha256Hex } from '#bundle';
import type { ArtifactDigests } from '#rete';
import { localHeads, type LocalHeads } from './local-heads.js';
import { RetectlError } from './errors.js';
import { PackReader, packName, parseLocation } from './compiled-pack.js';
import { lineFields } from './compiled-output.js';

/**
 * The tree a publish sends: every node's name, and each node's artifact digests and each digest's
 * bytes when asked for. A tree in memory holds them all (treeInMemory); a tree the compile record
 * stands for reads from .flor/compiled only the nodes and blobs a publish sends (recordedTree), so
 * that a publish of a few nodes of a large tree reads a few nodes.
 */
export interface TreeToPublish {
  /** How many nodes the tree holds. */
  readonly size: number;
  has(node: string): boolean;
  /** Every node of the tree, in name order. */
  names(): readonly string[];
  /** A node's artifacts' digests. */
  artifacts(node: string): ArtifactDigests;
  /** The bytes of a digest of a node artifacts() was asked for. */
  bytes(sha: string): Buffer;
  /** Its set digests and buckets (localHeads). */
  heads(): LocalHeads;
}

/** A tree held in memory: every node's digests, every digest's bytes, and its heads when already worked out. */
export function treeInMemory(digests: ReadonlyMap<string, ArtifactDigests>, bytes: ReadonlyMap<string, Buffer>, local?: LocalHeads): TreeToPublish {
  let heads = local;
  return {
    size: digests.size,
    has: (node) => digests.has(node),
    names: () => [...digests.keys()].sort(),
    artifacts: (node) => digests.get(node)!,
    bytes: (sha) => bytes.get(sha)!,
    // Worked out once: a publish read again after the ledger moved compares the same tree.
    heads: () => (heads ??= localHeads(digests)),
  };
}

/**
 * The tree the compile record stands for: its nodes, set digests and buckets are the record's, and a
 * node's artifacts are read from the packs in `base` (.flor/compiled) only when a publish asks for
 * them, each entry checked as it is read (PackReader.read: its digest list must give the set digest
 * the record holds, and each artifact the sha256 the list names); an artifact's bytes are read again
 * when sent, and checked again. Anything else was changed by hand since the compile: `stale` is called
 * (to drop the record) and the publish is refused before it sends anything of it.
 */
export function recordedTree(
  base: string,
  nodes: { readonly size: number; names(): readonly string[]; get(node: string): string | undefined },
  heads: LocalHeads,
  stale: () => void,
): TreeToPublish {
  const artifacts = new Map<string, ArtifactDigests>();
  // Listed only when asked for (a whole tree sent, every node's labels): a delta of a few nodes never needs them.
  let names: readonly string[] | undefined;
  // Where each digest's bytes are: a pack, an offset and a length, from the entry that named it first.
  const places = new Map<string, { pack: string; offset: number; size: number }>();
  const reader = new PackReader(base);
  const refuse = (file: string, what: string): never => {
    reader.close();
    stale();
    throw new RetectlError('stale_compile', `${base}/${file} ${what}, since the last compile; run retectl compile`);
  };
  return {
    size: nodes.size,
    has: (node) => heads.setOf(node) !== undefined,
    names: () => (names ??= nodes.names()),
    heads: () => heads,
    artifacts(node) {
      const known = artifacts.get(node);
      if (known) return known;
      const { location = '' } = lineFields(nodes.get(node) ?? '');
      const at = parseLocation(location);
      const got = reader.read(node, location, heads.setOf(node) ?? '');
      if (!at) return refuse('index', `was changed: its line of ${node} names no entry`);
      if ('problem' in got) return refuse(packName(at.pack), got.problem);
      const digests: ArtifactDigests = new Map(got.digests.artifacts.map((a) => [a.name, a.sha256]));
      let offset = at.offset + at.digestsLength;
      for (const a of got.digests.artifacts) {
        if (!places.has(a.sha256)) places.set(a.sha256, { pack: at.pack, offset, size: a.size });
        offset += a.size;
      }
      artifacts.set(node, digests);
      return digests;
    },
    bytes(sha) {
      const place = places.get(sha);
      if (place === undefined) throw new TypeError(`no node asked for holds ${sha}`);
      const bytes = reader.bytesAt(place.pack, place.offset, place.size);
      if (bytes === undefined) return refuse(packName(place.pack), 'was removed or cut short');
      return sha256Hex(bytes) === sha ? bytes : refuse(packName(place.pack), 'was changed');
    },
  };
}
