import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { packObjects, writeLooseObjectsSync, type LooseObject } from './loose-objects.js';
import { PACK_FROM, writeObjectsSync } from './packfile.js';
import type { WriteAnswer, WriteJob } from './object-write-worker.js';
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
 * Writes the mirror's loose objects on a thread of its own. Deflating and writing the 40,000 objects
 * of a 10,000-node commit is long synchronous work; on the coordinator's event loop it delayed
 * every poll and publish answered meanwhile (bench:publish, one node changed right after all nodes
 * changed). The thread starts with the first batch, stops after IDLE_MS without one, and keeps the
 * process alive only while a batch is out; code run
 * from its TypeScript sources (no compiled worker beside it) writes on the calling thread, yielding
 * between slices.
 */
export class ObjectWriter {
  private worker: Worker | null = null;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  private readonly idle: IdleStop;

  constructor(
    private readonly useThread = existsSync(WORKER_FILE),
    idleMs = IDLE_MS,
  ) {
    this.idle = new IdleStop(idleMs, () => {
      if (this.pending.size === 0) void this.close();
    });
  }

  async write(gitdir: string, objects: readonly LooseObject[]): Promise<void> {
    if (objects.length === 0) return;
    if (!this.useThread) return writeHere(gitdir, objects);
    const worker = this.start();
    this.idle.cancel();
    const id = this.nextId++;
    const packed = packObjects(objects);
    await new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Held while a batch is out, so a command with nothing else to wait on does not exit before it is written.
      worker.ref();
      worker.postMessage({ id, gitdir, objects: packed } satisfies WriteJob, [packed.bytes]);
    });
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
      else waiting.resolve();
    });
    // A thread that died fails every batch in flight; the next batch starts a fresh one.
    w.on('error', (err) => this.fail(w, err));
    w.on('exit', (code) => this.fail(w, new Error(`mirror object writer thread exited with code ${code}`)));
    this.worker = w;
    return w;
  }

  private fail(w: Worker, err: Error): void {
    if (this.worker === w) this.worker = null;
    for (const [, waiting] of this.pending) waiting.reject(err);
    this.pending.clear();
  }
}

async function writeHere(gitdir: string, objects: readonly LooseObject[]): Promise<void> {
  // A batch large enough for a pack is one file: written in one go.
  if (objects.length >= PACK_FROM) return writeObjectsSync(gitdir, objects);
  const dirs = new Set<string>();
  for (let i = 0; i < objects.length; i += WRITE_SLICE) {
    if (i > 0) await new Promise((resolve) => setImmediate(resolve));
    writeLooseObjectsSync(gitdir, objects, i, Math.min(i + WRITE_SLICE, objects.length), dirs);
  }
}
