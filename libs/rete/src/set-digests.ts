import { CompiledSetDigests } from '#contracts';
import { canonicalPretty, setDigest, sha256Hex } from '#bundle';
import type { ArtifactBytes } from './compile.js';
import { cmp } from './diagnostics.js';
import { bytesOf } from './tree-diff.js';

/**
 * A compiled node's digest list (digests.json): every artifact with its sha256 and size, sorted by
 * name, and the set digest the coordinator will give the same set. `flor agent apply --set` checks
 * the folder against it, so a set copied to a machine that has no coordinator yet is applied only
 * whole and as compiled.
 */
export function compiledSetDigests(node: string, files: ReadonlyMap<string, ArtifactBytes>): CompiledSetDigests {
  const artifacts = [...files]
    .map(([name, content]) => {
      const bytes = bytesOf(content);
      return { name, sha256: sha256Hex(bytes), size: bytes.byteLength };
    })
    .sort((a, b) => cmp(a.name, b.name));
  return CompiledSetDigests.parse({ node, set_digest: setDigest(artifacts), artifacts });
}

/** digests.json's bytes: canonical JSON like every compiled artifact. */
export const digestsJsonText = (node: string, files: ReadonlyMap<string, ArtifactBytes>): string => canonicalPretty(compiledSetDigests(node, files));
