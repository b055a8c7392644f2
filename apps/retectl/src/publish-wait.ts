import { PublishDetail } from '#contracts';
import { formatCounts, waitVerdict, type PublishCounts, type WaitExit } from './publish-status.js';
import type { z } from 'zod';
import type { CoordinatorClient } from './client.js';
import { liveLine, type LineStream } from './live-line.js';

/** `--wait` without a value. */
export const DEFAULT_WAIT_SECONDS = 300;
const POLL_MS = 1000;

export interface WaitResult {
  readonly detail: z.infer<typeof PublishDetail>;
  readonly exit: WaitExit;
  readonly timedOut: boolean;
}

/** `waiting 12s: 2 applied, 1 outstanding, 0 failed, 0 superseded` */
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

/** Polls the publish until no node is outstanding or the timeout passes; the verdict is waitVerdict's. */
export async function waitForPublish(client: CoordinatorClient, publishId: string, timeoutSeconds: number, reporter?: CountsReporter): Promise<WaitResult> {
  const started = Date.now();
  const deadline = started + timeoutSeconds * 1000;
  for (;;) {
    const { body } = await client.call('GET', `/v1/publishes/${encodeURIComponent(publishId)}`, PublishDetail);
    reporter?.update(body.counts, (Date.now() - started) / 1000);
    const verdict = waitVerdict(body.counts, Date.now() >= deadline);
    if (verdict.done) {
      reporter?.done();
      return { detail: body, exit: verdict.exit, timedOut: verdict.timedOut };
    }
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
  }
}
