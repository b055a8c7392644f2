import { readFileSync } from 'node:fs';
import { CompiledSetDigests, DIGESTS_JSON } from '#contracts/files';
import { setDigest, sha256Hex } from '#bundle';
import type { ArtifactDigests } from '#rete';
import { localHeads, type LocalHeads } from './local-heads.js';
import { RetectlError } from './errors.js';

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
 * node's artifacts and bytes are read from `base` (.flor/compiled) only when a publish asks for them,
 * each checked as it is read: the node's digests.json must give the set digest the record holds, and
 * each file the sha256 its digests.json names. Anything else was changed by hand since the compile:
 * `stale` is called (to drop the record) and the publish is refused before it sends anything of it.
 */
export function recordedTree(base: string, nodes: { readonly size: number; names(): readonly string[] }, heads: LocalHeads, stale: () => void): TreeToPublish {
  const artifacts = new Map<string, ArtifactDigests>();
  // Listed only when asked for (a whole tree sent, every node's labels): a delta of a few nodes never needs them.
  let names: readonly string[] | undefined;
  const paths = new Map<string, string>();
  const refuse = (path: string, what: string): never => {
    stale();
    throw new RetectlError('stale_compile', `${path} ${what} since the last compile: run retectl compile`);
  };
  return {
    size: nodes.size,
    has: (node) => heads.setOf(node) !== undefined,
    names: () => (names ??= nodes.names()),
    heads: () => heads,
    artifacts(node) {
      const known = artifacts.get(node);
      if (known) return known;
      const path = `${base}/${node}/${DIGESTS_JSON}`;
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch {
        return refuse(path, 'was removed');
      }
      let parsed;
      try {
        parsed = CompiledSetDigests.safeParse(JSON.parse(text));
      } catch {
        parsed = undefined;
      }
      const list = parsed?.success ? parsed.data : undefined;
      if (!list || list.node !== node || setDigest(list.artifacts) !== list.set_digest || list.set_digest !== heads.setOf(node)) {
        return refuse(path, 'was changed');
      }
      const digests: ArtifactDigests = new Map(list.artifacts.map((a) => [a.name, a.sha256]));
      for (const a of list.artifacts) if (!paths.has(a.sha256)) paths.set(a.sha256, `${base}/${node}/${a.name}`);
      artifacts.set(node, digests);
      return digests;
    },
    bytes(sha) {
      const path = paths.get(sha);
      if (path === undefined) throw new TypeError(`no node asked for holds ${sha}`);
      let bytes: Buffer;
      try {
        bytes = readFileSync(path);
      } catch {
        return refuse(path, 'was removed');
      }
      return sha256Hex(bytes) === sha ? bytes : refuse(path, 'was changed');
    },
  };
}
