interface Waiter<V> {
  resolve(value: V | undefined): void;
  reject(err: unknown): void;
}

/**
 * Reads by key, batched: every key asked for while the event loop runs one turn is read together, in
 * chunks of at most `max` keys, one `readMany` call each. A change that wakes thousands of held
 * watches asks for all their rows in the same turn, and a query per key cost more in round trips,
 * socket writes and result parsing than the reads themselves.
 *
 * - Each asker gets the value `readMany` returned for its own key, or undefined when it returned none.
 * - A key asked for twice in one turn is read once, and both askers get that value.
 * - A read starts after every ask it answers (at the end of the turn): its answer is at least as new
 *   as a read of its own, started when asked, would have been.
 * - A chunk that fails rejects its own askers, and no other.
 * - At most `concurrency` chunks are read at once, the rest wait their turn in order: the first
 *   chunk's askers get on with their work (signing, answering) while the next is read, rather than
 *   every chunk taking a pooled connection and all finishing together.
 */
export class BatchLoader<K, V> {
  private pending = new Map<K, Waiter<V>[]>();
  private scheduled = false;
  private readonly queue: { keys: K[]; waiters: Map<K, Waiter<V>[]> }[] = [];
  private running = 0;
  /** readMany calls made, and keys they were asked for: how well asks are being batched (tests, diagnostics). */
  readonly stats = { reads: 0, keys: 0 };

  constructor(
    private readonly readMany: (keys: readonly K[]) => Promise<ReadonlyMap<K, V>>,
    private readonly max: number,
    private readonly concurrency = 2,
  ) {
    if (!Number.isInteger(max) || max < 1) throw new Error(`a batch holds at least one key, not ${max}`);
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`at least one batch is read at a time, not ${concurrency}`);
  }

  load(key: K): Promise<V | undefined> {
    return new Promise<V | undefined>((resolve, reject) => {
      const waiters = this.pending.get(key);
      if (waiters) waiters.push({ resolve, reject });
      else this.pending.set(key, [{ resolve, reject }]);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.dispatch());
      }
    });
  }

  private dispatch(): void {
    this.scheduled = false;
    const waiters = this.pending;
    this.pending = new Map();
    const keys = [...waiters.keys()];
    for (let i = 0; i < keys.length; i += this.max) this.queue.push({ keys: keys.slice(i, i + this.max), waiters });
    this.next();
  }

  private next(): void {
    while (this.running < this.concurrency && this.queue.length > 0) {
      const { keys, waiters } = this.queue.shift()!;
      this.running++;
      this.stats.reads++;
      this.stats.keys += keys.length;
      Promise.resolve()
        .then(() => this.readMany(keys))
        .then(
          (values) => {
            for (const key of keys) for (const w of waiters.get(key)!) w.resolve(values.get(key));
          },
          (err: unknown) => {
            for (const key of keys) for (const w of waiters.get(key)!) w.reject(err);
          },
        )
        .finally(() => {
          this.running--;
          this.next();
        });
    }
  }
}
