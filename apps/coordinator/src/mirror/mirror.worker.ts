import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { Logger } from 'pino';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config.js';
import { DB, type Db } from '../db/index.js';
import { LOG } from '../core/index.js';
import { MirrorError } from './mirror-error.js';
import { MirrorPusher } from './mirror-push.js';
import { MirrorSync } from './mirror-sync.js';
import { AuditRepo } from './repo/audit-repo.js';
import { databaseCheckpoints } from './store/checkpoint.js';
import { withMirrorLock } from './store/writer-lock.js';

export type WorkerState = 'off' | 'starting' | 'writing' | 'standby' | 'diverged' | 'failing';

/**
 * Follows the ledger into the audit repository after publishes commit, never inside them: on a
 * timer and whenever a committed append is published on the event bus (FollowLedger). Runs never overlap; a kick during a run queues one more.
 */
@Injectable()
export class MirrorWorker implements OnApplicationBootstrap, OnModuleDestroy {
  state: WorkerState = 'off';
  lastError: string | null = null;
  commits = 0;
  pusher: MirrorPusher | null = null;
  private sync: MirrorSync | null = null;
  private repo: AuditRepo | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private readonly onTick = () => this.kick();
  /**
   * A commit on the branch and checkpointed is the mirror writing again: an earlier run's failure is
   * cleared now, not when this run ends. Health reads the checkpoint from the database, and would
   * otherwise show the mirror caught up beside the error of a run before it.
   */
  private readonly onCommit = () => {
    this.lastError = null;
    this.commits++;
  };
  private readonly stopping = new AbortController();

  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    @Inject(LOG) private readonly log: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { mirror } = this.config;
    if (!mirror.enabled) return;
    this.state = 'starting';
    const repo = await AuditRepo.open(mirror.gitdir);
    this.repo = repo;
    await repo.refreshInfoRefs();
    if (mirror.push) this.pusher = new MirrorPusher(mirror.gitdir, mirror.push, this.log);
    this.sync = new MirrorSync(repo, databaseCheckpoints, { onCommit: this.onCommit, signal: this.stopping.signal });
    this.timer = setInterval(this.onTick, mirror.intervalMs);
    this.timer.unref();
    if (this.pusher && (await repo.readRef())) this.pusher.request();
    this.kick();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    // A run stops before its next commit, and a commit being written is abandoned with its thread: its
    // objects are written whole or not at all and the branch has not moved, so the next start redoes
    // it. Waiting for it instead held a shutdown for as long as writing the largest commits takes.
    this.stopping.abort();
    await this.repo?.close();
    await this.idle();
    await this.pusher?.close();
  }

  /** Resolves when no run is in flight or queued. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  kick(): void {
    if (!this.sync || this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.runOnce().finally(() => {
      this.running = null;
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
  }

  private async runOnce(): Promise<void> {
    const before = this.state;
    try {
      const result = await withMirrorLock(this.db, (q) => {
        // Writing from the moment this replica holds the writer's lock, not only once a run ends: a
        // long run would otherwise show its previous state, `standby` after a turn the other replica had.
        this.state = 'writing';
        return this.sync!.run(q);
      });
      this.state = result === null ? 'standby' : 'writing';
      this.lastError = null;
      if (result?.commits) this.pusher?.request();
    } catch (err) {
      if (this.stopped) return;
      this.state = err instanceof MirrorError && err.code === 'mirror_diverged' ? 'diverged' : 'failing';
      const message = err instanceof Error ? err.message : String(err);
      // Logged when the failure changes, not on every poll.
      if (this.state !== before || message !== this.lastError) this.log.error({ err: message, state: this.state }, 'git mirror stopped writing');
      this.lastError = message;
    }
  }
}
