import type { Kysely } from 'kysely';
import { NO_LABELS, scopeSelects, type TokenScope } from '#contracts';
import type { Database } from '../db/index.js';
import { readAllNodeLabels } from './node-labels.repository.js';

/**
 * A scoped token's nodes as its reads see them, by the labels recorded when the read began: whether
 * a node is one of them, and every name that is (the nodes whose recorded labels a selector matches,
 * and the names the scope lists outright, labelled or not).
 */
export interface ScopeView {
  selects(node: string): boolean;
  names(): string[];
}

/** The view of a scoped token's nodes; null for a token held to none, which reads every node. */
export async function scopeView(db: Kysely<Database>, scope: TokenScope | null): Promise<ScopeView | null> {
  if (scope === null) return null;
  const labels = await readAllNodeLabels(db);
  const selects = (node: string) => scopeSelects(scope, node, labels.get(node) ?? NO_LABELS);
  return {
    selects,
    names: () => [...new Set([...[...labels.keys()].filter(selects), ...scope.filter((s) => !s.includes(':'))])],
  };
}

/**
 * A node list's filter narrowed to a scoped token's nodes, by their recorded labels; the filter as
 * it is for a token held to none. The labels are read once, when the list is asked for.
 */
export async function scopedFilter<R extends { readonly node: string }, T>(
  db: Kysely<Database>,
  scope: TokenScope | null,
  keep: (r: R) => T | null,
): Promise<(r: R) => T | null> {
  const view = await scopeView(db, scope);
  if (view === null) return keep;
  return (r) => (view.selects(r.node) ? keep(r) : null);
}
