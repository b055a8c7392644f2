import { Controller, Get, Header, Inject, Res } from '@nestjs/common';
import { sql } from 'kysely';
import type { FastifyReply } from 'fastify';
import { DB } from '../db/db.module.js';
import type { Db } from '../db/connect.js';
import { Access } from '../identity/auth.decorators.js';
import { readLedgerHead } from '../ledger/store/read-head.js';
import { Metrics } from './metrics.js';
import { MirrorWorker } from '../mirror/mirror.worker.js';
import { readCheckpoint } from '../mirror/store/checkpoint.js';

@Controller()
export class HealthController {
  constructor(
    @Inject(DB) private readonly db: Db,
    private readonly metrics: Metrics,
    private readonly mirror: MirrorWorker,
  ) {}

  /** Mirror lag in ledger positions, from the shared checkpoint: every replica reports the writer's progress. */
  private async mirrorStatus(ledgerPosition: number) {
    const checkpoint = await readCheckpoint(this.db.kysely);
    return { state: this.mirror.state, position: checkpoint.position, commit: checkpoint.commit, lag: ledgerPosition - checkpoint.position, ...(this.mirror.lastError ? { error: this.mirror.lastError } : {}) };
  }

  /** Liveness: the process answers. */
  @Get('healthz')
  @Access('public')
  healthz() {
    return { status: 'ok' };
  }

  /** Readiness: the database answers a query. Mirror lag is reported, not gated on: the mirror is asynchronous. */
  @Get('readyz')
  @Access('public')
  async readyz(@Res() reply: FastifyReply): Promise<void> {
    try {
      await sql`SELECT 1`.execute(this.db.kysely);
      const head = await readLedgerHead(this.db.kysely);
      void reply.status(200).send({ status: 'ready', database: this.db.kind, ledger_position: head.position, mirror: await this.mirrorStatus(head.position) });
    } catch (err) {
      void reply.status(503).send({ status: 'not ready', database: this.db.kind, error: (err as Error).message });
    }
  }

  @Get('metrics')
  @Access('reader')
  @Header('content-type', 'text/plain; version=0.0.4')
  async prometheus(): Promise<string> {
    const head = await readLedgerHead(this.db.kysely);
    const mirror = await this.mirrorStatus(head.position);
    return this.metrics.render({
      florete_ledger_position: head.position,
      florete_mirror_position: mirror.position,
      florete_mirror_lag_positions: mirror.lag,
      florete_mirror_commits_total: this.mirror.commits,
      florete_mirror_writing: mirror.state === 'writing' ? 1 : 0,
      florete_mirror_push_failures_total: this.mirror.pusher?.failures ?? 0,
    });
  }
}
