import type { AgentState, ConfirmedRecord, Provisional } from '#contracts';

/**
 * Commit-confirmed on the node, as pure functions of the stored state, an event and the time
 * given: evolve folds what happened into the provisional record, verdict says whether the version
 * is confirmed, must be reverted, or waits. Only the agent decides to revert; the coordinator's
 * answers are events here like any other.
 */

export type ConfirmationEvent =
  /** The activation of the provisional version completed: the checks and the contact count from now. */
  | { readonly type: 'activated'; readonly at: Date; readonly hasChecks: boolean }
  | { readonly type: 'checks_passed'; readonly at: Date }
  | { readonly type: 'check_failed'; readonly at: Date; readonly failure: string }
  /** An authenticated poll or a delivered report, through the network as the new set left it. */
  | { readonly type: 'coordinator_reached'; readonly at: Date }
  | { readonly type: 'operator_confirmed'; readonly at: Date; readonly by: string };

export type Verdict =
  | { readonly kind: 'confirmed'; readonly record: ConfirmedRecord }
  | { readonly kind: 'revert'; readonly reason: string }
  /** `needs`: what is still missing, in the order a revert would name it. */
  | { readonly kind: 'waiting'; readonly until: Date; readonly needs: readonly ('checks' | 'contact' | 'operator')[] };

export const REASON_NOT_REACHED = 'coordinator not reached after activation';
export const REASON_NOT_CONFIRMED = 'no operator confirmation within the window';

/** The provisional record a new version starts with, when it is activated under a window. */
export function provisionalFor(version: number, previous: number, windowSeconds: number, mode: Provisional['mode'], now: Date): Provisional {
  return {
    version,
    previous,
    window_seconds: windowSeconds,
    deadline: new Date(now.getTime() + windowSeconds * 1000).toISOString(),
    mode,
    activated_at: null,
    checks_passed_at: null,
    check_failure: null,
    reached_at: null,
    operator_confirmed: null,
  };
}

export function evolve(p: Provisional, e: ConfirmationEvent): Provisional {
  const at = e.at.toISOString();
  switch (e.type) {
    case 'activated':
      // Without checks there is nothing to wait for on the host: the contact alone decides.
      return { ...p, activated_at: at, checks_passed_at: e.hasChecks ? null : at, reached_at: null };
    case 'checks_passed':
      return p.activated_at === null || p.checks_passed_at !== null ? p : { ...p, checks_passed_at: at, check_failure: null };
    case 'check_failed':
      return p.activated_at === null || p.checks_passed_at !== null ? p : { ...p, check_failure: e.failure };
    case 'coordinator_reached':
      // A contact before the activation completed says nothing about the network the new set left.
      if (p.activated_at === null || p.reached_at !== null || e.at.getTime() < Date.parse(p.activated_at)) return p;
      return { ...p, reached_at: at };
    case 'operator_confirmed':
      return p.operator_confirmed !== null ? p : { ...p, operator_confirmed: { by: e.by, at } };
    default: {
      const never: never = e;
      throw new TypeError(`unknown confirmation event ${JSON.stringify(never)}`);
    }
  }
}

/**
 * Confirmed once everything required has happened, whenever that is judged: what happened before the
 * deadline counts even if it is looked at later (a slow pass). Otherwise a revert once the deadline
 * has passed, naming the first thing missing: the failed check with its output, the contact, the
 * operator.
 */
export function verdict(p: Provisional, now: Date): Verdict {
  const needs: ('checks' | 'contact' | 'operator')[] = [];
  const deadline = Date.parse(p.deadline);
  const inTime = (at: string | null | undefined) => at != null && Date.parse(at) <= deadline;
  if (!inTime(p.checks_passed_at)) needs.push('checks');
  if (!inTime(p.reached_at)) needs.push('contact');
  if (p.mode === 'operator' && !inTime(p.operator_confirmed?.at)) needs.push('operator');
  if (needs.length === 0) {
    const at = [p.checks_passed_at, p.reached_at, p.operator_confirmed?.at]
      .filter((t): t is string => t != null)
      .sort()
      .at(-1) as string;
    return { kind: 'confirmed', record: { version: p.version, at, mode: p.mode, by: p.operator_confirmed?.by ?? null } };
  }
  if (now.getTime() < deadline) return { kind: 'waiting', until: new Date(deadline), needs };
  return { kind: 'revert', reason: reasonFor(p, needs[0]) };
}

function reasonFor(p: Provisional, missing: 'checks' | 'contact' | 'operator'): string {
  if (missing === 'checks') {
    if (p.activated_at === null) return `version ${p.version} was not activated within the window`;
    return p.check_failure ?? 'health checks did not pass within the window';
  }
  return missing === 'contact' ? REASON_NOT_REACHED : REASON_NOT_CONFIRMED;
}

/** What `flor agent status` shows of the confirmation; null while no set ever had a window. */
export function confirmationView(state: Pick<AgentState, 'provisional' | 'confirmed' | 'reverted'>): {
  state: 'provisional' | 'confirmed' | 'reverting' | 'reverted';
  provisional: Provisional | null;
  confirmed: ConfirmedRecord | null;
  reverted: AgentState['reverted'];
} | null {
  const { provisional, confirmed, reverted } = state;
  if (!provisional && !confirmed && !reverted) return null;
  let current: 'provisional' | 'confirmed' | 'reverting' | 'reverted';
  if (reverted && !reverted.done) current = 'reverting';
  else if (provisional) current = 'provisional';
  // The newer of the last confirmation and the last revert is what holds now.
  else if (reverted && (!confirmed || confirmed.version < reverted.version)) current = 'reverted';
  else current = 'confirmed';
  return { state: current, provisional, confirmed, reverted };
}
