import { PublishDetail } from '#contracts';
import { waitVerdict, type WaitExit } from './publish-status.js';
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

/** Polls the publish until no node is outstanding or the timeout passes; the verdict is waitVerdict's. */
export async function waitForPublish(client: CoordinatorClient, publishId: string, timeoutSeconds: number): Promise<WaitResult> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  for (;;) {
    const { body } = await client.call('GET', `/v1/publishes/${encodeURIComponent(publishId)}`, PublishDetail);
    const verdict = waitVerdict(body.counts, Date.now() >= deadline);
    if (verdict.done) return { detail: body, exit: verdict.exit, timedOut: verdict.timedOut };
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
  }
}
