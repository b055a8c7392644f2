import type { NodeLabels, TokenScope } from '#contracts';
import type { AdmitChanges } from '../ledger/index.js';
import { knownNodes, writeNodeLabels } from './node-labels.repository.js';
import { recordedLabels } from './labels-memo.js';
import { outOfScope, outOfScopeError, relabelled } from './scope.rules.js';

/**
 * What the ledger asks, under its lock, before it writes a request: whether a scoped token may
 * change the nodes the decision changes (see outOfScope), and then the labels a publish sends,
 * written in the same transaction. Undefined when there is nothing to check or write.
 */
export function scopeGuard(scope: TokenScope | null, what: string, sent?: Readonly<Record<string, NodeLabels>>): AdmitChanges | undefined {
  const labels = new Map(Object.entries(sent ?? {}));
  if (scope === null && labels.size === 0) return undefined;
  return async (trx, changed) => {
    const before = await recordedLabels(trx);
    const recorded = before.labels;
    if (scope !== null) {
      const unlabelled = [...changed, ...labels.keys()].filter((n) => !recorded.has(n));
      const known = unlabelled.length === 0 ? new Set<string>() : await knownNodes(trx, unlabelled);
      const refused = outOfScope(scope, { changed, recorded, sent: labels, known });
      if (refused.length > 0) throw outOfScopeError(scope, refused, what);
    }
    const changes = relabelled({ recorded, sent: labels });
    if (changes.length === 0) return;
    const written = await writeNodeLabels(
      trx,
      changes.map((n) => [n, labels.get(n)!] as const),
      new Date(),
    );
    await before.record(written);
  };
}
