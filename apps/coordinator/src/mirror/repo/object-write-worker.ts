import { readlinkSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { unpackObjects, type PackedObjects } from './loose-objects.js';
import { writeObjectsSync } from './packfile.js';

/** One batch of objects to write into one repository; answered once every object is on disk. */
export interface WriteJob {
  readonly id: number;
  readonly gitdir: string;
  readonly objects: PackedObjects;
}

export type WriteAnswer = { readonly id: number } | { readonly id: number; readonly error: string };

/**
 * The mirror follows the ledger and may lag it: this thread runs below normal priority (nice 10), so
 * on a busy machine its deflating and writing yields most of a core to the publishes and polls it
 * follows. Not the lowest (nice 19): under sustained load that left it almost none of a core
 * (bench/README.md), and the mirror fell behind for as long as the load lasted. On Linux a thread's priority is its own, set by
 * its thread id (/proc/thread-self names it); elsewhere the thread keeps the process's priority.
 */
function lowerOwnPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, constants.priority.PRIORITY_BELOW_NORMAL);
  } catch {
    // No /proc, or not allowed: the thread runs at normal priority.
  }
}

if (parentPort) lowerOwnPriority();

parentPort?.on('message', (job: WriteJob) => {
  try {
    writeObjectsSync(job.gitdir, unpackObjects(job.objects));
    parentPort!.postMessage({ id: job.id } satisfies WriteAnswer);
  } catch (err) {
    parentPort!.postMessage({ id: job.id, error: err instanceof Error ? err.message : String(err) } satisfies WriteAnswer);
  }
});
