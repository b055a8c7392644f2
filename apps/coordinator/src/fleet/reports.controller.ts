import { Body, Controller, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { ReportRequest } from '#contracts';
import { DB } from '../db/db.module.js';
import type { Db } from '../db/connect.js';
import { parseInput } from '../common/parse.js';
import { Access } from '../identity/auth.decorators.js';
import { Metrics } from '../core/metrics.js';
import { LedgerWriter } from '../ledger/ledger-writer.js';

/**
 * Reports are frequent and are not ledger events: they update the node's status row in place, and
 * record a version's outcome only when it changes. A node that applied its retirement has its
 * credential revoked here, the last thing it was allowed to do.
 */
@Controller('v1/nodes')
export class ReportsController {
  constructor(
    @Inject(DB) private readonly db: Db,
    private readonly metrics: Metrics,
    private readonly ledger: LedgerWriter,
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
      checkpoint: r.checkpoint ?? null,
      stale_since: r.stale_since ?? null,
      // An older agent says nothing: the version it enrolled with stays.
      ...(r.agent_version ? { agent_version: r.agent_version } : {}),
      ...(r.installed ? { installed: JSON.stringify(r.installed) } : {}),
      // The version a resource list is about: the one applied, or the one tried when the pass failed.
      ...(r.resources
        ? { resources: JSON.stringify({ version: r.result === 'failed' ? (r.target_version ?? r.active_version) : r.active_version, result: r.result, reported_at: now.toISOString(), items: r.resources }) }
        : {}),
    };
    await this.db.kysely.transaction().execute(async (trx) => {
      await trx
        .insertInto('node_status')
        .values({ node, ...values })
        .onConflict((oc) => oc.column('node').doUpdateSet(values))
        .execute();
      // A failure belongs to the version that was tried; without one named there is nothing to pin it on
      // (a replayed or foreign bundle), and the version still running must keep its applied outcome.
      const reached = r.result === 'applied' || r.result === 'up_to_date';
      const version = reached ? r.active_version : (r.target_version ?? 0);
      if (version > 0) {
        const outcome = r.result === 'up_to_date' ? 'applied' : r.result;
        // up_to_date confirms what is running; it never overwrites a recorded outcome of that version.
        await trx
          .insertInto('node_outcomes')
          .values({ node, version, result: outcome, error: r.error ?? null, reported_at: now, activation: r.activation ? JSON.stringify(r.activation) : null })
          .onConflict((oc) =>
            r.result === 'up_to_date'
              ? oc.columns(['node', 'version']).doNothing()
              : oc
                  .columns(['node', 'version'])
                  .doUpdateSet({ result: outcome, error: r.error ?? null, reported_at: now, activation: r.activation ? JSON.stringify(r.activation) : null })
                  .where('node_outcomes.result', '!=', outcome),
          )
          .execute();
      }
      const head = await trx.selectFrom('node_heads').select(['version', 'retired', 'updated_at']).where('node', '=', node).executeTakeFirst();
      if (head?.retired && (r.result === 'applied' || r.result === 'up_to_date') && r.active_version === head.version) {
        // Only credentials the node held when it was retired: one enrolled since is the operator bringing
        // the node back, and revoking it at its first report would retire the node a second time.
        const revoked = await trx
          .updateTable('node_credentials')
          .set({ revoked_at: now, revoked_reason: 'retired' })
          .where('node', '=', node)
          .where('revoked_at', 'is', null)
          .where('created_at', '<=', head.updated_at)
          .returning('id')
          .execute();
        if (revoked.length > 0) {
          await this.ledger.recordIdentity(trx, node, 'credential_revoked', { node, credential_ids: revoked.map((c) => c.id), reason: 'retired' }, `node:${node}`);
        }
      }
    });
    this.metrics.reports++;
  }
}
