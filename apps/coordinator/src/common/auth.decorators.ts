import { applyDecorators, createParamDecorator, type ExecutionContext, SetMetadata } from '@nestjs/common';
import { RouteLimits } from './route-limits.js';
import type { Role } from '#contracts';
import type { Principal } from './principal.js';

export type Access = Role | 'node' | 'public';
export const ACCESS_KEY = 'florete:access';

/** Declares who may call a route; routes without it are refused (deny by default). */
export const Access = (access: Access) => SetMetadata(ACCESS_KEY, access);

/** A route anyone may call without a credential: public, with the anonymous body and rate limits. */
export const Anonymous = () => applyDecorators(Access('public'), RouteLimits({ anonymous: true }));

export const CurrentPrincipal = createParamDecorator((_data: unknown, ctx: ExecutionContext): Principal => {
  return (ctx.switchToHttp().getRequest() as { principal: Principal }).principal;
});
