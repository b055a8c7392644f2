import { parentPort } from 'node:worker_threads';
import { unpackObjects, writeLooseObjectsSync, type PackedObjects } from './loose-objects.js';

/** One batch of objects to write into one repository; answered once every object is on disk. */
export interface WriteJob {
  readonly id: number;
  readonly gitdir: string;
  readonly objects: PackedObjects;
}

export type WriteAnswer = { readonly id: number } | { readonly id: number; readonly error: string };

parentPort?.on('message', (job: WriteJob) => {
  try {
    writeLooseObjectsSync(job.gitdir, unpackObjects(job.objects));
    parentPort!.postMessage({ id: job.id } satisfies WriteAnswer);
  } catch (err) {
    parentPort!.postMessage({ id: job.id, error: err instanceof Error ? err.message : String(err) } satisfies WriteAnswer);
  }
});
