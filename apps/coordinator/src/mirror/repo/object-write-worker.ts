import { readlinkSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { LARGE_WORK, largeWorkBegun } from '#runtime';
import { parseTree } from '../domain/git-object.js';
import { blobsFrom, MirrorTree } from '../domain/mirror-tree.js';
import type { MirrorPublish } from '../domain/publish-group.js';
import { unpackBlobs, unpackObjects, type PackedBlobs, type PackedObjects } from './loose-objects.js';
import { writeObjectsSync } from './packfile.js';

/** One batch of objects to write into one repository; answered once every object is on disk. */
export interface WriteJob {
  readonly kind: 'write';
  readonly id: number;
  readonly gitdir: string;
  readonly objects: PackedObjects;
}

/**
 * One publish folded into its commit on the tree at `base` (the commit before it), and the commit's
 * objects written unless `write` is false (a replay of a commit the branch already has). `root`, the
 * content of the base commit's root tree, comes when the thread's tree is not at `base` (its first
 * commit, after idling, or after a failed one).
 */
export interface CommitJob {
  readonly kind: 'commit';
  readonly id: number;
  readonly gitdir: string;
  readonly base: string | null;
  readonly root?: Uint8Array;
  readonly publish: MirrorPublish;
  readonly blobs: PackedBlobs;
  readonly write: boolean;
}

export type ThreadJob = WriteJob | CommitJob;

/** A job done: a commit job's answer names its commit and gives its root tree's content. */
export interface WriteDone {
  readonly id: number;
  readonly commit?: { readonly oid: string; readonly root: Uint8Array };
}

export type WriteAnswer = WriteDone | { readonly id: number; readonly error: string };

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

/** The tree the last commit was folded on, kept for the next publish; dropped when a commit fails. */
let tree: MirrorTree | null = null;

function fold(job: CommitJob): { oid: string; root: Uint8Array; objects: number } {
  if (job.root) tree = job.base === null ? MirrorTree.empty() : MirrorTree.resume(job.base, parseTree(job.root));
  if (!tree || tree.commit !== job.base) throw new Error(`the thread's tree is at ${tree?.commit ?? 'none'}, not at ${job.base ?? 'the empty tree'}`);
  const at = tree;
  // Whatever fails below leaves the tree part-way through the publish: the next commit brings its root.
  tree = null;
  const { commit, objects, root } = at.apply(job.publish, blobsFrom(unpackBlobs(job.blobs), `the publish at ${job.publish.position} sent to the thread`));
  if (job.write) writeObjectsSync(job.gitdir, objects);
  tree = at;
  // A copy of its own, handed over: the content may sit in a buffer shared with other objects.
  return { oid: commit, root: new Uint8Array(root.content), objects: objects.length };
}

/**
 * This thread lives on for 30 s after its last job (ObjectWriter), holding the pages a large commit
 * grew its heap by. Each job is large work to the thread's own memory release (a module instance of
 * its own here): once no job has come for its quiet time after one of LARGE_WORK objects or more, one
 * memory-reducing collection gives them back, and a job under way holds it off.
 */
parentPort?.on('message', (job: ThreadJob) => {
  const over = largeWorkBegun();
  let objects = 0;
  try {
    if (job.kind === 'commit') {
      const { oid, root, objects: written } = fold(job);
      objects = written;
      parentPort!.postMessage({ id: job.id, commit: { oid, root } } satisfies WriteAnswer, [root.buffer as ArrayBuffer]);
    } else {
      const unpacked = unpackObjects(job.objects);
      objects = unpacked.length;
      writeObjectsSync(job.gitdir, unpacked);
      parentPort!.postMessage({ id: job.id } satisfies WriteAnswer);
    }
  } catch (err) {
    parentPort!.postMessage({ id: job.id, error: err instanceof Error ? err.message : String(err) } satisfies WriteAnswer);
  } finally {
    over(objects >= LARGE_WORK);
  }
});
