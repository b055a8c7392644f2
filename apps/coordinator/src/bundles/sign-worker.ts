import { parentPort } from 'node:worker_threads';
import type { KeyObject } from 'node:crypto';
import { signBundle } from '#bundle';

/** One batch of bundle payloads to sign with one key; answered with the JWS of each, in order. */
export interface SignJob {
  readonly id: number;
  readonly kid: string;
  readonly key: KeyObject;
  readonly payloads: readonly Uint8Array[];
}

export type SignAnswer = { readonly id: number; readonly jws: string[] } | { readonly id: number; readonly error: string };

parentPort?.on('message', (job: SignJob) => {
  void (async () => {
    try {
      const jws: string[] = [];
      for (const p of job.payloads) jws.push(await signBundle(p, { kid: job.kid, privateKey: job.key }));
      parentPort!.postMessage({ id: job.id, jws } satisfies SignAnswer);
    } catch (err) {
      parentPort!.postMessage({ id: job.id, error: err instanceof Error ? err.message : String(err) } satisfies SignAnswer);
    }
  })();
});
