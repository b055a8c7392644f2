import { RouteConfig } from '@nestjs/platform-fastify';

/**
 * What a route lets a client send, declared on the handler and enforced by Fastify before the
 * body is read (see http-hardening.ts):
 * - `anonymous`: no credential; a small body limit and a per-address rate limit.
 * - `tree`: a publisher's large JSON body (a whole tree, or its list of digests), read only
 *   after the bearer has been checked.
 * - `blob`: raw bytes (application/octet-stream), the only route that takes them, also read
 *   only after the bearer has been checked.
 * Every other route takes JSON up to the small limit.
 */
export type RouteLimits = { readonly anonymous: true } | { readonly body: 'tree' | 'blob' };

export interface FloreteRouteConfig {
  readonly florete?: RouteLimits;
}

export const RouteLimits = (limits: RouteLimits) => RouteConfig({ florete: limits } satisfies FloreteRouteConfig);
