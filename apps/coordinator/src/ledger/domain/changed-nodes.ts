import type { Decision } from './ledger.decider.js';
import type { LedgerEvent } from './ledger.events.js';

/**
 * The nodes a decision changes or commits to change: every node it stamps (a publish, rollback or
 * retirement) and every target of a rollout it plans, later waves included, since their releases
 * follow without the operator.
 */
export function changedNodesBy(events: readonly LedgerEvent[]): ReadonlySet<string> {
  const nodes = new Set<string>();
  for (const e of events) {
    if (e.type === 'node_set_stamped') nodes.add(e.data.node);
    else if (e.type === 'rollout_planned') for (const t of e.data.targets) nodes.add(t.node);
  }
  return nodes;
}

/**
 * What a scoped token must hold to make a decision: the nodes it changes (changedNodesBy) and those
 * whose fate it settles without a stamp (Decision.governs: a confirmation's, a steered rollout's).
 */
export function governedBy(decision: Decision): ReadonlySet<string> {
  const nodes = changedNodesBy(decision.events);
  if (!decision.governs || decision.governs.length === 0) return nodes;
  return new Set([...nodes, ...decision.governs]);
}
