/**
 * The delay before retry number `attempt` (0 for the first retry): `baseMs` doubled per attempt, never
 * above `maxMs`. Every retry loop of the project (the agent's polls after failures, restarts of a
 * crashed vertex, pushes of the audit mirror) waits this long, with its own jitter on top when many
 * machines might retry in step.
 */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number): number {
  if (!Number.isFinite(attempt) || attempt < 0) attempt = 0;
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.floor(attempt), 30));
}

/** A delay drawn from the upper half of `ceilingMs` (`random` in [0, 1)), so a fleet does not retry in step. */
export function upperHalfJitter(ceilingMs: number, random: number): number {
  return Math.floor(ceilingMs / 2 + (random * ceilingMs) / 2);
}
