import { Controller, Get, Header, Inject, Res } from '@nestjs/common';
import { sql } from 'kysely';
import type { FastifyReply } from 'fastify';
import { DB, type Db } from '../db/index.js';
import { Access, Anonymous, WholeFleet } from '../common/index.js';
import { readLedgerHead } from '../ledger/index.js';
import { Metrics } from '../core/index.js';
import { MirrorWorker, readCheckpoint } from '../mirror/index.js';
import { readFleetGauges } from './fleet-gauges.js';

/**
 * How long a readiness check may take before it answers 503. A database that stopped answering
 * (a network partition, a host frozen) leaves its query waiting for TCP to give up, minutes later;
 * a load balancer's probe has long timed out by then, and it should hear "not ready" instead.
 */
export const READINESS_TIMEOUT_MS = 2_000;

interface Readiness {
  status: number;
  body: unknown;
}

@Controller()
export class HealthController {
  private running?: Promise<Readiness>;
  private queued?: Promise<Readiness>;

  constructor(
    @Inject(DB) private readonly db: Db,
    private readonly metrics: Metrics,
    private readonly mirror: MirrorWorker,
  ) {}

  /** Mirror lag in ledger positions, from the shared checkpoint: every replica reports the writer's progress. */
  private async mirrorStatus(ledgerPosition: number) {
    const checkpoint = await readCheckpoint(this.db.kysely);
    return {
      state: this.mirror.state,
      position: checkpoint.position,
      commit: checkpoint.commit,
      lag: ledgerPosition - checkpoint.position,
      ...(this.mirror.lastError ? { error: this.mirror.lastError } : {}),
    };
  }

  /** Liveness: the process answers. */
  @Get('healthz')
  @Anonymous()
  healthz() {
    return { status: 'ok' };
  }

  /** Readiness: the database answers a query. Mirror lag is reported, not gated on: the mirror is asynchronous. */
  @Get('readyz')
  @Anonymous()
  async readyz(@Res() reply: FastifyReply): Promise<void> {
    const { status, body } = await this.readiness();
    void reply.status(status).send(body);
  }

  /**
   * A burst of anonymous probes costs the database at most two rounds of queries, never one per
   * probe: a probe that arrives while a check runs waits for the next one, which every probe
   * arriving meanwhile shares. Waiting for the next check, not joining the running one, keeps each
   * answer at least as new as its probe: a probe sent after a publish sees that publish.
   */
  private readiness(): Promise<Readiness> {
    if (!this.running) return this.startCheck();
    this.queued ??= this.running.then(() => {
      this.queued = undefined;
      return this.startCheck();
    });
    return this.queued;
  }

  private startCheck(): Promise<Readiness> {
    const run: Promise<Readiness> = this.checkReadiness().finally(() => {
      if (this.running === run) this.running = undefined;
    });
    this.running = run;
    return run;
  }

  private async checkReadiness(): Promise<Readiness> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the database did not answer within ${READINESS_TIMEOUT_MS} ms`)), READINESS_TIMEOUT_MS);
    });
    try {
      return await Promise.race([this.databaseReadiness(), timeout]);
    } catch (err) {
      return { status: 503, body: { status: 'not ready', database: this.db.kind, error: (err as Error).message } };
    } finally {
      clearTimeout(timer);
    }
  }

  private async databaseReadiness(): Promise<Readiness> {
    await sql`SELECT 1`.execute(this.db.kysely);
    const head = await readLedgerHead(this.db.kysely);
    return { status: 200, body: { status: 'ready', database: this.db.kind, ledger_position: head.position, mirror: await this.mirrorStatus(head.position) } };
  }

  @Get('metrics')
  @Access('reader')
  @WholeFleet()
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  async prometheus(): Promise<string> {
    const counts = { mirrorCommits: this.mirror.commits, mirrorPushFailures: this.mirror.pusher?.failures ?? 0 };
    // The same bounded, shared check /readyz runs: a database too slow for it leaves the database's
    // gauges out of this scrape (florete_ready 0) rather than holding the scrape until it times out.
    if ((await this.readiness()).status !== 200) return this.metrics.render({ ready: false, counts }, this.db.kind);
    const now = new Date();
    const head = await readLedgerHead(this.db.kysely);
    const mirror = await this.mirrorStatus(head.position);
    const gauges = {
      ledgerPosition: head.position,
      mirrorPosition: mirror.position,
      mirrorLagPositions: mirror.lag,
      mirrorLagSeconds: mirror.lag > 0 ? await this.unmirroredAge(mirror.position) : 0,
      mirrorWriting: mirror.state === 'writing',
      checkpointAgeSeconds: await this.checkpointAge(now),
    };
    return this.metrics.render({ ready: true, gauges, counts, fleet: await readFleetGauges(this.db.kysely, now) }, this.db.kind);
  }

  /** Seconds since the served checkpoint was signed (one row by primary key); NaN before the first. */
  private async checkpointAge(now: Date): Promise<number> {
    const row = await this.db.kysely.selectFrom('ledger_checkpoint').select('signed_at').where('id', '=', 1).executeTakeFirst();
    return row ? Math.max(0, (now.getTime() - new Date(row.signed_at).getTime()) / 1000) : Number.NaN;
  }

  /** Seconds since the first ledger event after the mirror's position was recorded (one indexed read). */
  private async unmirroredAge(mirrorPosition: number): Promise<number> {
    const row = await this.db.kysely
      .selectFrom('ledger')
      .select('recorded_at')
      .where('position', '=', mirrorPosition + 1)
      .executeTakeFirst();
    return row ? Math.max(0, (Date.now() - new Date(row.recorded_at).getTime()) / 1000) : 0;
  }
}
