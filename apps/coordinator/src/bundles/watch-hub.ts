import type { Change } from '../db/index.js';

/** One poll held open until its node's head changes or its wait runs out. */
export interface HeldWatch {
  readonly node: string;
  readonly credentialId: string;
  /** The ETag the node holds, which was current when the watch was held. */
  readonly etag: string;
  /** When the wait runs out, on the hub's clock (ms). */
  readonly deadline: number;
  /** Something under it changed: answer it the full way again (a 200, a refusal, or held again). */
  wake(): void;
  /** The wait ran out with nothing changed: a 304. */
  expire(): void;
  /** The replica is stopping: a 503 with Retry-After, so the agent reconnects elsewhere. */
  drop(): void;
}

/** The current ETags (null: no head) of some nodes, in one read: how a `*` change is narrowed to the nodes it moved. */
export type HeadsReader = (nodes: readonly string[]) => Promise<ReadonlyMap<string, string | null>>;

export interface WatchHubOptions {
  /** The most watches held at once; beyond it hold() refuses. */
  readonly limit: number;
  /** The expiry's resolution: a watch ends at most this late. */
  readonly tickMs: number;
}

interface Entry {
  readonly watch: HeldWatch;
  readonly bucket: number;
}

/**
 * Every watch this replica holds, by node and by expiry. A held watch costs an entry in two maps and
 * nothing else: no timer of its own (one tick, while any is held, ends those whose deadline passed, in
 * buckets of tickMs) and no database work until the change feed says its node, or its credential,
 * changed. Waking and expiring take the entry out first, so the callback may hold the request again.
 *
 * The clock and the tick are the caller's (start/stop), so the logic runs in tests without timers.
 */
export class WatchHub {
  private readonly byNode = new Map<string, Set<Entry>>();
  private readonly buckets = new Map<number, Set<Entry>>();
  private readonly entries = new Map<HeldWatch, Entry>();
  /** The bucket every entry at or before has been expired. */
  private swept: number;
  private closed = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly options: WatchHubOptions,
    private readonly now: () => number,
    private readonly readHeads?: HeadsReader,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {
    this.swept = Math.floor(now() / options.tickMs);
  }

  get size(): number {
    return this.entries.size;
  }

  get limit(): number {
    return this.options.limit;
  }

  get closing(): boolean {
    return this.closed;
  }

  /** Whether one more watch may be held: false beyond the limit and once closing. */
  hasRoom(): boolean {
    return !this.closed && this.entries.size < this.options.limit;
  }

  /** Holds `watch`; false when there is no room (see hasRoom), and the caller answers instead. */
  hold(watch: HeldWatch): boolean {
    if (!this.hasRoom()) return false;
    // A deadline already passed or within this tick still waits for the next sweep: never before it.
    const bucket = Math.max(Math.ceil(watch.deadline / this.options.tickMs), this.swept + 1);
    const entry = { watch, bucket };
    this.entries.set(watch, entry);
    let forNode = this.byNode.get(watch.node);
    if (!forNode) this.byNode.set(watch.node, (forNode = new Set()));
    forNode.add(entry);
    let inBucket = this.buckets.get(bucket);
    if (!inBucket) this.buckets.set(bucket, (inBucket = new Set()));
    inBucket.add(entry);
    return true;
  }

  /** Forgets a watch whose client went away; nothing is answered. */
  release(watch: HeldWatch): boolean {
    const entry = this.entries.get(watch);
    if (!entry) return false;
    this.remove(entry);
    return true;
  }

  private remove(entry: Entry): void {
    this.entries.delete(entry.watch);
    const forNode = this.byNode.get(entry.watch.node);
    forNode?.delete(entry);
    if (forNode?.size === 0) this.byNode.delete(entry.watch.node);
    const inBucket = this.buckets.get(entry.bucket);
    inBucket?.delete(entry);
    if (inBucket?.size === 0) this.buckets.delete(entry.bucket);
  }

  private wake(entries: Iterable<Entry>): void {
    for (const entry of [...entries]) {
      if (!this.entries.has(entry.watch)) continue;
      this.remove(entry);
      this.call(() => entry.watch.wake());
    }
  }

  private call(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.onError(err);
    }
  }

  /** Wakes the watches whose node is one of `nodes`. */
  wakeNodes(nodes: Iterable<string>): void {
    for (const node of nodes) {
      const forNode = this.byNode.get(node);
      if (forNode) this.wake(forNode);
    }
  }

  /** Wakes every watch: used when what changed is not known (the feed was re-established, or stopped being trusted). */
  wakeAll(): void {
    this.wake(this.entries.values());
  }

  /**
   * What the change feed says, applied to the held watches. A change of some heads wakes those nodes'
   * watches; a change of some credentials wakes the watches made with them; `*` of heads is narrowed
   * to the nodes whose ETag moved with one read of the held nodes' heads; anything wider wakes all.
   */
  apply(change: Change): void {
    if (change.kind === 'checkpoint') return;
    if (change.kind === 'reset') return this.wakeAll();
    if (change.kind === 'credentials') {
      if (change.keys === '*') return this.wakeAll();
      const ids = new Set(change.keys);
      return this.wake([...this.entries.values()].filter((e) => ids.has(e.watch.credentialId)));
    }
    if (change.keys !== '*') return this.wakeNodes(change.keys);
    if (!this.readHeads || this.byNode.size === 0) return this.wakeAll();
    const held = [...this.entries.values()];
    this.readHeads([...this.byNode.keys()]).then(
      (heads) => this.wake(held.filter((e) => heads.get(e.watch.node) !== e.watch.etag)),
      (err) => {
        this.onError(err);
        this.wake(held);
      },
    );
  }

  /** Ends, with a 304, every watch whose deadline is at or before `now`. */
  expireDue(now: number = this.now()): void {
    const upTo = Math.floor(now / this.options.tickMs);
    if (this.entries.size === 0) {
      this.swept = Math.max(this.swept, upTo);
      return;
    }
    for (let b = this.swept + 1; b <= upTo; b++) {
      const inBucket = this.buckets.get(b);
      if (!inBucket) continue;
      for (const entry of [...inBucket]) {
        this.remove(entry);
        this.call(() => entry.watch.expire());
      }
    }
    this.swept = Math.max(this.swept, upTo);
  }

  /** Runs the expiry every tickMs until stop(); unref'd, so it keeps no process alive. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.expireDue(), this.options.tickMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Stops holding: every held watch is dropped (503) and hold() refuses from now on. */
  close(): void {
    this.closed = true;
    for (const entry of [...this.entries.values()]) {
      this.remove(entry);
      this.call(() => entry.watch.drop());
    }
    this.stop();
  }
}
