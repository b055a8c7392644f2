import { createHash } from 'node:crypto';
import { DomainError } from '../../common/index.js';
import type { RecordedRolloutPlan, RolloutEvent, RolloutTarget } from './ledger.events.js';

export type RolloutStatus = 'running' | 'paused' | 'halted' | 'aborted' | 'completed' | 'superseded';
/** Statuses in which a rollout may still release waves: a publish touching its nodes must supersede it. */
export const ACTIVE: ReadonlySet<RolloutStatus> = new Set(['running', 'paused']);

/**
 * A rollout as its stream's events leave it (evolve). The decisions below read: `status` (only a
 * running rollout moves by itself), `released` (waves released so far; the next is `waves[released]`),
 * `releasedAt` (each released wave's time, for its bake), `stamped` (every released node and the
 * version the rollout gave it, to count its reports and to roll it back), `targets` (each node's
 * version at the plan and the set it is to get).
 */
export interface RolloutState {
  readonly id: string;
  readonly publishId: string;
  readonly message: string;
  readonly plan: RecordedRolloutPlan;
  readonly waves: readonly (readonly string[])[];
  readonly targets: ReadonlyMap<string, RolloutTarget>;
  readonly revision: number;
  readonly status: RolloutStatus;
  readonly released: number;
  readonly releasedAt: readonly string[];
  readonly stamped: ReadonlyMap<string, { readonly wave: number; readonly version: number }>;
  readonly reason: string | null;
  /** Operator confirmation asked of every wave's release, in seconds; absent when none. */
  readonly confirmWithin?: number;
}

/** An event as evolve needs it: its kind with its data, and when it was recorded. */
export type RecordedRolloutEvent = RolloutEvent extends infer E
  ? E extends RolloutEvent
    ? Pick<E, 'type' | 'data'> & { readonly recorded_at: string }
    : never
  : never;

/** Folds a rollout's events, in stream order, into its state; the first must be its plan. */
export function evolve(state: RolloutState | null, event: RecordedRolloutEvent): RolloutState {
  if (event.type === 'rollout_planned') {
    if (state) throw new Error(`rollout ${state.id} is planned twice`);
    const d = event.data;
    return {
      id: d.rollout_id,
      publishId: d.publish_id,
      message: d.message,
      plan: d.plan,
      waves: d.waves,
      targets: new Map(d.targets.map((t) => [t.node, t])),
      revision: 1,
      status: 'running',
      released: 0,
      releasedAt: [],
      stamped: new Map(),
      reason: null,
      ...(d.confirm_within !== undefined ? { confirmWithin: d.confirm_within } : {}),
    };
  }
  if (!state) throw new Error(`rollout event ${event.type} before its plan`);
  const revision = state.revision + 1;
  switch (event.type) {
    case 'rollout_wave_released': {
      const d = event.data;
      const stamped = new Map(state.stamped);
      for (const r of d.released) stamped.set(r.node, { wave: d.wave, version: r.to });
      return { ...state, revision, released: d.wave + 1, releasedAt: [...state.releasedAt, event.recorded_at], stamped };
    }
    case 'rollout_nodes_expired':
      // The nodes' heads moved past the rollout's versions: toRollBack leaves them alone from now on.
      return { ...state, revision };
    case 'rollout_paused':
      return { ...state, revision, status: 'paused', reason: event.data.reason ?? null };
    case 'rollout_resumed':
      return { ...state, revision, status: 'running', reason: event.data.reason ?? null };
    case 'rollout_halted':
    case 'rollout_aborted':
    case 'rollout_completed':
    case 'rollout_superseded': {
      const status = ({ rollout_halted: 'halted', rollout_aborted: 'aborted', rollout_completed: 'completed', rollout_superseded: 'superseded' } as const)[
        event.type
      ];
      return { ...state, revision, status, reason: event.data.reason ?? null };
    }
    default: {
      const unreachable: never = event;
      throw new TypeError(`unknown rollout event ${JSON.stringify(unreachable)}`);
    }
  }
}

/**
 * Which wave each changed node goes out in: the canary's changed nodes first, then the rest in the
 * order of sha256(rollout id ‖ node name), cut at the plan's cumulative shares (rounded up, so a
 * small fleet's first wave is never empty). Reproducible from the rollout id and the names alone.
 * Empty waves are dropped.
 */
export function planWaves(rolloutId: string, changed: readonly string[], plan: Pick<RecordedRolloutPlan, 'canary' | 'waves'>): string[][] {
  const canarySet = new Set(plan.canary);
  const canary = changed.filter((n) => canarySet.has(n)).sort(compare);
  const rest = changed
    .filter((n) => !canarySet.has(n))
    .map((n) => ({ n, key: createHash('sha256').update(`${rolloutId}\n${n}`).digest('hex') }))
    .sort((a, b) => compare(a.key, b.key) || compare(a.n, b.n))
    .map((x) => x.n);
  const waves: string[][] = [canary];
  let start = 0;
  for (const share of plan.waves) {
    const end = Math.min(rest.length, Math.ceil((rest.length * share) / 100));
    waves.push(rest.slice(start, end).sort(compare));
    start = Math.max(start, end);
  }
  return waves.filter((w) => w.length > 0);
}

/** What the fleet has said about one released wave's nodes at the versions the rollout gave them. */
export interface WaveFacts {
  /** Nodes the wave stamped (its skipped nodes are not counted). */
  readonly released: number;
  readonly confirmed: number;
  readonly provisional: number;
  /** Failed, rejected, or reverted on their own. */
  readonly failed: number;
  /**
   * Not heard from within their confirmation window, and given their previous set back by the
   * coordinator (see expiredNodes): outstanding for the gate, not failures.
   */
  readonly expired: number;
}

export type Step =
  | { readonly kind: 'wait'; readonly why: string }
  | { readonly kind: 'release'; readonly wave: number }
  | { readonly kind: 'complete' }
  | { readonly kind: 'halt'; readonly reason: string };

/** How many of a wave's released nodes may fail before the rollout halts. */
export function failureBudget(plan: RecordedRolloutPlan, released: number): number {
  return 'count' in plan.failure_budget ? plan.failure_budget.count : Math.floor(plan.failure_budget.share * released);
}

/** How many of a wave's released nodes must confirm before its gate opens. */
export function confirmationsNeeded(plan: RecordedRolloutPlan, released: number): number {
  return Math.ceil(plan.confirm_share * released - 1e-9);
}

/**
 * Pure: what a running rollout does next, given what its released waves' nodes reported (`facts[w]`
 * for every released wave w) and the time. A failure budget exceeded in any released wave halts it;
 * otherwise the last released wave's gate (enough confirmed, and its bake time over) releases the
 * next wave, or completes the rollout after the last. Nodes not heard from are outstanding: they
 * hold the gate, they do not count as failures.
 */
export function decideStep(state: RolloutState, facts: readonly WaveFacts[], now: Date): Step {
  if (state.status !== 'running') return { kind: 'wait', why: `rollout is ${state.status}` };
  if (facts.length !== state.released) throw new Error(`facts for ${facts.length} wave(s), ${state.released} released`);
  for (let w = 0; w < facts.length; w++) {
    const f = facts[w];
    const budget = failureBudget(state.plan, f.released);
    if (f.failed > budget) {
      return {
        kind: 'halt',
        reason: `${waveName(state, w)}: ${f.failed} of ${f.released} node(s) failed, reverted or rejected the change (failure budget ${budget})`,
      };
    }
  }
  if (state.released === 0) return { kind: 'release', wave: 0 };
  const current = state.released - 1;
  const f = facts[current];
  const needed = confirmationsNeeded(state.plan, f.released);
  if (f.confirmed < needed) return { kind: 'wait', why: `${waveName(state, current)}: ${f.confirmed} of ${needed} confirmation(s) needed` };
  const bakedAt = Date.parse(state.releasedAt[current]) + state.plan.bake_seconds * 1000;
  if (now.getTime() < bakedAt) return { kind: 'wait', why: `${waveName(state, current)} bakes until ${new Date(bakedAt).toISOString()}` };
  if (state.released >= state.waves.length) return { kind: 'complete' };
  return { kind: 'release', wave: state.released };
}

/** A released node that has not confirmed the version the rollout gave it, as the expiry check needs it. */
export interface Unconfirmed {
  readonly node: string;
  /** Its confirmation window in seconds: the operator's, else its own set's `sync.confirm_within`; null when none applies. */
  readonly windowSeconds: number | null;
  /** When its wave was released. */
  readonly releasedAt: string;
  /** When it reported the version provisional (activated, window running), if it has. */
  readonly provisionalAt: string | null;
}

/**
 * Pure: which unconfirmed released nodes are past their window, and the earliest deadline still to
 * come (null when none). A node's window runs from its activation, which the coordinator knows only
 * from a `provisional` report; one never heard from at its version is given the window from its
 * wave's release. Past window + grace, an agent has reverted by itself (or never took the change),
 * whichever it was, so its previous set is what it runs. A node with no window never expires: it
 * stays outstanding, as before commit-confirmed.
 */
export function expiredNodes(candidates: readonly Unconfirmed[], now: Date, graceSeconds: number): { expired: string[]; next: number | null } {
  const expired: string[] = [];
  let next: number | null = null;
  for (const c of candidates) {
    if (c.windowSeconds === null) continue;
    const deadline = Date.parse(c.provisionalAt ?? c.releasedAt) + (c.windowSeconds + graceSeconds) * 1000;
    if (deadline <= now.getTime()) expired.push(c.node);
    else next = next === null ? deadline : Math.min(next, deadline);
  }
  return { expired: expired.sort(compare), next };
}

export type Control = 'pause' | 'resume' | 'promote' | 'abort';

/**
 * Pure: whether an operator's action applies to the rollout now, refused with a 409 saying why when
 * it does not. Promote releases the next wave whatever its gate says; abort halts and rolls back.
 */
export function checkControl(state: RolloutState, action: Control): void {
  const refuse = (why: string): never => {
    throw new DomainError('rollout_state', `rollout ${state.id} cannot be ${pastTense[action]}: ${why}`, { rollout: state.id, rollout_status: state.status });
  };
  if (!ACTIVE.has(state.status)) refuse(`it is ${state.status}`);
  if (action === 'pause' && state.status === 'paused') refuse('it is already paused');
  if (action === 'resume' && state.status !== 'paused') refuse('it is not paused');
  if (action === 'promote' && state.released >= state.waves.length) refuse('every wave is released');
}
const pastTense: Record<Control, string> = { pause: 'paused', resume: 'resumed', promote: 'promoted', abort: 'aborted' };

/** `canary` for a plan's first wave when it named one, else `wave N` (from 1). */
export function waveName(state: Pick<RolloutState, 'plan' | 'waves'>, wave: number): string {
  const hasCanary = state.plan.canary.length > 0 && state.waves[0]?.some((n) => state.plan.canary.includes(n));
  if (hasCanary) return wave === 0 ? 'canary' : `wave ${wave}`;
  return `wave ${wave + 1}`;
}

/** The nodes of one wave that may be released: those still at the version the plan saw. */
export function releasable(state: RolloutState, wave: number, headVersion: (node: string) => number): { release: RolloutTarget[]; skipped: string[] } {
  const release: RolloutTarget[] = [];
  const skipped: string[] = [];
  for (const node of state.waves[wave] ?? []) {
    const target = state.targets.get(node);
    if (target && headVersion(node) === target.from) release.push(target);
    else skipped.push(node);
  }
  return { release, skipped };
}

/**
 * The released nodes a halt gives their previous content back: those whose head is still the version
 * the rollout gave them (one rolled back or republished since is left as it is), with the version
 * to restore (0: the node had no set before the rollout, and gets an empty one).
 */
export function toRollBack(state: RolloutState, headVersion: (node: string) => number): { node: string; from: number }[] {
  const out: { node: string; from: number }[] = [];
  for (const [node, s] of [...state.stamped].sort(([a], [b]) => compare(a, b))) {
    if (headVersion(node) === s.version) out.push({ node, from: state.targets.get(node)?.from ?? 0 });
  }
  return out;
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
