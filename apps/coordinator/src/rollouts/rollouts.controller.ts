import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { RolloutAction, RolloutActionRequest, RolloutId, RolloutStatus } from '#contracts';
import { z } from 'zod';
import { DB, type Db } from '../db/index.js';
import { DomainError, parseInput, Access, CurrentPrincipal, actorOf, scopeOf, type Principal } from '../common/index.js';
import { LedgerWriter, NODE_SCOPE, resolveRolloutId as resolveRollout, type NodeScope } from '../ledger/index.js';
import { scopeView } from '../identity/index.js';
import { listRollouts, readRollout, rolloutsReaching } from './rollouts.repository.js';

const ListQuery = z.strictObject({
  status: RolloutStatus.optional(),
  limit: z
    .string()
    .regex(/^[0-9]{1,4}$/, 'must be a number from 1 to 1000')
    .transform(Number)
    .pipe(z.number().int().min(1).max(1000))
    .default(50),
});

/**
 * Rollouts: list, read, and the operator's actions on one (pause, resume, promote, abort), each
 * recorded with who. A scoped token sees the rollouts that reach a node of its scope, whole (a
 * rollout's counts are its waves'), and the others not at all; it may steer only a rollout every
 * node of which is in its scope, since a pause holds and an abort rolls back all of them.
 */
@Controller('v1/rollouts')
export class RolloutsController {
  constructor(
    @Inject(DB) private readonly db: Db,
    private readonly writer: LedgerWriter,
    @Inject(NODE_SCOPE) private readonly scopes: NodeScope,
  ) {}

  @Get()
  @Access('reader')
  async list(@Query() query: unknown, @CurrentPrincipal() who: Principal) {
    const q = parseInput(ListQuery, query, 'query');
    const view = await scopeView(this.db.kysely, scopeOf(who));
    if (view === null) return { rollouts: await listRollouts(this.db.kysely, q.status, q.limit) };
    // Rollouts are few and kept: the newest thousand are narrowed, not paged past.
    const all = await listRollouts(this.db.kysely, q.status, 1000);
    const reaching = await rolloutsReaching(
      this.db.kysely,
      all.map((r) => r.id),
      view.names(),
    );
    return { rollouts: all.filter((r) => reaching.has(r.id)).slice(0, q.limit) };
  }

  @Get(':id')
  @Access('reader')
  async one(@Param('id') id: string, @CurrentPrincipal() who: Principal) {
    const rollout = await resolveRollout(this.db.kysely, parseInput(RolloutId, id, 'path'));
    await this.requireReach(rollout, who);
    return readRollout(this.db.kysely, rollout);
  }

  @Post(':id/:action')
  @HttpCode(200)
  @Access('publisher')
  async act(@Param('id') id: string, @Param('action') action: string, @Body() body: unknown, @CurrentPrincipal() who: Principal) {
    const rollout = await resolveRollout(this.db.kysely, parseInput(RolloutId, id, 'path'));
    await this.requireReach(rollout, who);
    const what = parseInput(RolloutAction, action, 'path');
    const req = parseInput(RolloutActionRequest, body ?? {}, 'body');
    // Every node of the rollout must be in a scoped token's scope (the decision governs them all), judged under the ledger lock.
    const admit = this.scopes.guard(scopeOf(who), `this rollout ${what}`);
    await this.writer.write(
      { actor: actorOf(who), ...(admit ? { admit } : {}) },
      { type: 'rollout_step', rollout, action: what, now: new Date(), ...(req.message ? { message: req.message } : {}) },
    );
    return readRollout(this.db.kysely, rollout);
  }

  /** A rollout that reaches none of a scoped token's nodes is unknown to it, as an unknown id is. */
  private async requireReach(rollout: string, who: Principal): Promise<void> {
    const view = await scopeView(this.db.kysely, scopeOf(who));
    if (view === null) return;
    if ((await rolloutsReaching(this.db.kysely, [rollout], view.names())).size === 0)
      throw new DomainError('unknown_rollout', `no rollout ${rollout}`, { rollout });
  }
}
