import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { DomainError, sendProblem, toProblem, clip, PROBLEM_LIMITS, roleAllows, wholeFleetRefusal, type Authenticator } from '../common/index.js';

/**
 * The only paths a dumb-HTTP git client needs, and nothing else of the repository (no config, no
 * hooks): a whitelist, so no path can climb out of the bare repository.
 */
const SERVED = /^(HEAD|info\/refs|objects\/info\/packs|objects\/[0-9a-f]{2}\/[0-9a-f]{38}|objects\/pack\/pack-[0-9a-f]{40}\.(?:pack|idx))$/;

const CONTENT_TYPES: [RegExp, string][] = [
  [/^objects\/[0-9a-f]{2}\//, 'application/x-git-loose-object'],
  [/\.pack$/, 'application/x-git-packed-objects'],
  [/\.idx$/, 'application/x-git-packed-objects-toc'],
];

/** A reader token as a bearer, or as the password of HTTP basic auth (any user name) for the git CLI. */
function tokenOf(header: string | undefined): string | null {
  if (!header) return null;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (bearer) return bearer[1];
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!basic) return null;
  const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? null : decoded.slice(colon + 1) || null;
}

/** GET /audit.git/*: the audit mirror over git's dumb HTTP protocol, read-only, for readers. */
export function registerAuditRoutes(fastify: FastifyInstance, gitdir: string, auth: Authenticator, log: Logger): void {
  const fail = (reply: FastifyReply, err: unknown) => {
    if (err instanceof DomainError && (err.code === 'unauthenticated' || err.code === 'token_expired' || err.code === 'token_revoked'))
      void reply.header('www-authenticate', 'Basic realm="florete audit"');
    sendProblem(reply, toProblem(err, log));
  };
  fastify.get('/audit.git/*', async (req, reply) => {
    try {
      const token = tokenOf(req.headers.authorization);
      if (!token)
        throw new DomainError(
          'unauthenticated',
          'the audit mirror needs a reader token: as the HTTP basic auth password (git clone http://x:<token>@host/audit.git) or a bearer',
        );
      const principal = await auth.authenticate(`Bearer ${token}`);
      if (principal.kind !== 'api' || !roleAllows(principal.role, 'reader'))
        throw new DomainError('forbidden', 'the audit mirror is for API tokens with the reader role or above');
      if (principal.scope !== null) throw wholeFleetRefusal(principal.scope, 'the audit mirror');
      const path = (req.params as { '*': string })['*'];
      if (!SERVED.test(path)) throw new DomainError('not_found', `audit.git/${clip(path, PROBLEM_LIMITS.value)} is not served`);
      let body: Buffer;
      try {
        body = await readFile(join(gitdir, path));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT')
          throw new DomainError('not_found', `audit.git/${clip(path, PROBLEM_LIMITS.value)} does not exist`);
        throw err;
      }
      const immutable = path.startsWith('objects/') && path !== 'objects/info/packs';
      void reply
        .header('content-type', CONTENT_TYPES.find(([re]) => re.test(path))?.[1] ?? 'text/plain; charset=utf-8')
        .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
        .send(body);
    } catch (err) {
      fail(reply, err);
    }
  });
}
