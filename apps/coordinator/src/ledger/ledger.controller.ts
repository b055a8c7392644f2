import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  isPlainPublishRequest,
  LedgerEventsQuery,
  NodeName,
  PublishRequest,
  RetireRequest,
  RollbackRequest,
  type ConfirmResponse,
  type PublishResponse,
} from '#contracts';
import { z } from 'zod';
import { DB, type Db } from '../db/index.js';
import {
  parseInput,
  Access,
  CurrentPrincipal,
  actorOf,
  roleAllows,
  scopeOf,
  WholeFleet,
  type Principal,
  DomainError,
  RouteLimits,
  bodyDigestOf,
  bodyOf,
} from '../common/index.js';
import { Metrics } from '../core/index.js';
import { NODE_SCOPE, type NodeScope } from './ledger-ports.js';
import { PublishTreeCommand } from './commands/publish-tree.command.js';
import { RetireNodeCommand } from './commands/retire-node.command.js';
import { RollbackNodeCommand } from './commands/rollback-node.command.js';
import { readEvents } from './store/read-events.js';
import { readLedgerHead } from './store/read-head.js';
import { verifyLedger } from './store/verify.js';
import { VerifyWithMirrorQuery } from './queries/verify-with-mirror.query.js';
import { RepeatedPublishQuery } from './queries/repeated-publish.query.js';
import { LedgerWriter } from './ledger-writer.js';

const VerifyQuery = z.strictObject({ mirror: z.enum(['true', 'false']).optional() });
const PublishIdParam = z.uuid();

@Controller()
export class LedgerController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly metrics: Metrics,
    @Inject(DB) private readonly db: Db,
    private readonly writer: LedgerWriter,
    @Inject(NODE_SCOPE) private readonly scopes: NodeScope,
  ) {}

  @Post('v1/publishes')
  @Access('publisher')
  @RouteLimits({ body: 'tree', digest: true })
  async publish(@CurrentPrincipal() who: Principal, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    // The body this replica published last, sent again with nothing appended since, is answered as
    // it was decided: bytes once accepted are accepted again, and their tree changes nothing.
    const digest = bodyDigestOf(req);
    const repeated = digest === undefined ? null : await this.queries.execute(new RepeatedPublishQuery(digest));
    if (repeated) {
      this.metrics.repeatedPublishes++;
      return this.answer(reply, repeated);
    }
    // The schema is the contract; the plain check only spares a large, ordinary tree its cost.
    const request = parseInput(PublishRequest, bodyOf(req), 'body', isPlainPublishRequest);
    this.answer(
      reply,
      await this.commands.execute(new PublishTreeCommand(request, actorOf(who), digest, this.scopes.guard(scopeOf(who), 'this publish', request.labels))),
    );
  }

  /**
   * Confirms a publish made with --confirm-within: recorded in the ledger with who, and carried by
   * the poll answers of its nodes, whose agents then keep the version instead of reverting. A scoped
   * token may confirm only a publish whose nodes still pending are all in its scope.
   */
  @Post('v1/publishes/:id/confirm')
  @HttpCode(200)
  @Access('publisher')
  async confirm(@Param('id') id: string, @CurrentPrincipal() who: Principal): Promise<ConfirmResponse> {
    const publishId = parseInput(PublishIdParam, id, 'path');
    const actor = actorOf(who);
    const admit = this.scopes.guard(scopeOf(who), 'this confirmation');
    const result = await this.writer.write({ actor, ...(admit ? { admit } : {}) }, { type: 'confirm_publish', publishId });
    return { publish_id: publishId, confirmed_by: actor, position: result.position, nodes: result.unchanged };
  }

  @Post('v1/nodes/:node/rollback')
  @Access('publisher')
  async rollback(@Param('node') node: string, @Body() body: unknown, @CurrentPrincipal() who: Principal, @Res() reply: FastifyReply): Promise<void> {
    const name = parseInput(NodeName, node, 'path');
    const req = parseInput(RollbackRequest, body, 'body');
    this.answer(
      reply,
      await this.commands.execute(
        new RollbackNodeCommand(
          name,
          req.to_version,
          req.message,
          actorOf(who),
          req.expected_position,
          req.allow_ineligible,
          this.scopes.guard(scopeOf(who), 'this rollback'),
        ),
      ),
    );
  }

  @Post('v1/nodes/:node/retire')
  @Access('publisher')
  async retire(@Param('node') node: string, @Body() body: unknown, @CurrentPrincipal() who: Principal, @Res() reply: FastifyReply): Promise<void> {
    const name = parseInput(NodeName, node, 'path');
    const req = parseInput(RetireRequest, body ?? {}, 'body');
    if (req.lost) {
      // Revoking a node's credential is an admin's decision, with or without a retirement.
      if (who.kind !== 'api' || !roleAllows(who.role, 'admin'))
        throw new DomainError('forbidden', 'retiring a lost node revokes its credential: that needs an admin token');
      const result = await this.commands.execute(new RetireNodeCommand(name, req.message ?? `retire ${name}: lost`, actorOf(who), req.expected_position, true));
      if (result.publish_id) this.metrics.publishes++;
      return void reply.status(result.publish_id ? 201 : 200).send(result);
    }
    this.answer(
      reply,
      await this.commands.execute(
        new RetireNodeCommand(
          name,
          req.message ?? `retire ${name}`,
          actorOf(who),
          req.expected_position,
          false,
          this.scopes.guard(scopeOf(who), 'this retirement'),
        ),
      ),
    );
  }

  @Get('v1/ledger/head')
  @Access('reader')
  head() {
    return readLedgerHead(this.db.kysely);
  }

  @Get('v1/ledger/events')
  @Access('reader')
  @WholeFleet()
  async events(@Query() query: unknown) {
    const q = parseInput(LedgerEventsQuery, query, 'query');
    const items = await readEvents(this.db.kysely, q.after, q.limit);
    return { items, next_after: items.length === q.limit ? items[items.length - 1].position : null };
  }

  @Post('v1/ledger/verify')
  @HttpCode(200)
  @Access('reader')
  async verify(@Query() query: unknown) {
    const q = parseInput(VerifyQuery, query, 'query');
    if (q.mirror !== 'true') return verifyLedger(this.db.kysely);
    // Answered by the mirror module, which knows the audit repository.
    return this.queries.execute(new VerifyWithMirrorQuery());
  }

  /** 201 when something was stamped; 200 with `changed: []` when the tree was identical: an unchanged node is never stamped. */
  private answer(reply: FastifyReply, result: PublishResponse): void {
    if (result.publish_id) this.metrics.publishes++;
    void reply.status(result.publish_id ? 201 : 200).send(result);
  }
}
