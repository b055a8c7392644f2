import type { ReteErrorCode } from '#contracts/files';
import { cmp } from './diagnostics.js';

/** Nodes picked by tags (carrying any of them), groups (their members) or names; one kind per selector. */
export interface NodeSelector {
  readonly tags?: readonly string[];
  readonly groups?: readonly string[];
  readonly nodes?: readonly string[];
}
export type SelectorKey = keyof NodeSelector;

/** What a selector picks from: every defined node by name with its tags, and the groups. Built once per rete. */
export interface Selectable {
  readonly tagsOf: ReadonlyMap<string, readonly string[]>;
  readonly groups: ReadonlyMap<string, readonly string[]>;
}

/** A name the selector gives that nothing in the rete answers to, as a located rete error says it. */
export interface UnknownTarget {
  readonly key: SelectorKey;
  /** Its index in the selector's list, for the error's path. */
  readonly index: number;
  readonly code: Extract<ReteErrorCode, 'unknown_node' | 'unknown_group' | 'unknown_tag'>;
  readonly message: string;
}

/**
 * The defined nodes a selector picks, sorted, and the names in it that pick nothing because they are
 * not defined. A group member that is no node is not picked: validation reports it at the group.
 */
export function selectNodes(from: Selectable, s: NodeSelector): { picked: string[]; unknown: UnknownTarget[] } {
  const { tagsOf } = from;
  const picked = new Set<string>();
  const unknown: UnknownTarget[] = [];
  (s.nodes ?? []).forEach((name, index) => {
    if (tagsOf.has(name)) picked.add(name);
    else unknown.push({ key: 'nodes', index, code: 'unknown_node', message: `no node is named "${name}"` });
  });
  (s.groups ?? []).forEach((name, index) => {
    const members = from.groups.get(name);
    if (!members) unknown.push({ key: 'groups', index, code: 'unknown_group', message: `no group is named "${name}"` });
    else for (const m of members) if (tagsOf.has(m)) picked.add(m);
  });
  (s.tags ?? []).forEach((name, index) => {
    let any = false;
    for (const [node, tags] of tagsOf) {
      if (!tags.includes(name)) continue;
      picked.add(node);
      any = true;
    }
    if (!any) unknown.push({ key: 'tags', index, code: 'unknown_tag', message: `no node carries the tag "${name}"` });
  });
  return { picked: [...picked].sort(cmp), unknown };
}
