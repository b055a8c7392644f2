import { ATTENTION_LIMIT, CONTACT_AGE_BUCKETS, TIMELINE_POINTS, type AttentionReason, type FleetOverview, type PublishCounts } from '#contracts';
import type { z } from 'zod';
import { convergence, lifecycleState, publishNodeStatus, type NodeRecord, type Outcome } from '../fleet/index.js';

/* Pure: the fleet overview and a publish's convergence, counted from node records. */

type Overview = z.infer<typeof FleetOverview>;
type Attention = Overview['attention'][number];

const URGENCY: readonly AttentionReason[] = ['failed', 'ineligible', 'stale_checkpoint', 'behind'];

/**
 * Counts by lifecycle and convergence, agent versions, last-contact ages, and the nodes that need
 * someone: failed, ineligible, a stale checkpoint, or behind (enrolled, in contact, yet not at its
 * head). A node never in contact is not "behind": it may be a laptop that is off, and the age
 * histogram shows it.
 */
export function fleetOverview(records: Iterable<NodeRecord>, staleCheckpoint: ReadonlySet<string>, now: Date): Overview {
  const lifecycle = { unmanaged: 0, enrolled: 0, retired: 0 };
  const conv = { converged: 0, outstanding: 0, failed: 0, unpublished: 0 };
  const agents = new Map<string | null, number>();
  const ages = CONTACT_AGE_BUCKETS.map((b) => ({ label: b.label, upto_seconds: b.upto_seconds as number | null, nodes: 0 }));
  const attentionCounts = { failed: 0, ineligible: 0, stale_checkpoint: 0, behind: 0 };
  const attention: Attention[] = [];
  let total = 0;
  let never = 0;
  for (const r of records) {
    total++;
    const state = lifecycleState(r);
    lifecycle[state]++;
    const c = convergence(r);
    conv[c ?? 'unpublished']++;
    if (state === 'enrolled') agents.set(r.status?.agent_version ?? null, (agents.get(r.status?.agent_version ?? null) ?? 0) + 1);
    const contact = r.status?.last_contact ? new Date(r.status.last_contact) : null;
    const age = contact ? Math.max(0, Math.floor((now.getTime() - contact.getTime()) / 1000)) : null;
    if (age === null) never++;
    else ages[ages.findIndex((b) => b.upto_seconds === null || age < b.upto_seconds)].nodes++;
    if (state === 'retired') continue;
    const reasons = URGENCY.filter((why) =>
      why === 'failed'
        ? c === 'failed'
        : why === 'ineligible'
          ? (r.status?.ineligible ?? false)
          : why === 'stale_checkpoint'
            ? staleCheckpoint.has(r.node)
            : c === 'outstanding' && state === 'enrolled' && contact !== null,
    );
    if (reasons.length === 0) continue;
    for (const why of reasons) attentionCounts[why]++;
    attention.push({
      node: r.node,
      reasons,
      version: r.head?.version ?? null,
      applied_version: r.appliedVersion,
      last_contact_age_seconds: age,
      last_error: c === 'failed' ? (r.status?.last_error ?? null) : null,
    });
  }
  const rank = (a: Attention) => URGENCY.indexOf(a.reasons[0]);
  attention.sort((a, b) => rank(a) - rank(b) || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  return {
    total,
    lifecycle,
    convergence: conv,
    agent_versions: [...agents]
      .map(([version, nodes]) => ({ version, nodes }))
      .sort((a, b) => b.nodes - a.nodes || String(a.version).localeCompare(String(b.version))),
    contact_age: ages,
    never_contacted: never,
    attention_counts: attentionCounts,
    attention_total: attention.length,
    attention: attention.slice(0, ATTENTION_LIMIT),
  };
}

export interface PublishNodeFacts {
  readonly change: { readonly node: string; readonly from: number; readonly to: number };
  readonly appliedVersion: number | null;
  readonly outcomes: readonly Outcome[];
  readonly ineligible: boolean;
  readonly lastContact: Date | null;
  /** When the node reported its result for `change.to`, if it did. */
  readonly reportedAt: Date | null;
}

/** Each node's status in a publish (publishNodeStatus) and the counts over them. */
export function publishStatuses(facts: readonly PublishNodeFacts[]) {
  const counts: PublishCounts = { applied: 0, outstanding: 0, failed: 0, reverted: 0, superseded: 0 };
  const rows = facts.map((f) => {
    const { status, reason } = publishNodeStatus(f.change.to, f);
    counts[status]++;
    return { ...f, status, reason };
  });
  return { counts, rows };
}

/**
 * The publish's convergence against time since it was recorded: cumulative applied, failed and
 * reverted at up to TIMELINE_POINTS evenly spaced moments from the publish to now, each node counted
 * at the time it reported. A node superseded or applied without a report of its own for this
 * version counts as applied at its last contact, or now.
 */
export function publishTimeline(rows: readonly (PublishNodeFacts & { status: string })[], recordedAt: Date, now: Date) {
  const span = Math.max(1, Math.ceil((now.getTime() - recordedAt.getTime()) / 1000));
  const events: { at: number; kind: 'applied' | 'failed' | 'reverted' }[] = [];
  for (const r of rows) {
    if (r.status === 'outstanding') continue;
    const kind = r.status === 'failed' || r.status === 'reverted' ? r.status : 'applied';
    const when = r.reportedAt ?? r.lastContact ?? now;
    events.push({ at: Math.min(span, Math.max(0, Math.ceil((when.getTime() - recordedAt.getTime()) / 1000))), kind });
  }
  events.sort((a, b) => a.at - b.at);
  const steps = Math.min(TIMELINE_POINTS - 1, span);
  const points = [];
  const acc = { applied: 0, failed: 0, reverted: 0 };
  let i = 0;
  for (let k = 0; k <= steps; k++) {
    const seconds = Math.round((span * k) / steps);
    while (i < events.length && events[i].at <= seconds) acc[events[i++].kind]++;
    points.push({ seconds, ...acc });
  }
  return points;
}
