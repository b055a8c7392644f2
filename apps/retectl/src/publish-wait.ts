import { PublishDetail } from '#contracts';
import { formatCounts, waitVerdict, type PublishCounts, type WaitExit } from './publish-status.js';
import type { z } from 'zod';
import type { CoordinatorClient } from './client.js';

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
 * How the counts show while waiting, on stdout with the result they lead to: on a terminal one line
 * rewritten in place at each poll; otherwise (a log, a pipe) one line each time the counts change,
 * so a CI log shows progress without a line per second.
 */
export function countsReporter(stream: { isTTY?: boolean; write(text: string): unknown } = process.stdout): CountsReporter {
  let last: string | undefined;
  let drawn = false;
  return {
    update(counts, elapsedSeconds) {
      if (stream.isTTY) {
        stream.write(`\r\u001b[K${waitLine(counts, elapsedSeconds)}`);
        drawn = true;
        return;
      }
      const now = formatCounts(counts);
      if (now === last) return;
      last = now;
      stream.write(`${waitLine(counts, elapsedSeconds)}\n`);
    },
    done() {
      if (drawn) stream.write('\n');
      drawn = false;
    },
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
