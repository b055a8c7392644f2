import { Buffer } from 'node:buffer';
import type { ArtifactBytes, CompiledTree } from './compile.js';
import { cmp } from './diagnostics.js';

export interface TreeChange {
  readonly added: readonly string[];
  readonly changed: readonly { readonly node: string; readonly artifacts: readonly string[] }[];
  readonly removed: readonly string[];
  readonly unchanged: readonly string[];
}

/** What turning `before` into `after` changes, node by node, artifact by artifact (bytes compared). */
export function diffTrees(before: CompiledTree, after: CompiledTree): TreeChange {
  const added: string[] = [];
  const changed: { node: string; artifacts: string[] }[] = [];
  const unchanged: string[] = [];
  for (const node of [...after.keys()].sort(cmp)) {
    const old = before.get(node);
    if (!old) {
      added.push(node);
      continue;
    }
    const artifacts = differingArtifacts(old, after.get(node) as ReadonlyMap<string, ArtifactBytes>);
    if (artifacts.length > 0) changed.push({ node, artifacts });
    else unchanged.push(node);
  }
  const removed = [...before.keys()].filter((n) => !after.has(n)).sort(cmp);
  return { added, changed, removed, unchanged };
}

/** The artifacts of one node whose bytes differ between two of its sets (one only in either counts), in name order. */
export function differingArtifacts(old: ReadonlyMap<string, ArtifactBytes>, now: ReadonlyMap<string, ArtifactBytes>): string[] {
  return [...new Set([...old.keys(), ...now.keys()])].sort(cmp).filter((a) => !sameBytes(old.get(a), now.get(a)));
}

/** Whether two artifacts hold the same bytes, whichever of them is text and whichever raw. */
export function sameBytes(a: ArtifactBytes | undefined, b: ArtifactBytes | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (typeof a === 'string' && typeof b === 'string') return a === b;
  return bytesOf(a).equals(bytesOf(b));
}

/** The bytes of an artifact as they are uploaded, digested and written: text is UTF-8. */
export const bytesOf = (a: ArtifactBytes): Buffer => (typeof a === 'string' ? Buffer.from(a, 'utf8') : Buffer.from(a.buffer, a.byteOffset, a.byteLength));
