import { Buffer } from 'node:buffer';
import { RESOURCES_JSON, type CompiledSetDigests } from '#contracts/files';
import { setDigest, sha256Hex } from '#bundle';
import type { ArtifactBytes } from './compile.js';
import { cmp } from './diagnostics.js';
import { presortedPretty } from './sorted-json.js';

/**
 * A compiled node's digest list (digests.json): every artifact with its sha256 and size, sorted by
 * name, and the set digest the coordinator will give the same set. `flor agent apply --set` checks
 * the folder against it, so a set copied to a machine that has no coordinator yet is applied only
 * whole and as compiled. Built from compiled artifacts, so valid by construction (a unit test parses
 * it with the contract's schema).
 */
export function compiledSetDigests(node: string, files: ReadonlyMap<string, ArtifactBytes>): CompiledSetDigests {
  const artifacts = [...files]
    .map(([name, content]) => ({
      name,
      sha256: sharedDigest(name, content),
      size: typeof content === 'string' ? Buffer.byteLength(content, 'utf8') : content.byteLength,
    }))
    .sort((a, b) => cmp(a.name, b.name));
  // Keys in canonical order, for digestsJsonText.
  return { artifacts, node, set_digest: setDigest(artifacts) };
}

/** digests.json's bytes: canonical JSON like every compiled artifact. */
export const digestsJsonText = (node: string, files: ReadonlyMap<string, ArtifactBytes>): string => presortedPretty(compiledSetDigests(node, files));

/** A node's digest list and the bytes of its digests.json, worked out once. */
export function digestsJson(node: string, files: ReadonlyMap<string, ArtifactBytes>): { readonly digests: CompiledSetDigests; readonly text: string } {
  const digests = compiledSetDigests(node, files);
  return { digests, text: presortedPretty(digests) };
}

/**
 * The sha256 of an artifact's bytes, kept for the contents many nodes share: a file resource's
 * bytes are one Buffer for every node that has it (never changed once read), and nodes with the same resources share one
 * resources.json text. A fleet's compile would otherwise hash the same bytes once a node. Every
 * other artifact (flor.json, agent.json) is a node's own, and hashed.
 */
function sharedDigest(name: string, content: ArtifactBytes): string {
  if (typeof content !== 'string') {
    let digest = bufferDigests.get(content);
    if (digest === undefined) bufferDigests.set(content, (digest = sha256Hex(content)));
    return digest;
  }
  if (name !== RESOURCES_JSON) return sha256Hex(content);
  let digest = resourcesDigests.get(content);
  if (digest === undefined) {
    digest = sha256Hex(content);
    if (resourcesDigests.size >= RESOURCES_KEPT) resourcesDigests.clear();
    resourcesDigests.set(content, digest);
  }
  return digest;
}

const bufferDigests = new WeakMap<Uint8Array, string>();
const resourcesDigests = new Map<string, string>();
/** A fleet has a few sets of resources; past this many, the texts kept are let go. */
const RESOURCES_KEPT = 1024;
