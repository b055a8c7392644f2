import { existsSync } from 'node:fs';
import { setImmediate as turn } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { packBlobs, packObjects, writeLooseObjectsSync, type LooseObject } from './loose-objects.js';
import { PACK_FROM, writeObjectsSync } from './packfile.js';
import type { ThreadJob, WriteAnswer, WriteDone } from './object-write-worker.js';
import type { MirrorPublish } from '../domain/publish-group.js';
import { IdleStop } from '../../common/index.js';

const WORKER_FILE = fileURLToPath(new URL('./object-write-worker.js', import.meta.url));

/**
 * Objects written on the calling thread between two turns of its event loop, when there is no
 * writer thread (code run from its TypeScript sources): few, so that a publish arriving while the
 * mirror writes a large commit gets its turn soon (256 made it wait longer: bench/README.md).
 */
const WRITE_SLICE = 16;

/** A thread with no batch for this long is stopped: an idle coordinator does not keep its heap. */
const IDLE_MS = 30_000;

/**
 * Writes the mirror's objects on a thread of its own, and folds its commits there (`commit`).
 * Deflating and writing the 40,000 objects of a 10,000-node commit is long synchronous work; on the
 * coordinator's event loop it delayed every poll and publish answered meanwhile (bench:publish, one
 * node changed right after all nodes changed). The thread starts with the first batch, stops after
 * IDLE_MS without one, and keeps the process alive only while a batch is out; code run from its
 * TypeScript sources (no compiled worker beside it) writes on the calling thread, yielding between
 * slices, and folds there too (FoldHere).
 */
export class ObjectWriter {
  private worker: Worker | null = null;
  private nextId = 0;
  /** Jobs out, each with the thread it went to: a thread's exit fails its own jobs, not a newer thread's. */
  private readonly pending = new Map<number, { worker: Worker; resolve: (answer: WriteDone) => void; reject: (err: Error) => void }>();
  private readonly idle: IdleStop;
  /**
   * The commit a thread's tree is at, as its last commit's answer said, and which thread that was: an
   * answer of a thread since stopped says nothing of the one running now.
   */
  private threadTree: { readonly worker: Worker; readonly at: string | null } | undefined = undefined;

  constructor(
    readonly useThread = existsSync(WORKER_FILE),
    idleMs = IDLE_MS,
  ) {
    this.idle = new IdleStop(idleMs, () => {
      if (this.pending.size === 0) void this.close();
    });
  }

  async write(gitdir: string, objects: readonly LooseObject[]): Promise<void> {
    if (objects.length === 0) return;
    if (!this.useThread) return writeHere(gitdir, objects);
    const packed = packObjects(objects);
    await this.send({ kind: 'write', id: this.nextId++, gitdir, objects: packed }, [packed.bytes]);
  }

  /**
   * Folds a publish into its commit on the thread, on the tree at `base`, and writes the commit's
   * objects there unless `write` is false: hashing a large publish's objects took seconds of the
   * coordinator's event loop (bench/README.md) that polls and the next publish were waiting for. The
   * thread keeps its tree for the next publish; `rootOf` gives the content of the base's root tree
   * when it has another (its first commit, a restart after idling, a failed commit). Answers the
   * commit and the content of its root tree. Only with a thread.
   */
  async commit(
    gitdir: string,
    base: string | null,
    publish: MirrorPublish,
    blobs: ReadonlyMap<string, Uint8Array>,
    write: boolean,
    rootOf: () => Promise<Uint8Array>,
  ): Promise<{ readonly oid: string; readonly root: Uint8Array }> {
    if (!this.useThread) throw new Error('the mirror folds commits on a thread only from its compiled code');
    const known = this.threadTree;
    const kept = known !== undefined && known.worker === this.worker && known.at === base;
    const root = kept ? undefined : base === null ? new Uint8Array(0) : await rootOf();
    const packed = packBlobs(blobs);
    this.threadTree = undefined;
    const { answer, worker } = await this.send({ kind: 'commit', id: this.nextId++, gitdir, base, ...(root ? { root } : {}), publish, blobs: packed, write }, [
      packed.bytes,
    ]);
    if (!answer.commit) throw new Error('mirror object writer: a commit job answered without its commit');
    this.threadTree = { worker, at: answer.commit.oid };
    return answer.commit;
  }

  private async send(job: ThreadJob, transfer: ArrayBuffer[]): Promise<{ answer: WriteDone; worker: Worker }> {
    const worker = this.start();
    this.idle.cancel();
    const answer = await new Promise<WriteDone>((resolve, reject) => {
      this.pending.set(job.id, { worker, resolve, reject });
      // Held while a batch is out, so a command with nothing else to wait on does not exit before it is written.
      worker.ref();
      worker.postMessage(job, transfer);
    });
    return { answer, worker };
  }

  async close(): Promise<void> {
    this.idle.cancel();
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(WORKER_FILE);
    w.unref();
    w.on('message', (answer: WriteAnswer) => {
      const waiting = this.pending.get(answer.id);
      if (!waiting) return;
      this.pending.delete(answer.id);
      if (this.pending.size === 0) {
        w.unref();
        this.idle.arm();
      }
      if ('error' in answer) waiting.reject(new Error(`mirror object writer: ${answer.error}`));
      else waiting.resolve(answer);
    });
    // A thread that died fails every batch in flight; the next batch starts a fresh one.
    w.on('error', (err) => this.fail(w, err));
    w.on('exit', (code) => this.fail(w, new Error(`mirror object writer thread exited with code ${code}`)));
    this.worker = w;
    return w;
  }

  private fail(w: Worker, err: Error): void {
    if (this.worker === w) this.worker = null;
    for (const [id, waiting] of this.pending) {
      if (waiting.worker !== w) continue;
      this.pending.delete(id);
      waiting.reject(err);
    }
  }
}

async function writeHere(gitdir: string, objects: readonly LooseObject[]): Promise<void> {
  // A batch large enough for a pack is one file: written in one go.
  if (objects.length >= PACK_FROM) return writeObjectsSync(gitdir, objects);
  const dirs = new Set<string>();
  for (let i = 0; i < objects.length; i += WRITE_SLICE) {
    if (i > 0) await turn();
    writeLooseObjectsSync(gitdir, objects, i, Math.min(i + WRITE_SLICE, objects.length), dirs);
  }
}
