/**
 * What the rollout pages derive from the API's answers: which operator actions apply, a wave's
 * stacked bar, the gate the current wave waits at, the timeline's wording, and which rollout a
 * publish belongs to. Pure (no DOM, no preact): unit-tested on its own.
 */
import { duration, localTime, percent } from './format.js';
import type { RolloutAction, RolloutStatus, RolloutSummary, RolloutTimelineEntry, RolloutView, RolloutWave, WaveCounts } from './types.js';

export const ROLLOUT_STATUSES: readonly RolloutStatus[] = ['running', 'paused', 'halted', 'aborted', 'completed', 'superseded'];

/** Running or paused: it may still release waves, so its page keeps following it and offers actions. */
export function isActive(status: RolloutStatus): boolean {
  return status === 'running' || status === 'paused';
}

/**
 * The actions the coordinator would accept now, in the order the page offers them (it refuses the
 * others with a 409): pause a running rollout, resume a paused one, promote while a wave is still
 * unreleased, abort while active.
 */
export function actionsFor(r: Pick<RolloutSummary, 'status' | 'released' | 'waves'>): RolloutAction[] {
  if (!isActive(r.status)) return [];
  const out: RolloutAction[] = [r.status === 'running' ? 'pause' : 'resume'];
  if (r.released < r.waves) out.push('promote');
  out.push('abort');
  return out;
}

/**
 * The reason worth showing beside the status: why it paused, halted, was aborted or superseded. A
 * running rollout shows none: the coordinator keeps the last reason given (a pause's message stays
 * after a resume that gave none), and the timeline already has it.
 */
export function statusReason(r: Pick<RolloutSummary, 'status' | 'reason'>): string | null {
  return r.status === 'running' ? null : r.reason;
}

/** Whether a rollout's reason reads as a failure (halted or aborted) rather than an operator's note. */
export function badReason(status: RolloutStatus): boolean {
  return status === 'halted' || status === 'aborted';
}

/**
 * The wave the rollout is at: the last one released. Null before any is released and once the
 * rollout completed (no wave is "current" then).
 */
export function currentWave(r: Pick<RolloutSummary, 'status' | 'released'>): number | null {
  if (r.released === 0 || r.status === 'completed') return null;
  return r.released - 1;
}

export type SegmentKind = 'confirmed' | 'provisional' | 'outstanding' | 'expired' | 'failed' | 'skipped' | 'unreleased';
export interface Segment {
  readonly kind: SegmentKind;
  readonly count: number;
  readonly label: string;
}

/**
 * One wave's nodes as a stacked bar, empty segments left out. A wave not yet released is all
 * "not released"; in a released one, the nodes it did not stamp had been changed by something
 * else since the plan and were left alone ("skipped").
 */
export function segments(w: Pick<RolloutWave, 'released_at' | 'counts'>): Segment[] {
  const c: WaveCounts = w.counts;
  const rest = Math.max(0, c.nodes - c.released);
  const all: Segment[] = [
    { kind: 'confirmed', count: c.confirmed, label: `${c.confirmed} confirmed` },
    { kind: 'provisional', count: c.provisional, label: `${c.provisional} provisional` },
    { kind: 'outstanding', count: c.outstanding, label: `${c.outstanding} outstanding` },
    { kind: 'expired', count: c.expired, label: `${c.expired} unconfirmed, given their previous sets` },
    { kind: 'failed', count: c.failed, label: `${c.failed} failed` },
    w.released_at === null ? { kind: 'unreleased', count: rest, label: `${rest} not released` } : { kind: 'skipped', count: rest, label: `${rest} skipped` },
  ];
  return all.filter((s) => s.count > 0);
}

/**
 * What the current wave's gate waits for before the next wave goes out, worked out as the
 * coordinator's driver does (enough of its released nodes confirmed, then its bake time over), or
 * why nothing moves. Null for a rollout that is over.
 */
export function gateText(v: RolloutView, now: number): string | null {
  if (!isActive(v.status)) return null;
  if (v.status === 'paused') return 'Paused: no wave is released until it is resumed or promoted.';
  const at = currentWave(v);
  if (at === null) return 'Waiting for the first wave to be released.';
  const w = v.wave_list[at];
  const needed = Math.ceil(v.plan.confirm_share * w.counts.released - 1e-9);
  const next = at + 1 < v.wave_list.length ? `${v.wave_list[at + 1].name} (${v.wave_list[at + 1].counts.nodes} node(s))` : null;
  const then = next ? `before ${next} is released` : 'before the rollout completes';
  if (w.counts.confirmed < needed) return `${w.name}: ${w.counts.confirmed} of ${needed} confirmation(s) needed ${then}.`;
  if (w.bakes_until && Date.parse(w.bakes_until) > now) return `${w.name}: confirmed; baking until ${localTime(w.bakes_until)} ${then}.`;
  return `${w.name}: its gate is open; ${next ? `${next} is released` : 'the rollout completes'} on the coordinator's next tick.`;
}

/** The plan as an operator reads it. */
export function planFacts(v: Pick<RolloutView, 'plan'>): { canary: string; waves: string; bake: string; budget: string; confirm: string; onHalt: string } {
  const p = v.plan;
  const shown = p.canary.slice(0, 20);
  return {
    canary: p.canary.length === 0 ? 'none' : `${shown.join(', ')}${p.canary.length > shown.length ? ` and ${p.canary.length - shown.length} more` : ''}`,
    waves: `${p.waves.map((w) => `${w} %`).join(', ')} of the ${p.canary.length > 0 ? 'nodes after the canary' : 'changed nodes'} (cumulative)`,
    bake: p.bake_seconds > 0 ? `${duration(p.bake_seconds)} after each wave's release` : 'none',
    budget: 'count' in p.failure_budget ? `${p.failure_budget.count} failed node(s) a wave` : `${percent(p.failure_budget.share)} of a wave's released nodes`,
    confirm: `${percent(p.confirm_share)} of a wave's released nodes`,
    onHalt: p.on_halt === 'rollback' ? 'roll the released nodes back to their previous sets' : 'hold: released nodes keep the change',
  };
}

const EVENT_WORDS: Record<string, string> = {
  rollout_planned: 'planned',
  rollout_paused: 'paused',
  rollout_resumed: 'resumed',
  rollout_halted: 'halted',
  rollout_aborted: 'aborted',
  rollout_completed: 'completed',
  rollout_superseded: 'superseded',
  rollout_nodes_expired: 'unconfirmed nodes given their previous sets',
};

/** A timeline entry's headline: "released canary", "paused", or the raw type for one this console does not know. */
export function eventText(e: Pick<RolloutTimelineEntry, 'type' | 'wave'>, waves: readonly Pick<RolloutWave, 'name'>[]): string {
  if (e.type === 'rollout_wave_released') return `released ${e.wave !== undefined ? (waves[e.wave]?.name ?? `wave index ${e.wave}`) : 'a wave'}`;
  return EVENT_WORDS[e.type] ?? e.type;
}

/**
 * The rollout a publish's message names, as the coordinator writes it: a wave's release ends in
 * "[rollout 1a2b3c4d: canary of 3]", a halt's or abort's rollback starts "rollout 1a2b3c4d aborted,", and the rollback of nodes past their
 * confirmation window "rollout 1a2b3c4d unconfirmed,".
 * Only a candidate: a message is free text, so the caller checks the rollout really lists the publish.
 */
export function rolloutNamedIn(message: string): string | null {
  const wave = /\[rollout ([0-9a-f]{8}): [^\]]* of \d+\]$/.exec(message);
  if (wave) return wave[1];
  const back = /^rollout ([0-9a-f]{8}) (?:aborted|halted|unconfirmed), released nodes back to their previous sets: /.exec(message);
  return back ? back[1] : null;
}

/** Whether the rollout released (or rolled back) with this publish: its own first publish, a wave's, or its rollback's. */
export function rolloutHasPublish(v: Pick<RolloutView, 'publish_id' | 'timeline'>, publishId: string): boolean {
  return v.publish_id === publishId || v.timeline.some((e) => e.publish_id === publishId);
}

/** The wave a publish released, for the link from the publish page ("canary of 3"), or null for a rollback. */
export function waveOfPublish(v: Pick<RolloutView, 'timeline' | 'wave_list' | 'waves'>, publishId: string): string | null {
  const e = v.timeline.find((t) => t.type === 'rollout_wave_released' && t.publish_id === publishId);
  return e && e.wave !== undefined ? `${v.wave_list[e.wave]?.name ?? `wave index ${e.wave}`} of ${v.waves}` : null;
}
