import { applyDecorators, createParamDecorator, type ExecutionContext, SetMetadata } from '@nestjs/common';
import { RouteLimits } from './route-limits.js';
import type { Role } from '#contracts';
import type { Principal } from './principal.js';
import { DomainError } from './domain-error.js';

export type Access = Role | 'node' | 'public';
export const ACCESS_KEY = 'florete:access';

/** Declares who may call a route; routes without it are refused (deny by default). */
export const Access = (access: Access) => SetMetadata(ACCESS_KEY, access);

export const WHOLE_FLEET_KEY = 'florete:whole-fleet';

/**
 * A route whose answer is about every node at once and cannot be narrowed to some (the ledger's
 * events, the fleet's witnesses, the metrics): a token scoped to some nodes is refused it.
 */
export const WholeFleet = () => SetMetadata(WHOLE_FLEET_KEY, true);

/** The refusal a scoped token gets from a route about every node (WholeFleet, the audit mirror). */
export function wholeFleetRefusal(scope: readonly string[], what: string): DomainError {
  return new DomainError(
    'out_of_scope',
    `${what} covers every node, and this token is scoped to ${scope.join(', ')}: it needs a token with no scope (an auditor's reader token)`,
    { scope },
  );
}

/** A route anyone may call without a credential: public, with the anonymous body and rate limits. */
export const Anonymous = () => applyDecorators(Access('public'), RouteLimits({ anonymous: true }));

export const CurrentPrincipal = createParamDecorator((_data: unknown, ctx: ExecutionContext): Principal => {
  return (ctx.switchToHttp().getRequest() as { principal: Principal }).principal;
});
