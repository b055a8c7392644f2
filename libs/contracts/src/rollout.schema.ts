import { z } from 'zod';
import { NodeName, Position, Timestamp } from './primitives.schema.js';

/** How many waves a rollout may have after its canary: enough for any sane plan, few enough to list. */
export const MAX_WAVES = 20;
/** The longest bake time a wave may ask for: a week. */
export const MAX_BAKE_SECONDS = 7 * 24 * 3600;

const Share = z.number().min(0).max(1);

/**
 * How many nodes of a wave may fail, revert or reject the change before the rollout halts: a count,
 * or a share of the wave's nodes. The default is none.
 */
export const FailureBudget = z.union([z.strictObject({ count: z.number().int().nonnegative() }), z.strictObject({ share: Share })]);
export type FailureBudget = z.infer<typeof FailureBudget>;

/**
 * A rollout plan, as a publish carries it. The changed nodes go out in waves: first the canary (the
 * changed nodes among those named; retectl resolves a selector of the rete to these names), then the
 * remaining nodes in waves whose cumulative shares `waves` gives in percent (`[10, 50, 100]`: 10 %,
 * then up to 50 %, then the rest). Each wave must have `confirm_share` of its nodes confirmed and
 * `bake_seconds` behind it before the next is released; more failures than `failure_budget` halt the
 * rollout, and `on_halt` says whether the released nodes then get their previous content back.
 */
export const RolloutPlan = z.strictObject({
  canary: z.array(NodeName).max(100_000).default([]),
  waves: z
    .array(z.number().int().min(1).max(100))
    .min(1)
    .max(MAX_WAVES)
    .default([100])
    .refine((w) => w.every((p, i) => i === 0 || p > w[i - 1]), 'wave shares must increase')
    .refine((w) => w[w.length - 1] === 100, 'the last wave must reach 100 (percent of the remaining nodes)'),
  bake_seconds: z.number().int().min(0).max(MAX_BAKE_SECONDS).default(0),
  failure_budget: FailureBudget.default({ count: 0 }),
  confirm_share: Share.default(1),
  on_halt: z.enum(['rollback', 'hold']).default('rollback'),
});
export type RolloutPlan = z.infer<typeof RolloutPlan>;
export type RolloutPlanInput = z.input<typeof RolloutPlan>;

export const RolloutStatus = z.enum(['running', 'paused', 'halted', 'aborted', 'completed', 'superseded']);
export type RolloutStatus = z.infer<typeof RolloutStatus>;
/** A rollout that still releases waves or may be resumed: a publish touching its nodes must supersede it. */
export const ACTIVE_ROLLOUT_STATUSES: readonly RolloutStatus[] = ['running', 'paused'];

export const RolloutId = z.string().regex(/^[0-9a-f-]{8,36}$/, 'a rollout id (a UUID or its first 8 characters or more)');

export const WaveCounts = z.object({
  nodes: z.number().int().nonnegative(),
  /** Released with the wave: the others had been changed by something else before it and were left alone. */
  released: z.number().int().nonnegative(),
  confirmed: z.number().int().nonnegative(),
  /** Applied, waiting for their confirmation window to close or their health checks to pass. */
  provisional: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  /** Released but not heard from for their new version: neither confirmed nor failed. */
  outstanding: z.number().int().nonnegative(),
  /**
   * Not confirmed within their confirmation window, and given their previous set back by the
   * coordinator: outstanding for the gate, counted apart. 0 from a coordinator that predates it.
   */
  expired: z.number().int().nonnegative().default(0),
});
export type WaveCounts = z.infer<typeof WaveCounts>;

export const RolloutWave = z.object({
  index: z.number().int().nonnegative(),
  /** `canary` for the first wave when the plan named one, else `wave N`. */
  name: z.string(),
  released_at: Timestamp.nullable(),
  /** When the wave's bake time is over (released_at + bake_seconds), once released. */
  bakes_until: Timestamp.nullable(),
  counts: WaveCounts,
});

export const RolloutTimelineEntry = z.object({
  position: Position,
  type: z.string(),
  actor: z.string(),
  recorded_at: Timestamp,
  wave: z.number().int().nonnegative().optional(),
  reason: z.string().optional(),
  publish_id: z.string().optional(),
  /** How many nodes the event names: those given their previous set back (`rollout_nodes_expired`). */
  nodes: z.number().int().nonnegative().optional(),
});

export const RolloutSummary = z.object({
  id: z.string(),
  publish_id: z.string(),
  message: z.string(),
  actor: z.string(),
  status: RolloutStatus,
  reason: z.string().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
  nodes: z.number().int().nonnegative(),
  waves: z.number().int().positive(),
  /** Waves released so far (the canary counts as one). */
  released: z.number().int().nonnegative(),
});
export type RolloutSummary = z.infer<typeof RolloutSummary>;

export const RolloutView = RolloutSummary.extend({
  plan: RolloutPlan,
  wave_list: z.array(RolloutWave),
  timeline: z.array(RolloutTimelineEntry),
});
export type RolloutView = z.infer<typeof RolloutView>;

export const RolloutListResponse = z.object({ rollouts: z.array(RolloutSummary) });
export const RolloutActionRequest = z.strictObject({ message: z.string().max(4096).optional() });
export const RolloutAction = z.enum(['pause', 'resume', 'promote', 'abort']);
export type RolloutAction = z.infer<typeof RolloutAction>;

/** What a publish with a rollout plan answers besides the publish itself: the rollout and its first wave. */
export const PublishRollout = z.object({
  id: z.string(),
  waves: z.array(z.number().int().nonnegative()),
  released: z.number().int().nonnegative(),
});
export type PublishRollout = z.infer<typeof PublishRollout>;
