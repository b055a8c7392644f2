import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { DomainError, sendProblem, toProblem, clip, PROBLEM_LIMITS, type FloreteRouteConfig } from '../common/index.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
};

/**
 * The page may load only its own files and talk only to this coordinator: no inline script, no
 * third party, no framing. The console needs nothing more, so a stray injection has nowhere to go.
 */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

interface ConsoleFile {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
  /** Vite names built assets by their content hash, so they never change under one name. */
  readonly immutable: boolean;
}

/** Every file of the built console, read once: requests are answered from memory, and no request path reaches the filesystem. */
export function loadConsole(dir: string): Map<string, ConsoleFile> {
  const files = new Map<string, ConsoleFile>();
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else {
        const rel = relative(dir, path).split(sep).join('/');
        const body = readFileSync(path);
        files.set(rel, {
          body,
          type: TYPES[extname(name)] ?? 'application/octet-stream',
          etag: `"${createHash('sha256').update(body).digest('hex').slice(0, 32)}"`,
          immutable: rel.startsWith('assets/'),
        });
      }
    }
  };
  try {
    walk(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  return files;
}

/**
 * GET /ui/…: the read-only web console, static files the browser runs against the same API a
 * script uses. The files are public (they hold no data); every request the page makes carries the
 * viewer's own API token.
 */
export function registerConsoleRoutes(fastify: FastifyInstance, dir: string, log: Logger): void {
  const files = loadConsole(dir);
  if (!files.has('index.html')) log.warn({ dir }, 'the web console is not built here: /ui answers 404 (npm run build builds it)');
  const config: FloreteRouteConfig = { florete: { anonymous: true } };
  fastify.get('/ui', { config }, (_req, reply) => {
    void reply.redirect('/ui/', 308);
  });
  fastify.get('/ui/*', { config }, (req, reply) => {
    const path = (req.params as { '*': string })['*'] || 'index.html';
    const file = files.get(path);
    if (!file) {
      const detail = files.has('index.html')
        ? `ui/${clip(path, PROBLEM_LIMITS.value)} is not part of the console`
        : 'the web console is not built on this coordinator: run npm run build';
      sendProblem(reply, toProblem(new DomainError('not_found', detail), log));
      return;
    }
    void reply
      .headers(SECURITY_HEADERS)
      .header('etag', file.etag)
      .header('cache-control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    if (req.headers['if-none-match'] === file.etag) {
      void reply.status(304).send();
      return;
    }
    void reply.type(file.type).send(file.body);
  });
}
