/**
 * The contracts' constants and checks that need no schema: what a command line parses before it knows
 * which command runs. Importing `#contracts/plain` builds no zod schema, so a process that needs only
 * these (retectl's argument parsers, its start-up) does not pay for the ones it never uses. The
 * schemas use the same definitions: `#contracts` exports them all.
 */

/** A node, rete or mesh name: a DNS label of 1-63 lowercase letters, digits or "-", not starting or ending with "-". */
export const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };
const DURATION = /^([0-9]{1,7}[smhd])+$/;
/** Seconds of a duration such as `90s`, `5m`, `1h30m`, `2d`; undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  for (const m of text.matchAll(/([0-9]+)([smhd])/g)) total += Number(m[1]) * UNIT_SECONDS[m[2]];
  return total;
}

/** The shortest and longest operator confirmation window a publish may ask for: 10 s, a week. */
export const MIN_CONFIRM_WITHIN = 10;
export const MAX_CONFIRM_WITHIN = 7 * 24 * 3600;

/** The roles an API token can hold. */
export const ROLES = ['admin', 'publisher', 'reader'] as const;

/**
 * Heads are compared in this many buckets (GET /v1/heads/buckets): a tree that differs from the
 * ledger in a few nodes asks only for the heads of the buckets whose digests differ, about 40 heads
 * each at 10,000 nodes. Plain: a compile files its nodes' heads in the same buckets.
 */
export const HEAD_BUCKETS = 256;
