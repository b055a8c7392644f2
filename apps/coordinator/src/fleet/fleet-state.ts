import type { ConvergenceState, CredentialState, NodeLifecycle, PublishNodeStatus } from '#contracts';

/**
 * Pure classification of where each node stands. Outstanding and failed are never conflated: a
 * node that has not reported is outstanding however long it has been silent (a laptop may be off
 * for weeks); only a reported failure is a failure. For the same reason no lifecycle word here
 * depends on time: the last contact and its age are reported as they are, never turned into
 * `disconnected` by a threshold.
 */

export interface Outcome {
  readonly version: number;
  readonly result: 'applied' | 'failed' | 'rejected' | 'reverted';
  readonly error: string | null;
  /** How an applied version was activated, as the agent reported it. */
  readonly activation?: unknown;
}

export interface NodeFacts {
  readonly head: { readonly version: number; readonly retired: boolean } | null;
  readonly liveCredentials: number;
  readonly revokedCredentials: number;
  /** An unused enrolment token that has not expired. */
  readonly pendingToken: boolean;
  readonly appliedVersion: number | null;
  /** Outcomes this node reported, any order. */
  readonly outcomes: readonly Outcome[];
}

/**
 * Retired once its final version is published; enrolled once an agent enrolled as it, even if the
 * credential was revoked since (that is the credential's state, not the node's); otherwise no agent
 * manages it, whether it was published or only given a token: unmanaged.
 */
export function lifecycleState(f: NodeFacts): NodeLifecycle {
  if (f.head?.retired) return 'retired';
  if (f.liveCredentials > 0 || f.revokedCredentials > 0) return 'enrolled';
  return 'unmanaged';
}

/** A working credential first; then a token out, which is how a node with revoked credentials comes back. */
export function credentialState(f: Pick<NodeFacts, 'liveCredentials' | 'revokedCredentials' | 'pendingToken'>): CredentialState {
  if (f.liveCredentials > 0) return 'live';
  if (f.pendingToken) return 'pending';
  if (f.revokedCredentials > 0) return 'revoked';
  return 'none';
}

/** Whether the node runs its head version; null when nothing was ever published for it. */
export function convergence(f: NodeFacts): ConvergenceState | null {
  if (!f.head) return null;
  const atHead = f.outcomes.find((o) => o.version === f.head!.version);
  if (atHead?.result === 'applied') return 'converged';
  // It runs a version of the head's number that it refused: its own set of that number, not the ledger's.
  if (atHead?.result === 'rejected' && f.appliedVersion === f.head.version) return 'failed';
  if (f.appliedVersion !== null && f.appliedVersion >= f.head.version) return 'converged';
  if (atHead) return 'failed';
  return 'outstanding';
}

/** What became of one version a publish stamped on a node. */
export function publishNodeStatus(to: number, f: Pick<NodeFacts, 'appliedVersion' | 'outcomes'>): { status: PublishNodeStatus; reason: string | null } {
  const own = f.outcomes.find((o) => o.version === to);
  if (own?.result === 'applied') return { status: 'applied', reason: null };
  // Before superseded: the revert is itself a later version the node then runs, and that it went back is the news.
  if (own?.result === 'reverted') return { status: 'reverted', reason: own.error ?? 'reverted without a reason' };
  const later = f.outcomes.some((o) => o.version > to && o.result === 'applied') || (f.appliedVersion !== null && f.appliedVersion > to);
  if (later) return { status: 'superseded', reason: null };
  if (own) return { status: 'failed', reason: own.error ?? `${own.result} without a reason` };
  if (f.appliedVersion === to) return { status: 'applied', reason: null };
  return { status: 'outstanding', reason: null };
}
