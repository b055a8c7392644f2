import { z } from 'zod';
import { NODE_NAME_PATTERN, NodeName } from './primitives.schema.js';

/** The most selectors one token's scope may hold, and the most tags or groups a publish may give one node. */
export const MAX_SCOPE_SELECTORS = 100;
export const MAX_NODE_LABELS = 100;

/**
 * One selector of a token's scope, written as an ACL rule's `from` entry of the rete: `web-1` (a
 * node), `tag:edge`, `group:ops`. `node:web-1` is taken too, and kept as `web-1`: one spelling per
 * selector, so two scopes that select the same nodes read the same.
 */
export const ScopeSelector = z
  .string()
  .max(80)
  .transform((s, ctx) => {
    const m = /^(?:(node|tag|group):)?(.*)$/.exec(s)!;
    if (!NODE_NAME_PATTERN.test(m[2])) {
      ctx.addIssue({ code: 'custom', message: `${JSON.stringify(s)} must be a node name, node:<name>, tag:<name> or group:<name>, each name a DNS label` });
      return z.NEVER;
    }
    return m[1] === undefined || m[1] === 'node' ? m[2] : `${m[1]}:${m[2]}`;
  });
/** A token's scope: the nodes it may act on or read. Absent (null when stored): every node. */
export const TokenScope = z.array(ScopeSelector).min(1).max(MAX_SCOPE_SELECTORS);
export type TokenScope = readonly string[];

const Label = z.string().regex(NODE_NAME_PATTERN, 'must be a DNS label');
/**
 * What a rete says a node carries, for scoped tokens: its tags and the groups it is a member of. Sent
 * with a publish beside its artifacts, never in them: the node's set and version do not depend on it.
 */
export const NodeLabels = z.strictObject({
  tags: z.array(Label).max(MAX_NODE_LABELS),
  groups: z.array(Label).max(MAX_NODE_LABELS),
});
export type NodeLabels = z.infer<typeof NodeLabels>;
export const PublishLabels = z.record(NodeName, NodeLabels);

export const NO_LABELS: NodeLabels = { tags: [], groups: [] };

/** Whether a scope selects the node: by its name, one of its tags or one of its groups. */
export function scopeSelects(scope: TokenScope, node: string, labels: NodeLabels): boolean {
  for (const selector of scope) {
    const colon = selector.indexOf(':');
    if (colon < 0) {
      if (selector === node) return true;
      continue;
    }
    const name = selector.slice(colon + 1);
    if (selector.startsWith('tag:') ? labels.tags.includes(name) : labels.groups.includes(name)) return true;
  }
  return false;
}

/** Two label sets are the same when they hold the same tags and groups, in any order. */
export function sameLabels(a: NodeLabels, b: NodeLabels): boolean {
  const same = (x: readonly string[], y: readonly string[]) => {
    // Both sorted, as retectl sends them and the coordinator stores them: no sets to build.
    if (x.length === y.length && x.every((v, i) => v === y[i])) return true;
    const sx = new Set(x);
    const sy = new Set(y);
    return sx.size === sy.size && [...sx].every((v) => sy.has(v));
  };
  return same(a.tags, b.tags) && same(a.groups, b.groups);
}
