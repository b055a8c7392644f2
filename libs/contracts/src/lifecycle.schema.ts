import { z } from 'zod';

/**
 * The lifecycle of a machine in a mesh: one vocabulary for the coordinator's API (GET /v1/nodes),
 * `retectl status` and `flor agent status`. Only `enrolled` and `disconnected` are nodes, and they are
 * the same node in two situations. Which side can say which word: NodeLifecycle (the coordinator)
 * and AgentLifecycle (the agent, about itself).
 *
 * Nobody declares a node disconnected by a threshold: the coordinator reports the last contact and its
 * age, and an operator filters on that (`retectl status --contact-older-than 1h`); only the agent,
 * which knows its own passes failed, says `disconnected`.
 */
export const Lifecycle = z.enum(['unmanaged', 'hosted', 'enrolled', 'disconnected', 'retired']);
export type Lifecycle = z.infer<typeof Lifecycle>;

/** What each word means, one line each: for help texts and documentation. */
export const LIFECYCLE_MEANING = {
  /**
   * No agent manages the machine: from the mesh's point of view it is a name in the rete (published)
   * or one an enrolment token was issued for, and no agent ever enrolled as it.
   */
  unmanaged: 'no agent has enrolled as this node: published or given a token, nothing more',
  /** An agent is installed and running but was never told which mesh it belongs to: between installing and enrolling. */
  hosted: 'an agent is installed but not enrolled',
  /**
   * A node: its agent enrolled and is not retired. On the coordinator, a node that holds or held a
   * credential (see CredentialState for whether it still works); on the agent, one that is not
   * disconnected.
   */
  enrolled: 'an enrolled node',
  /**
   * The same enrolled node, while its passes cannot reach the coordinator (a network error or a 5xx
   * answer), from the first failed pass of the run until the next successful one. Only the agent says it.
   */
  disconnected: 'an enrolled node whose passes cannot reach the coordinator (the agent says so)',
  /** The node was given its final, empty version; on the agent, once the coordinator said so after it was applied. */
  retired: 'retired: its final, empty version was published',
} as const satisfies Record<Lifecycle, string>;

/** The words the coordinator uses: it cannot see an agent that never enrolled, and never guesses at disconnection. */
export const NodeLifecycle = Lifecycle.extract(['unmanaged', 'enrolled', 'retired']);
export type NodeLifecycle = z.infer<typeof NodeLifecycle>;

/** The words an agent uses about itself: it runs, so it is never unmanaged. */
export const AgentLifecycle = Lifecycle.extract(['hosted', 'enrolled', 'disconnected', 'retired']);
export type AgentLifecycle = z.infer<typeof AgentLifecycle>;

/**
 * The coordinator's view of a node's credential, apart from its lifecycle: `none` (never enrolled, no
 * token out), `pending` (no live credential, an unused enrolment token that has not expired), `live`
 * (a credential that works), `revoked` (every credential it had was revoked: re-enrolment, retirement
 * or an admin's DELETE).
 */
export const CredentialState = z.enum(['none', 'pending', 'live', 'revoked']);
export type CredentialState = z.infer<typeof CredentialState>;

/** Whether a node runs its head version: `converged`, `outstanding` (not reported yet, never a failure), `failed`. */
export const ConvergenceState = z.enum(['converged', 'outstanding', 'failed']);
export type ConvergenceState = z.infer<typeof ConvergenceState>;

/**
 * The `state` words of the coordinator's node list before this vocabulary, and the filter that gives
 * the same nodes now. retectl maps them with a deprecation note; the API refuses them naming this.
 */
export const LEGACY_STATE_FILTERS = {
  unenrolled: { state: 'unmanaged', credential: 'none' },
  pending: { credential: 'pending' },
  revoked: { state: 'enrolled', credential: 'revoked' },
} as const satisfies Record<string, { state?: NodeLifecycle; credential?: CredentialState }>;
export type LegacyStateWord = keyof typeof LEGACY_STATE_FILTERS;

export function isLegacyStateWord(word: string): word is LegacyStateWord {
  return Object.hasOwn(LEGACY_STATE_FILTERS, word);
}

/** The replacement filter in the words of a flag or a query: `--state unmanaged --credential none`. */
export function legacyStateReplacement(word: LegacyStateWord, style: 'flag' | 'query'): string {
  const f: { state?: string; credential?: string } = LEGACY_STATE_FILTERS[word];
  const parts = Object.entries(f).map(([k, v]) => (style === 'flag' ? `--${k} ${v}` : `${k}=${v}`));
  return parts.join(style === 'flag' ? ' ' : '&');
}

/**
 * Why a `state` filter word is refused, said so that the caller knows what to ask instead; null when
 * the word is simply unknown.
 */
export function stateFilterHint(word: unknown, style: 'flag' | 'query'): string | null {
  if (typeof word !== 'string') return null;
  if (isLegacyStateWord(word)) return `${word} is no longer a state: use ${legacyStateReplacement(word, style)}`;
  const olderThan = style === 'flag' ? '--contact-older-than 1h' : 'contact_older_than=1h';
  if (word === 'disconnected')
    return `the coordinator never declares a node disconnected: filter on the age of its last contact instead (${olderThan}); the agent itself says disconnected (flor agent status)`;
  if (word === 'hosted')
    return 'the coordinator cannot see an agent that never enrolled: such a node is unmanaged; the agent itself says hosted (flor agent status)';
  return null;
}
