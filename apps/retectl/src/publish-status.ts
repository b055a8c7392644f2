import type { z } from 'zod';
import type { PublishDetail as PublishDetailSchema } from '#contracts';
import { formatTable } from './status.js';

type PublishDetail = z.infer<typeof PublishDetailSchema>;

/** The publish detail's per-node rows and counts, exactly as the coordinator's contract defines them. */
export type PublishCounts = PublishDetail['counts'];
export type PublishNodeRow = PublishDetail['nodes'][number];

/** `retectl publish --wait` exits: 0 every node reached the publish (applied or superseded), 1 one failed or reverted, 4 timed out with some outstanding. */
export type WaitExit = 0 | 1 | 4;
export type WaitVerdict = { readonly done: false } | { readonly done: true; readonly exit: WaitExit; readonly timedOut: boolean };

/**
 * Whether waiting for a publish is over, and how it ends. Waiting lasts while any node is outstanding
 * (a silent node is never a failure) and until the deadline. A failure outranks a timeout: it needs
 * the operator whether or not the rest has reported.
 */
export function waitVerdict(counts: PublishCounts, deadlinePassed: boolean): WaitVerdict {
  if (counts.outstanding > 0 && !deadlinePassed) return { done: false };
  const timedOut = counts.outstanding > 0;
  // A node that went back on its own did not keep the publish: it needs the operator as a failure does.
  return { done: true, exit: counts.failed + counts.reverted > 0 ? 1 : timedOut ? 4 : 0, timedOut };
}

/** `2 applied, 1 outstanding, 1 failed, 0 reverted, 0 superseded` */
export function formatCounts(c: PublishCounts): string {
  return `${c.applied} applied, ${c.outstanding} outstanding, ${c.failed} failed, ${c.reverted} reverted, ${c.superseded} superseded`;
}

/** One row per node the publish touched; a reason is folded onto one line (a restart command's output may span many). */
export function formatPublishNodes(nodes: readonly PublishNodeRow[], age: (since: string | null) => string): string {
  return formatTable(
    ['NODE', 'VERSION', 'STATUS', 'LAST CONTACT', 'REASON'],
    nodes.map((n) => [
      n.node,
      `${n.from} -> ${n.to}`,
      n.ineligible ? `${n.status} (ineligible)` : n.status,
      n.last_contact === null ? 'never' : `${age(n.last_contact)} ago`,
      n.reason === null ? '-' : n.reason.replace(/\s+/g, ' ').trim(),
    ]),
  );
}
