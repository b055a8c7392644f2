import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { RolloutAction, RolloutActionRequest, RolloutId, RolloutStatus } from '#contracts';
import { z } from 'zod';
import { DB, type Db } from '../db/index.js';
import { parseInput, Access, CurrentPrincipal, actorOf, scopeOf, type Principal } from '../common/index.js';
import { LedgerWriter, NODE_SCOPE, resolveRolloutId as resolveRollout, type NodeScope } from '../ledger/index.js';
import { listRollouts, readRollout } from './rollouts.repository.js';

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
 * recorded with who; a scoped token's promote or abort is refused whole when it would change a node
 * outside its scope.
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
  async list(@Query() query: unknown) {
    const q = parseInput(ListQuery, query, 'query');
    return { rollouts: await listRollouts(this.db.kysely, q.status, q.limit) };
  }

  @Get(':id')
  @Access('reader')
  async one(@Param('id') id: string) {
    return readRollout(this.db.kysely, await resolveRollout(this.db.kysely, parseInput(RolloutId, id, 'path')));
  }

  @Post(':id/:action')
  @HttpCode(200)
  @Access('publisher')
  async act(@Param('id') id: string, @Param('action') action: string, @Body() body: unknown, @CurrentPrincipal() who: Principal) {
    const rollout = await resolveRollout(this.db.kysely, parseInput(RolloutId, id, 'path'));
    const what = parseInput(RolloutAction, action, 'path');
    const req = parseInput(RolloutActionRequest, body ?? {}, 'body');
    // A promote stamps the next wave's nodes and an abort rolls the released ones back: a scoped token may do either only to nodes in its scope.
    const admit = this.scopes.guard(scopeOf(who), `this rollout ${what}`);
    await this.writer.write(
      { actor: actorOf(who), ...(admit ? { admit } : {}) },
      { type: 'rollout_step', rollout, action: what, now: new Date(), ...(req.message ? { message: req.message } : {}) },
    );
    return readRollout(this.db.kysely, rollout);
  }
}
