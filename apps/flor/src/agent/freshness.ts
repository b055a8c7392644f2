import type { AgentIdentity, AgentStatus, HeldCheckpoint } from '#contracts';

/**
 * Since when the agent is stale: the newest checkpoint it verified (or, before any, its enrolment)
 * plus max_staleness, once that moment has passed; null before it. Measured from the time the
 * coordinator signed into the checkpoint, so answers replayed later do not look fresh.
 */
export function staleSince(held: Pick<HeldCheckpoint, 'time'> | null, enrolledAt: string, maxStalenessSeconds: number, now: Date): string | null {
  const from = Date.parse(held ? held.time : enrolledAt);
  const since = from + maxStalenessSeconds * 1000;
  return now.getTime() >= since ? new Date(since).toISOString() : null;
}

/** The status's freshness block: null when not enrolled. */
export function freshnessOf(identity: AgentIdentity | null, held: HeldCheckpoint | null, maxStalenessSeconds: number, now: Date): AgentStatus['freshness'] {
  if (!identity) return null;
  const mine = held && held.enrolled_at === identity.enrolled_at ? held : null;
  return {
    checkpoint: mine ? { position: mine.position, time: mine.time, origin: mine.origin } : null,
    max_staleness_seconds: maxStalenessSeconds,
    stale_since: staleSince(mine, identity.enrolled_at, maxStalenessSeconds, now),
  };
}
