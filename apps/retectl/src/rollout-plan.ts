import { parseDuration, RolloutPlan, type RolloutPlanInput } from '#contracts';
import { placeText, selectNodes, type Place, type Rete, type SelectorKey } from '#rete';
import { RetectlError } from './errors.js';
import { plural } from './output.js';

/** The flags of `retectl publish` (and `plan`) that make it a rollout, as commander hands them over. */
export interface RolloutFlags {
  readonly canary?: string;
  readonly waves?: string;
  readonly bake?: string;
  readonly failureBudget?: string;
  readonly confirmShare?: string;
  readonly onHalt?: string;
  /** false with --no-rollout: every changed node at once, whatever the rete's rollout block says. */
  readonly rollout?: boolean;
}

const FIELD_FLAGS = {
  canary: '--canary',
  waves: '--waves',
  bake_seconds: '--bake',
  failure_budget: '--failure-budget',
  confirm_share: '--confirm-share',
  on_halt: '--on-halt',
} as const satisfies Record<keyof RolloutPlanInput, string>;

const usage = (message: string) => new RetectlError('usage', message);

/** `10%`, `0.1` or `10` (percent when above 1) as a share from 0 to 1. */
function share(flag: string, value: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)(%?)$/.exec(value.trim());
  if (!m) throw usage(`${flag} ${value}: expected a share such as 90% or 0.9`);
  const n = Number(m[1]);
  const s = m[2] === '%' || n > 1 ? n / 100 : n;
  if (s < 0 || s > 1) throw usage(`${flag} ${value}: a share is from 0% to 100%`);
  return s;
}

const SELECTOR_KEYS: Readonly<Record<string, SelectorKey>> = { tag: 'tags', group: 'groups', node: 'nodes' };

/**
 * The nodes a `--canary` selector names in the rete: `tag:a,b` (nodes carrying any of the tags),
 * `group:a,b` (their members), or node names (`node:a,b` or just `a,b`), picked as the rete's own
 * selectors pick them. An unknown name is an error.
 */
export function resolveCanary(rete: Pick<Rete, 'nodes' | 'groups'>, selector: string): string[] {
  const [kind, list] = selector.includes(':') ? (selector.split(/:(.*)/s, 2) as [string, string]) : ['node', selector];
  const key = SELECTOR_KEYS[kind];
  if (key === undefined) throw usage(`--canary ${selector}: expected tag:NAMES, group:NAMES or node names`);
  const names = list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (names.length === 0) throw usage(`--canary ${selector}: name at least one ${kind}`);
  const { picked, unknown } = selectNodes({ tagsOf: new Map(rete.nodes.map((n) => [n.name, n.tags])), groups: rete.groups }, { [key]: names });
  if (unknown.length > 0) throw usage(`--canary ${selector}: ${unknown[0].message}`);
  return picked;
}

/** The plan a publish carries, and where its fields came from. */
export interface ChosenPlan {
  readonly plan: RolloutPlanInput;
  /** Where the rete's rollout block is, when the plan starts from it. */
  readonly block?: Place;
  /** The flags that set a field, overriding the block's. */
  readonly flags: readonly string[];
}

/**
 * The rollout plan a publish uses: the rete's rollout block, each field a flag gives replacing the
 * block's; the flags alone without a block. Undefined for a publish all at once: no block and no
 * flag, or --no-rollout, which no other rollout flag may join.
 */
export function rolloutPlanOf(rete: Pick<Rete, 'nodes' | 'groups' | 'rollout'>, f: RolloutFlags): ChosenPlan | undefined {
  const flagged = flagPlan(rete, f);
  const flags = Object.keys(flagged).map((k) => FIELD_FLAGS[k as keyof RolloutPlanInput]);
  if (f.rollout === false) {
    if (flags.length > 0) throw usage(`--no-rollout publishes every changed node at once: it cannot go with ${flags.join(', ')}`);
    return undefined;
  }
  if (!rete.rollout) return flags.length > 0 ? { plan: flagged, flags } : undefined;
  return { plan: { ...rete.rollout.plan, ...flagged }, block: rete.rollout.place, flags };
}

/**
 * A publish that prunes cannot roll out in waves (the ledger refuses it): said before anything is sent,
 * with the way out when the plan is the rete's rather than the operator's flags.
 */
export function refusePruneInWaves(chosen: ChosenPlan | undefined, prune: boolean): void {
  if (!prune || !chosen) return;
  if (chosen.block && chosen.flags.length === 0) {
    throw usage(
      `--prune cannot roll out in waves, and the rete's rollout block at ${placeText(chosen.block)} makes this publish a rollout: add --no-rollout to publish (and prune) at once`,
    );
  }
  throw usage(`--prune cannot go with ${chosen.flags.join(', ')}: retire the nodes in a publish of their own, then roll out`);
}

/** The fields the flags set, each checked: only those given. */
function flagPlan(rete: Pick<Rete, 'nodes' | 'groups'>, f: RolloutFlags): RolloutPlanInput {
  const plan: { -readonly [K in keyof RolloutPlanInput]: RolloutPlanInput[K] } = {};
  if (f.canary !== undefined) plan.canary = resolveCanary(rete, f.canary);
  if (f.waves !== undefined) {
    const waves = f.waves.split(',').map((w) => Number(w.trim().replace(/%$/, '')));
    if (waves.some((w) => !Number.isInteger(w) || w < 1 || w > 100)) throw usage(`--waves ${f.waves}: expected cumulative percentages such as 10,50,100`);
    if (waves.some((w, i) => i > 0 && w <= waves[i - 1])) throw usage(`--waves ${f.waves}: the percentages must increase`);
    if (waves[waves.length - 1] !== 100) waves.push(100);
    plan.waves = waves;
  }
  if (f.bake !== undefined) {
    const seconds = parseDuration(f.bake);
    if (seconds === undefined) throw usage(`--bake ${f.bake}: expected a duration such as 90s, 10m or 1h`);
    plan.bake_seconds = seconds;
  }
  if (f.failureBudget !== undefined) {
    plan.failure_budget = /%$|\./.test(f.failureBudget)
      ? { share: share('--failure-budget', f.failureBudget) }
      : { count: integer('--failure-budget', f.failureBudget) };
  }
  if (f.confirmShare !== undefined) plan.confirm_share = share('--confirm-share', f.confirmShare);
  if (f.onHalt !== undefined) {
    if (f.onHalt !== 'rollback' && f.onHalt !== 'hold') throw usage(`--on-halt ${f.onHalt}: expected rollback or hold`);
    plan.on_halt = f.onHalt;
  }
  return plan;
}

/** How many canary nodes a line names before it counts the rest. */
const CANARY_SHOWN = 5;

/**
 * The plan in use as one line, the plan's defaults filled in, and where it came from:
 * `rollout plan: canary laptop, then waves 50%, 100%; bake 5m; failure budget 0 nodes; confirm 100%; on halt rollback (the rete's rollout block at rollout.yaml:2:3; --bake from the command line)`.
 * Without a plan: undefined, or the line saying the rete's block is set aside with --no-rollout.
 */
export function rolloutPlanLine(chosen: ChosenPlan | undefined, rete: Pick<Rete, 'rollout'>): string | undefined {
  if (!chosen)
    return rete.rollout
      ? `rollout plan: none, every changed node at once (--no-rollout sets aside the rete's rollout block at ${placeText(rete.rollout.place)})`
      : undefined;
  const p = RolloutPlan.parse(chosen.plan);
  const pct = (share: number) => `${Math.round(share * 10000) / 100}%`;
  const canary =
    p.canary.length === 0
      ? 'no canary'
      : `canary ${p.canary.slice(0, CANARY_SHOWN).join(', ')}${p.canary.length > CANARY_SHOWN ? ` and ${p.canary.length - CANARY_SHOWN} more` : ''}`;
  const budget = 'count' in p.failure_budget ? plural(p.failure_budget.count, 'node') : pct(p.failure_budget.share);
  const from = [
    ...(chosen.block ? [`the rete's rollout block at ${placeText(chosen.block)}`] : []),
    ...(chosen.flags.length > 0 ? [`${chosen.flags.join(', ')} from the command line`] : []),
  ];
  return `rollout plan: ${canary}, then waves ${p.waves.map((w) => `${w}%`).join(', ')}; bake ${durationText(p.bake_seconds)}; failure budget ${budget}; confirm ${pct(p.confirm_share)}; on halt ${p.on_halt} (${from.join('; ')})`;
}

/** Whole seconds as the rete writes a duration: `90s` is `1m30s`, `5400` is `1h30m`. */
function durationText(seconds: number): string {
  const parts: string[] = [];
  let rest = seconds;
  for (const [unit, size] of [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= size) parts.push(`${Math.floor(rest / size)}${unit}`);
    rest %= size;
  }
  return parts.join('') || '0s';
}

function integer(flag: string, value: string): number {
  if (!/^[0-9]{1,9}$/.test(value)) throw usage(`${flag} ${value}: expected a count such as 2, or a share such as 5%`);
  return Number(value);
}
