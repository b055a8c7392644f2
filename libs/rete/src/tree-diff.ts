import type { CompiledTree } from './compile.js';
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
    const now = after.get(node) as ReadonlyMap<string, string>;
    const names = [...new Set([...old.keys(), ...now.keys()])].sort(cmp);
    const artifacts = names.filter((a) => old.get(a) !== now.get(a));
    if (artifacts.length > 0) changed.push({ node, artifacts });
    else unchanged.push(node);
  }
  const removed = [...before.keys()].filter((n) => !after.has(n)).sort(cmp);
  return { added, changed, removed, unchanged };
}

export const treesEqual = (a: CompiledTree, b: CompiledTree): boolean => {
  const d = diffTrees(a, b);
  return d.added.length === 0 && d.changed.length === 0 && d.removed.length === 0;
};
