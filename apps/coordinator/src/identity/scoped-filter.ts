import type { Kysely } from 'kysely';
import { NO_LABELS, scopeSelects, type TokenScope } from '#contracts';
import type { Database } from '../db/index.js';
import { readAllNodeLabels } from './node-labels.repository.js';

/**
 * A node list's filter narrowed to a scoped token's nodes, by their recorded labels; the filter as
 * it is for a token held to none. The labels are read once, when the list is asked for.
 */
export async function scopedFilter<R extends { readonly node: string }, T>(
  db: Kysely<Database>,
  scope: TokenScope | null,
  keep: (r: R) => T | null,
): Promise<(r: R) => T | null> {
  if (scope === null) return keep;
  const labels = await readAllNodeLabels(db);
  return (r) => (scopeSelects(scope, r.node, labels.get(r.node) ?? NO_LABELS) ? keep(r) : null);
}
