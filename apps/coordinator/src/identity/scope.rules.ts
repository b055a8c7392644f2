import { NO_LABELS, sameLabels, scopeSelects, type NodeLabels, type TokenScope } from '#contracts';
import { DomainError } from '../common/index.js';

/** What the scope check of one request knows about the nodes it touches. */
export interface ScopeFacts {
  /** The nodes the decision changes: stamps, retirements, a rollout's targets. */
  readonly changed: ReadonlySet<string>;
  /** Labels as recorded before this request. */
  readonly recorded: ReadonlyMap<string, NodeLabels>;
  /** Labels this request sends (a publish's), by node. */
  readonly sent: ReadonlyMap<string, NodeLabels>;
  /** Nodes the ledger already has a head for. */
  readonly known: ReadonlySet<string>;
}

/** The nodes whose labels a request changes: those it sends that differ from what is recorded. */
export function relabelled(facts: Pick<ScopeFacts, 'recorded' | 'sent'>): string[] {
  return [...facts.sent].filter(([node, labels]) => !sameLabels(labels, facts.recorded.get(node) ?? NO_LABELS)).map(([node]) => node);
}

/**
 * The nodes a scoped request touches outside its scope, sorted. A node is judged by the labels
 * recorded before the request, so a request cannot move a node into its own scope by relabelling
 * it; only a node new to the ledger, which has none yet, is judged by the labels it sends. A node
 * the ledger knows but has no labels for carries none: only its name can select it. A node it
 * relabels must stay in scope by its new labels too: a scoped token cannot hand a node over to
 * another scope.
 */
export function outOfScope(scope: TokenScope, facts: ScopeFacts): string[] {
  const moved = relabelled(facts);
  const touched = new Set([...facts.changed, ...moved]);
  const labelsOf = (node: string): NodeLabels => facts.recorded.get(node) ?? (facts.known.has(node) ? NO_LABELS : (facts.sent.get(node) ?? NO_LABELS));
  const refused = new Set([...touched].filter((node) => !scopeSelects(scope, node, labelsOf(node))));
  for (const node of moved) if (!scopeSelects(scope, node, facts.sent.get(node)!)) refused.add(node);
  return [...refused].sort();
}

/** How many refused nodes the message names; the problem body lists more, and counts them all. */
const NAMED = 5;

export function outOfScopeError(scope: TokenScope, refused: readonly string[], what: string): DomainError {
  const more = refused.length > NAMED ? `, and ${refused.length - NAMED} more` : '';
  const subject = refused.length === 1 ? 'a node' : `${refused.length} nodes`;
  return new DomainError(
    'out_of_scope',
    `${what} would change ${subject} outside this token's scope (${scope.join(', ')}): ${refused.slice(0, NAMED).join(', ')}${more}. Nothing was written: leave ${refused.length === 1 ? 'it' : 'them'} out, or ask an admin for a token whose scope holds ${refused.length === 1 ? 'it' : 'them'}`,
    { nodes: refused, scope },
  );
}
