import { RouteConfig } from '@nestjs/platform-fastify';

/**
 * What a route lets a client send, declared on the handler and enforced by Fastify before the
 * body is read (see http-hardening.ts):
 * - `anonymous`: no credential; a small body limit and a per-address rate limit.
 * - `tree`: a publisher's large JSON body (a whole tree, or its list of digests), read only
 *   after the bearer has been checked.
 * - `blob`: raw bytes (application/octet-stream), also read only after the bearer has been checked.
 * - `package`: a .deb for the mesh's apt repository: raw bytes like a blob, with a limit of its own.
 * - `archive`: many blobs in one tar archive (application/x-tar), read as a stream by the route
 *   itself, which counts its bytes against the archive limit; also only after the bearer was checked.
 * Only `blob` and `package` routes take application/octet-stream, only `archive` routes application/x-tar.
 * Every other route takes JSON up to the small limit.
 */
export type RouteLimits =
  | { readonly anonymous: true }
  | { readonly body: 'tree'; /** Keep the sha256 of the body's text for the handler (bodyDigestOf). */ readonly digest?: true }
  | { readonly body: 'blob' | 'package' | 'archive' };

export interface FloreteRouteConfig {
  readonly florete?: RouteLimits;
}

export const RouteLimits = (limits: RouteLimits) => RouteConfig({ florete: limits } satisfies FloreteRouteConfig);
