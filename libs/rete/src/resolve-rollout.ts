import { parseDuration, parseFailureBudget, parseShare, parseWavePercent, type ReteErrorCode, type ReteRollout, type RolloutPlanInput } from '#contracts/files';
import type { Place } from './diagnostics.js';
import type { RolloutModel } from './model.js';
import type { Def } from './parse-file.js';
import { selectNodes, type Selectable } from './select-nodes.js';

export interface RolloutInput {
  readonly def: Def<ReteRollout>;
  readonly from: Selectable;
  /** False when a file failed to parse: a canary naming something in it cannot be told from a typo. */
  readonly refsCheckable: boolean;
  readonly error: (code: ReteErrorCode, place: Place, path: readonly PropertyKey[], message: string) => void;
}

/**
 * The rete's `rollout:` block as the plan a publish carries: the canary selector resolved to the
 * nodes it picks now, durations in seconds, shares from 0 to 1. Only the fields the block sets are
 * in it, so a publish can lay its flags over them and the plan's own defaults fill the rest.
 */
export function resolveRollout({ def, from, refsCheckable, error }: RolloutInput): RolloutModel {
  const r = def.value;
  const plan: { -readonly [K in keyof RolloutPlanInput]: RolloutPlanInput[K] } = {};
  if (r.canary) {
    const { picked, unknown } = selectNodes(from, r.canary);
    if (refsCheckable) {
      for (const u of unknown) {
        const p = [...def.path, 'canary', u.key, u.index];
        error(u.code, def.file.placeOf(p), p, u.message);
      }
    }
    plan.canary = picked;
  }
  // The schema has checked every value: what is left is only a change of unit.
  if (r.waves) plan.waves = r.waves.map((w) => parseWavePercent(w)!);
  if (r.bake !== undefined) plan.bake_seconds = parseDuration(r.bake)!;
  if (r.failure_budget !== undefined) plan.failure_budget = parseFailureBudget(r.failure_budget)!;
  if (r.confirm_share !== undefined) plan.confirm_share = parseShare(r.confirm_share)!;
  if (r.on_halt) plan.on_halt = r.on_halt;
  return { plan, place: def.place };
}
