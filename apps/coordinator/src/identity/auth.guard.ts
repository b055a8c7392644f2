import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { DomainError, quoteInput, ACCESS_KEY, type Access, type Principal, roleAllows, WHOLE_FLEET_KEY, wholeFleetRefusal } from '../common/index.js';
import { AuthService } from './auth.service.js';

/** Every route states its access; the guard authenticates the bearer and checks the role or node. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly auth: AuthService,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const access = this.reflector.getAllAndOverride<Access | undefined>(ACCESS_KEY, [ctx.getHandler(), ctx.getClass()]);
    if (access === undefined) throw new DomainError('forbidden', 'route has no declared access');
    if (access === 'public') return true;
    const req = ctx.switchToHttp().getRequest<FastifyRequest & { principal?: Principal; params: Record<string, string> }>();
    // Routes with large bodies authenticate before reading them (http-hardening.ts): no second lookup.
    const principal = req.principal ?? (await this.auth.authenticate(req.headers.authorization));
    req.principal = principal;
    if (access === 'node') {
      if (principal.kind !== 'node') throw new DomainError('forbidden', 'this route is for node credentials');
      if (req.params.node !== undefined && req.params.node !== principal.node) {
        throw new DomainError('forbidden', `node credential of ${principal.node} may not act for ${quoteInput(req.params.node)}`);
      }
      return true;
    }
    if (principal.kind !== 'api') throw new DomainError('forbidden', 'node credentials may only fetch their bundle and send reports');
    if (!roleAllows(principal.role, access)) throw new DomainError('forbidden', `role ${principal.role} may not do this; it needs ${access}`);
    if (principal.scope !== null && this.reflector.getAllAndOverride<boolean | undefined>(WHOLE_FLEET_KEY, [ctx.getHandler(), ctx.getClass()]))
      throw wholeFleetRefusal(principal.scope, `${req.method} ${req.routeOptions.url ?? req.url}`);
    // Every route about one node (its status, history, versions, diff, rollback, retirement).
    if (req.params.node !== undefined) await this.auth.requireInScope(principal, req.params.node);
    return true;
  }
}
