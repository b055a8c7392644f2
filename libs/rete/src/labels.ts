import type { NodeLabels } from '#contracts';
import type { Rete } from './model.js';

/**
 * Each node's tags and the groups it is a member of, sorted: what a publish sends beside its
 * artifacts so the coordinator can hold tokens scoped to tags or groups (tag:<name>, group:<name>,
 * as the ACL writes them) to the nodes they select.
 */
export function nodeLabels(rete: Rete): Map<string, NodeLabels> {
  const groupsOf = new Map<string, string[]>();
  for (const [group, members] of rete.groups) {
    for (const node of members) groupsOf.set(node, [...(groupsOf.get(node) ?? []), group]);
  }
  return new Map(rete.nodes.map((n) => [n.name, { tags: [...new Set(n.tags)].sort(), groups: [...new Set(groupsOf.get(n.name) ?? [])].sort() }]));
}
