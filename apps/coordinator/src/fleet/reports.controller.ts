import { Body, Controller, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { ReportRequest } from '#contracts';
import { DB } from '../db/db.module.js';
import type { Db } from '../db/connect.js';
import { parseInput } from '../common/parse.js';
import { Access } from '../identity/auth.decorators.js';
import { Metrics } from '../health/metrics.js';

/** Reports are frequent and are not ledger events: they update the node's status row in place. */
@Controller('v1/nodes')
export class ReportsController {
  constructor(
    @Inject(DB) private readonly db: Db,
    private readonly metrics: Metrics,
  ) {}

  @Post(':node/reports')
  @HttpCode(204)
  @Access('node')
  async report(@Param('node') node: string, @Body() body: unknown): Promise<void> {
    const r = parseInput(ReportRequest, body, 'body');
    const now = new Date();
    const values = {
      last_contact: now,
      applied_version: r.active_version,
      last_result: r.result,
      last_error: r.error ?? null,
      ...(r.installed ? { installed: JSON.stringify(r.installed) } : {}),
    };
    await this.db.kysely
      .insertInto('node_status')
      .values({ node, ...values })
      .onConflict((oc) => oc.column('node').doUpdateSet(values))
      .execute();
    this.metrics.reports++;
  }
}
