import { existsSync } from 'node:fs';
import { KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { signBundle, type SigningKey } from '#bundle';
import type { SignAnswer, SignJob } from './sign-worker.js';
import { IdleStop } from '../common/idle-stop.js';

/**
 * Below this many bundles the hand-off to threads (and, the first time, starting them) costs about
 * what it saves: measured on 2 cores, a 1,000-node publish was no faster with threads.
 */
const POOL_THRESHOLD = 2000;

const WORKER_FILE = fileURLToPath(new URL('./sign-worker.js', import.meta.url));

/** Threads with no batch for this long are stopped: an idle coordinator does not keep their heaps. */
const IDLE_MS = 30_000;

/**
 * Signs many bundle payloads on every core: the batch is split into one slice per worker thread, each
 * signs its slice with the same key, and the answers come back in the order asked. Ed25519 is
 * deterministic, so the bytes are the ones a single thread would give. Small batches, and code run
 * from its TypeScript sources (no compiled worker beside it), sign on the calling thread.
 */
export class SigningPool {
  private workers: Worker[] | null = null;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (jws: string[]) => void; reject: (err: Error) => void }>();
  private readonly idle: IdleStop;

  constructor(
    private readonly size = Math.max(1, availableParallelism()),
    private readonly threshold = POOL_THRESHOLD,
    idleMs = IDLE_MS,
  ) {
    this.idle = new IdleStop(idleMs, () => {
      if (this.pending.size === 0) void this.close();
    });
  }

  async signAll(payloads: readonly Uint8Array[], key: SigningKey): Promise<string[]> {
    const workers = payloads.length >= this.threshold && this.size > 1 ? this.start() : null;
    if (!workers) {
      const out: string[] = [];
      for (const p of payloads) out.push(await signBundle(p, key));
      return out;
    }
    this.idle.cancel();
    const privateKey = key.privateKey instanceof KeyObject ? key.privateKey : KeyObject.from(key.privateKey as Parameters<typeof KeyObject.from>[0]);
    const slice = Math.ceil(payloads.length / workers.length);
    try {
      const parts = await Promise.all(workers.map((w, i) => this.ask(w, key.kid, privateKey, payloads.slice(i * slice, (i + 1) * slice))));
      return parts.flat();
    } finally {
      if (this.pending.size === 0) this.idle.arm();
    }
  }

  /** Stops the threads; a later batch starts them again. */
  async close(): Promise<void> {
    this.idle.cancel();
    const workers = this.workers;
    this.workers = null;
    if (workers) await Promise.all(workers.map((w) => w.terminate()));
  }

  private start(): Worker[] | null {
    if (this.workers) return this.workers;
    if (!existsSync(WORKER_FILE)) return null;
    this.workers = Array.from({ length: this.size }, () => {
      const w = new Worker(WORKER_FILE);
      w.unref();
      w.on('message', (answer: SignAnswer) => {
        const waiting = this.pending.get(answer.id);
        if (!waiting) return;
        this.pending.delete(answer.id);
        if ('error' in answer) waiting.reject(new Error(`signing thread failed: ${answer.error}`));
        else waiting.resolve(answer.jws);
      });
      w.on('error', (err) => this.fail(err));
      return w;
    });
    return this.workers;
  }

  private ask(worker: Worker, kid: string, key: KeyObject, payloads: readonly Uint8Array[]): Promise<string[]> {
    if (payloads.length === 0) return Promise.resolve([]);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, kid, key, payloads } satisfies SignJob);
    });
  }

  /** A thread that died fails every batch in flight; the next batch starts fresh threads. */
  private fail(err: Error): void {
    for (const [, waiting] of this.pending) waiting.reject(err);
    this.pending.clear();
    void this.close();
  }
}

/**
 * The coordinator's one pool: every projection signs through it. FLORETE_SIGNING_THREADS sets how
 * many threads (default: one per core; 1 signs on the main thread).
 */
const threads = Number(process.env.FLORETE_SIGNING_THREADS ?? '');
export const signingPool = new SigningPool(Number.isInteger(threads) && threads >= 1 ? threads : undefined);
