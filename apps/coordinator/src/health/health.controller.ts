import { Controller, Get, Header, Inject, Res } from '@nestjs/common';
import { sql } from 'kysely';
import type { FastifyReply } from 'fastify';
import { DB } from '../db/db.module.js';
import type { Db } from '../db/connect.js';
import { Access } from '../identity/auth.decorators.js';
import { readLedgerHead } from '../ledger/store/read-head.js';
import { Metrics } from './metrics.js';

@Controller()
export class HealthController {
  constructor(
    @Inject(DB) private readonly db: Db,
    private readonly metrics: Metrics,
  ) {}

  /** Liveness: the process answers. */
  @Get('healthz')
  @Access('public')
  healthz() {
    return { status: 'ok' };
  }

  /** Readiness: the database answers a query. */
  @Get('readyz')
  @Access('public')
  async readyz(@Res() reply: FastifyReply): Promise<void> {
    try {
      await sql`SELECT 1`.execute(this.db.kysely);
      const head = await readLedgerHead(this.db.kysely);
      void reply.status(200).send({ status: 'ready', database: this.db.kind, ledger_position: head.position });
    } catch (err) {
      void reply.status(503).send({ status: 'not ready', database: this.db.kind, error: (err as Error).message });
    }
  }

  @Get('metrics')
  @Access('reader')
  @Header('content-type', 'text/plain; version=0.0.4')
  async prometheus(): Promise<string> {
    const head = await readLedgerHead(this.db.kysely);
    return this.metrics.render({ florete_ledger_position: head.position });
  }
}
