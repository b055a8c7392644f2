import type { NodeLabels } from '#contracts';
import { ACL_SOURCE, type ReteFile } from '#contracts/files';
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

/**
 * Every tag a rete's files name, rather than carry: in an ACL rule's sources (`tag:<name>`), a
 * resources block's selector and the rollout's canary. These are all the places a tag changes what
 * is compiled or which nodes a plan picks; a tag named nowhere changes a node's labels alone.
 */
export function namedTags(files: Iterable<ReteFile>): Set<string> {
  const named = new Set<string>();
  for (const file of files) {
    for (const rule of file.acl ?? []) {
      for (const text of rule.from) {
        const m = ACL_SOURCE.exec(text);
        if (m?.[1] === 'tag') named.add(m[2]);
      }
    }
    for (const block of file.resources ?? []) for (const t of block.select.tags ?? []) named.add(t);
    for (const t of file.rollout?.canary?.tags ?? []) named.add(t);
  }
  return named;
}
