import { createParamDecorator, type ExecutionContext, SetMetadata } from '@nestjs/common';
import type { Role } from '#contracts';
import type { Principal } from './principal.js';

export type Access = Role | 'node' | 'public';
export const ACCESS_KEY = 'florete:access';

/** Declares who may call a route; routes without it are refused (deny by default). */
export const Access = (access: Access) => SetMetadata(ACCESS_KEY, access);

export const CurrentPrincipal = createParamDecorator((_data: unknown, ctx: ExecutionContext): Principal => {
  return (ctx.switchToHttp().getRequest() as { principal: Principal }).principal;
});
