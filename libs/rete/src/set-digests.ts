import { Buffer } from 'node:buffer';
import type { CompiledSetDigests } from '#contracts/files';
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
      sha256: sha256Hex(content),
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
