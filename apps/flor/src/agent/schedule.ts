import { AgentJson } from '#contracts';
import { backoffDelay, upperHalfJitter } from '#runtime';

export interface PollTiming {
  readonly pollIntervalMs: number;
  readonly splayMs: number;
  /** Watch the bundle between polls (agent.json sync.watch; on unless the rete turned it off). */
  readonly watch: boolean;
}

/** The next delay after a pass: the interval plus jitter within splay, so a fleet does not poll in step. */
export function nextPollDelay(timing: PollTiming, random: number): number {
  return timing.pollIntervalMs + Math.floor(random * timing.splayMs);
}

/**
 * After `failures` failed contacts in a row: the poll interval doubled per failure up to a cap, with
 * jitter over the upper half so a restarted coordinator is not hit by the whole fleet at once. A
 * Retry-After from the coordinator is a floor.
 */
export function pollBackoffDelay(timing: PollTiming, failures: number, maxMs: number, random: number, retryAfterMs?: number): number {
  const ceiling = backoffDelay(failures - 1, timing.pollIntervalMs, maxMs);
  return Math.max(upperHalfJitter(ceiling, random), retryAfterMs ?? 0);
}

/** A retired node's agent polls no more often than this, whatever its interval or backoff says. */
export const RETIRED_POLL_MS = 60 * 60 * 1000;

/** The next delay while the node is retired: an hour, or the interval when that is longer, plus splay. */
export function retiredPollDelay(timing: PollTiming, random: number): number {
  return Math.max(RETIRED_POLL_MS, timing.pollIntervalMs) + Math.floor(random * timing.splayMs);
}

/**
 * The delay before the first pass of a daemon: at once, except for a retired node, whose restarted
 * agent waits until an hour after its last poll so that restarts do not poll more often.
 */
export function firstPollDelay(retired: boolean, lastPollMs: number | null, nowMs: number): number {
  if (!retired || lastPollMs === null) return 0;
  return Math.min(RETIRED_POLL_MS, Math.max(0, lastPollMs + RETIRED_POLL_MS - nowMs));
}

/** The timing from the active agent.json, or the local default when no set (or no agent.json) is active. */
export function timingFrom(agentJson: string | null, defaultIntervalSeconds: number): PollTiming {
  if (agentJson !== null) {
    try {
      const parsed = AgentJson.safeParse(JSON.parse(agentJson));
      if (parsed.success)
        return { pollIntervalMs: parsed.data.sync.poll_interval * 1000, splayMs: parsed.data.sync.splay * 1000, watch: parsed.data.sync.watch !== false };
    } catch {
      /* not JSON: fall back */
    }
  }
  return { pollIntervalMs: defaultIntervalSeconds * 1000, splayMs: 0, watch: true };
}

/**
 * The wait a watch asks for: the poll interval, the longest time between two checks (the coordinator
 * may grant less, and the agent then watches again sooner).
 */
export function watchWaitSeconds(timing: PollTiming): number {
  return Math.max(1, Math.ceil(timing.pollIntervalMs / 1000));
}

/** The first retry of a watch that failed waits up to this long; each further failure doubles it. */
export const WATCH_RETRY_MS = 2000;

/**
 * After `failures` failed watches in a row (a replica stopped or killed drops its watches): a retry
 * drawn from the whole of a window that starts at a few seconds and doubles per failure, up to the
 * poll interval and the cap. Full jitter rather than the poll's upper half, because a fleet whose
 * replica just went away reconnects all at once and is best spread from the first second. A
 * Retry-After from the coordinator is a floor.
 */
export function watchRetryDelay(timing: PollTiming, failures: number, maxMs: number, random: number, retryAfterMs?: number): number {
  const ceiling = Math.min(backoffDelay(failures - 1, WATCH_RETRY_MS, maxMs), timing.pollIntervalMs);
  return Math.max(Math.floor(random * ceiling), retryAfterMs ?? 0);
}
