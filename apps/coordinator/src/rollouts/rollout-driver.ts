import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config.js';
import { LOG } from '../core/index.js';
import { DB, type Db } from '../db/index.js';
import { LedgerWriter, decideStep, expiredNodes, loadWaveFacts, type RecordedRolloutPlan, type RolloutState } from '../ledger/index.js';
import { agentJsonBodies, runningRollouts, unconfirmedReleased, type UnconfirmedRow } from './rollouts.repository.js';

/** Reports arriving within this long of one another make one nudged tick. */
const NUDGE_COALESCE_MS = 20;
/** The expiry check runs at most this often (besides at a deadline it saw coming): reports nudge ticks far more often. */
const EXPIRY_EVERY_MS = 1000;

/** The actor of what the driver records: a release, a completion or a halt that a gate decided. */
export const DRIVER_ACTOR = 'rollout-driver';

/**
 * Moves running rollouts on: every rolloutTickMs, on every replica, it reads the running rollouts
 * and their released waves' reports and, where a gate opened or a budget was exceeded, asks the
 * ledger writer for the step. The writer takes the ledger lock and decides the step again from the
 * ledger itself, so the replica that comes second finds the wave released and appends nothing: no
 * wave is released twice, whichever replicas run, stop or die between two ticks. All state is in
 * the ledger; a driver keeps none.
 */
@Injectable()
export class RolloutDriver implements OnModuleInit, OnApplicationShutdown {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private nudged: NodeJS.Timeout | null = null;
  /** A nudge that came while a tick ran: one more tick follows it. */
  private again = false;
  private bakeTimer: NodeJS.Timeout | null = null;
  private bakeAt = 0;
  /** When the expiry check last ran, and whether a deadline it saw coming is due now. */
  private expiryAt = 0;
  private expiryDue = false;
  /** Each agent.json digest's confirmation window (content-addressed: a digest's never changes). */
  private readonly windows = new Map<string, number | null>();

  constructor(
    private readonly writer: LedgerWriter,
    @Inject(DB) private readonly db: Db,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    @Inject(LOG) private readonly log: Logger,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.tick(), this.config.rolloutTickMs);
    this.timer.unref();
  }

  /**
   * A node's outcome was recorded on this replica: look at the gates now (the reports of one
   * NUDGE_COALESCE_MS make one tick), so a gate opens within the release's own time, not up to a
   * tick later. Without a running rollout that tick is one indexed read; whether one runs is not
   * kept between ticks, since another replica may have started one since.
   */
  nudge(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.nudged ??= setTimeout(() => {
      this.nudged = null;
      void this.tick();
    }, NUDGE_COALESCE_MS);
  }

  /** A tick at `at` (ms since the epoch), if it comes before the next timed one; the earliest asked for wins. */
  private lookAt(at: number): void {
    if (this.stopped || (this.bakeTimer && this.bakeAt <= at) || at - Date.now() >= this.config.rolloutTickMs) return;
    if (this.bakeTimer) clearTimeout(this.bakeTimer);
    this.bakeAt = at;
    this.bakeTimer = setTimeout(
      () => {
        this.bakeTimer = null;
        this.expiryDue = true;
        this.nudge();
      },
      Math.max(0, at - Date.now()) + 5,
    );
    this.bakeTimer.unref();
  }

  /** One tick at a time: a slow one is not overlapped by the next. */
  tick(): Promise<void> {
    if (this.running || this.stopped) return this.running ?? Promise.resolve();
    this.running = this.once()
      .catch((err: Error) => this.log.warn({ err: err.message }, 'rollout driver tick failed; trying again at the next'))
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.nudge();
        }
      });
    return this.running;
  }

  private async once(): Promise<void> {
    const now = new Date();
    if (this.expiryDue || now.getTime() - this.expiryAt >= EXPIRY_EVERY_MS) {
      this.expiryDue = false;
      this.expiryAt = now.getTime();
      await this.expire(now);
    }
    for (const r of await runningRollouts(this.db.kysely)) {
      if (this.stopped) return;
      // A pre-check from the read models: the writer's lock is taken only when a step is due.
      const facts = await loadWaveFacts(this.db.kysely, r.id, r.released);
      const state = {
        status: 'running',
        plan: r.plan as unknown as RecordedRolloutPlan,
        waves: r.wave_sizes.map(() => []),
        released: r.released,
        releasedAt: r.released_at,
      } as unknown as RolloutState;
      const step = decideStep(state, facts, now);
      if (step.kind === 'wait') {
        // A gate that waits only for its bake time opens at a known moment: look then, not at the next tick after it.
        const bakedAt = r.released > 0 ? Date.parse(r.released_at[r.released - 1]) + state.plan.bake_seconds * 1000 : 0;
        if (bakedAt > now.getTime()) this.lookAt(bakedAt);
        continue;
      }
      const result = await this.writer.write({ actor: DRIVER_ACTOR }, { type: 'rollout_step', rollout: r.id, action: 'step', now });
      this.log.info(
        {
          rollout: r.id,
          step: step.kind,
          ...(step.kind === 'release' ? { wave: step.wave } : {}),
          ...(step.kind === 'halt' ? { reason: step.reason } : {}),
          changed: result.changed.length,
          position: result.position,
        },
        'rollout step',
      );
    }
  }

  /**
   * Commit-confirmed, seen from the coordinator: a released node that has not confirmed its version
   * within its window (and the grace after it) has gone back to its previous set by itself, or never
   * took the change; the ledger gives it that set back as a new version, so the two agree. Its window
   * is the operator's (publish --confirm-within) or its set's own sync.confirm_within; a node with
   * neither waits, outstanding, as before. The writer checks again under the lock.
   */
  private async expire(now: Date): Promise<void> {
    const rows = await unconfirmedReleased(this.db.kysely, now);
    if (rows.length === 0) return;
    await this.learnWindows(rows);
    const byRollout = new Map<string, UnconfirmedRow[]>();
    for (const r of rows) {
      const list = byRollout.get(r.rolloutId);
      if (list) list.push(r);
      else byRollout.set(r.rolloutId, [r]);
    }
    const grace = this.config.rolloutConfirmGraceSeconds;
    for (const [rollout, unconfirmed] of byRollout) {
      if (this.stopped) return;
      const { expired, next } = expiredNodes(
        unconfirmed.map((r) => ({
          node: r.node,
          releasedAt: r.releasedAt,
          provisionalAt: r.provisionalAt,
          windowSeconds: r.operatorWindow ?? (r.agentJson === null ? null : (this.windows.get(r.agentJson) ?? null)),
        })),
        now,
        grace,
      );
      if (next !== null) this.lookAt(next);
      if (expired.length === 0) continue;
      const reason = `not confirmed within their confirmation window and ${grace} s after it`;
      const result = await this.writer.write({ actor: DRIVER_ACTOR }, { type: 'rollout_expire', rollout, nodes: expired, reason });
      this.log.warn(
        { rollout, expired: result.changed.length, nodes: result.changed.slice(0, 20).map((c) => c.node), position: result.position },
        'released nodes unconfirmed past their window: given their previous sets back',
      );
    }
  }

  private async learnWindows(rows: readonly UnconfirmedRow[]): Promise<void> {
    const unknown = [
      ...new Set(rows.flatMap((r) => (r.operatorWindow === null && r.agentJson !== null && !this.windows.has(r.agentJson) ? [r.agentJson] : []))),
    ];
    if (unknown.length === 0) return;
    const bodies = await agentJsonBodies(this.db.kysely, unknown);
    for (const digest of unknown) {
      const body = bodies.get(digest);
      let window: number | null = null;
      try {
        const within = body ? (JSON.parse(Buffer.from(body).toString('utf8')) as { sync?: { confirm_within?: unknown } }).sync?.confirm_within : undefined;
        window = typeof within === 'number' && within > 0 ? within : null;
      } catch {
        // Not JSON: no window this coordinator can read, so the node is never expired by it.
      }
      this.windows.set(digest, window);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.nudged) clearTimeout(this.nudged);
    if (this.bakeTimer) clearTimeout(this.bakeTimer);
    await this.running;
  }
}
