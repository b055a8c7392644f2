import { PublishCountsResponse, PublishDetail, PublishNodesPage } from '#contracts';
import { formatCounts, waitVerdict, type PublishCounts, type PublishNodeRow, type WaitExit } from './publish-status.js';
import type { z } from 'zod';
import type { CoordinatorClient } from './client.js';
import { RetectlError } from './errors.js';
import { liveLine, type LineStream } from './live-line.js';

const POLL_MS = 1000;

export interface WaitResult {
  readonly counts: PublishCounts;
  readonly exit: WaitExit;
  readonly timedOut: boolean;
}

/** `waiting 12s: 2 applied, 1 outstanding, 0 failed, 0 reverted, 0 superseded` */
export function waitLine(counts: PublishCounts, elapsedSeconds: number): string {
  return `waiting ${Math.floor(elapsedSeconds)}s: ${formatCounts(counts)}`;
}

export interface CountsReporter {
  update(counts: PublishCounts, elapsedSeconds: number): void;
  done(): void;
}

/**
 * How the counts show while waiting, on stdout with the result they lead to: one line rewritten in
 * place on a terminal, a line per change of the counts otherwise (liveLine).
 */
export function countsReporter(stream: LineStream = process.stdout): CountsReporter {
  const line = liveLine(stream);
  return {
    update: (counts, elapsedSeconds) => line.update(waitLine(counts, elapsedSeconds), formatCounts(counts)),
    done: () => line.done(),
  };
}

/** A coordinator without the route answers a bare 404; an unknown publish is a 404 that says so. */
function routeMissing(e: unknown): boolean {
  return e instanceof RetectlError && e.code === 'not_found' && e.problem?.code !== 'unknown_publish';
}

/**
 * The publish's counts only (GET /v1/publishes/{id}/counts): each poll costs the same for 10 nodes
 * or 10,000. A coordinator older than that route is asked for the whole detail, as before.
 */
export async function publishCounts(client: CoordinatorClient, publishId: string): Promise<PublishCounts> {
  const id = encodeURIComponent(publishId);
  try {
    return (await client.call('GET', `/v1/publishes/${id}/counts`, PublishCountsResponse)).body.counts;
  } catch (e) {
    if (!routeMissing(e)) throw e;
    return (await client.call('GET', `/v1/publishes/${id}`, PublishDetail)).body.counts;
  }
}

/**
 * Up to `limit` of the publish's nodes with one of these statuses, in name order, a page at a time
 * from the coordinator (GET /v1/publishes/{id}/nodes), with how many there are in all; from the
 * whole detail on a coordinator without that route.
 */
export async function publishNodes(
  client: CoordinatorClient,
  publishId: string,
  statuses: readonly PublishNodeRow['status'][] | 'all',
  limit: number,
): Promise<{ rows: PublishNodeRow[]; total: number }> {
  const id = encodeURIComponent(publishId);
  const rows: PublishNodeRow[] = [];
  let total = 0;
  try {
    for (const status of statuses === 'all' ? [undefined] : statuses) {
      let cursor: string | null = null;
      let first = true;
      while (first || (cursor !== null && rows.length < limit)) {
        const q = new URLSearchParams({ limit: String(Math.max(1, Math.min(1000, limit - rows.length))) });
        if (status) q.set('status', status);
        if (cursor) q.set('cursor', cursor);
        const { body }: { body: z.infer<typeof PublishNodesPage> } = await client.call('GET', `/v1/publishes/${id}/nodes?${q}`, PublishNodesPage);
        if (first) total += status ? body.counts[status] : body.total;
        first = false;
        rows.push(...body.items.slice(0, Math.max(0, limit - rows.length)));
        cursor = body.next_cursor;
      }
    }
    return { rows, total };
  } catch (e) {
    if (!routeMissing(e)) throw e;
    const { body } = await client.call('GET', `/v1/publishes/${id}`, PublishDetail);
    const all = body.nodes.filter((n) => statuses === 'all' || statuses.includes(n.status));
    return { rows: all.slice(0, limit), total: all.length };
  }
}

/** Polls the publish's counts until no node is outstanding or the timeout passes; the verdict is waitVerdict's. */
export async function waitForPublish(client: CoordinatorClient, publishId: string, timeoutSeconds: number, reporter?: CountsReporter): Promise<WaitResult> {
  const started = Date.now();
  const deadline = started + timeoutSeconds * 1000;
  for (;;) {
    const counts = await publishCounts(client, publishId);
    reporter?.update(counts, (Date.now() - started) / 1000);
    const verdict = waitVerdict(counts, Date.now() >= deadline);
    if (verdict.done) {
      reporter?.done();
      return { counts, exit: verdict.exit, timedOut: verdict.timedOut };
    }
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
  }
}
