import type { ReportRequest } from '#contracts';
import type { z } from 'zod';

type Report = Pick<z.infer<typeof ReportRequest>, 'result' | 'active_version' | 'target_version' | 'error' | 'confirmation'>;

/**
 * Pure: the version outcome a report records, or null when it names none. A failure belongs to the
 * version that was tried; without one named there is nothing to pin it on (a replayed or foreign
 * bundle), and the version still running keeps its applied outcome. `up_to_date` confirms what
 * runs as applied, but never overwrites an outcome already recorded for that version, except to
 * say that a `provisional` one (applied under a confirmation window) is now confirmed, or that a
 * `rejected` one is over: a node refuses the version it runs only when that number came with another
 * set (`version_conflict`, after a restore that lost its version), and says `up_to_date` at it only
 * once it is given that version's set again.
 *
 * `overwrites`: true, any other result recorded for the version is replaced; `rejected`, only a
 * rejection; false, none.
 */
export function reportedOutcome(r: Report): {
  version: number;
  result: 'applied' | 'provisional' | 'failed' | 'rejected' | 'reverted';
  error: string | null;
  overwrites: boolean | 'rejected';
} | null {
  const reached = r.result === 'applied' || r.result === 'up_to_date';
  const version = reached ? r.active_version : (r.target_version ?? 0);
  if (version <= 0) return null;
  if (reached && r.confirmation === 'provisional') return { version, result: 'provisional', error: null, overwrites: r.result === 'applied' };
  const confirms = reached && r.confirmation === 'confirmed';
  return {
    version,
    result: r.result === 'up_to_date' ? 'applied' : r.result,
    error: r.error ?? null,
    overwrites: r.result !== 'up_to_date' || confirms ? true : 'rejected',
  };
}

/**
 * Pure: whether this report is the node confirming its retirement, the last thing it is allowed to
 * do: its head is retired and it runs that very version.
 */
export function confirmsRetirement(head: { version: number; retired: boolean } | undefined, r: Pick<Report, 'result' | 'active_version'>): boolean {
  return !!head?.retired && (r.result === 'applied' || r.result === 'up_to_date') && r.active_version === head.version;
}
