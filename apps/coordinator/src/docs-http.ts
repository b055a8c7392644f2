import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** The paths SwaggerModule serves for `setup('docs', …, { jsonDocumentUrl: 'docs/json' })`: the page, its files, the JSON and the YAML. */
const DOCS_PATHS = ['/docs', '/docs/*', '/docs-yaml'] as const;

/**
 * GET /docs, /docs/json, /docs-yaml: the OpenAPI document and the Swagger UI, served by
 * @nestjs/swagger as before, but set up on first use. Loading @nestjs/swagger (and what it pulls in:
 * js-yaml, es-toolkit, @fastify/static, glob) and generating the document from the zod contracts took
 * memory that every idle coordinator held, for pages almost none ever serves (bench:rss,
 * bench/README.md). Routes cannot be added once the coordinator listens, so these paths are
 * registered now and answered, on first use, by a second Nest application holding only
 * SwaggerModule, which never listens: each request is handed to it in memory (Fastify's inject) and
 * its answer passed on whole.
 */
export function registerDocsRoutes(fastify: FastifyInstance): void {
  let docs: Promise<NestFastifyApplication> | undefined;
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    docs ??= docsApplication().catch((err: unknown) => {
      docs = undefined;
      throw err;
    });
    const inner = (await docs).getHttpAdapter().getInstance();
    // Always GET: for a HEAD, Fastify answers from the GET route and leaves the body out itself.
    const answer = await inner.inject({ method: 'GET', url: req.url, headers: req.headers });
    // A path under /docs that is none of its files is as unknown as any other.
    if (answer.statusCode === 404) return reply.callNotFound();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined || HOP_BY_HOP.has(name)) continue;
      void reply.header(name, value);
    }
    return reply.status(answer.statusCode).send(answer.rawPayload);
  };
  for (const path of DOCS_PATHS) fastify.get(path, handler);
}

/** Headers of the inner answer that belong to its own connection, or that the outer answer sets itself. */
const HOP_BY_HOP = new Set(['connection', 'content-length', 'keep-alive', 'transfer-encoding', 'date']);

@Module({})
class DocsModule {}

async function docsApplication(): Promise<NestFastifyApplication> {
  const [{ SwaggerModule }, { openApiDocument }] = await Promise.all([import('@nestjs/swagger'), import('./openapi.js')]);
  const app = await NestFactory.create<NestFastifyApplication>(DocsModule, new FastifyAdapter({ logger: false }), { logger: false, abortOnError: false });
  SwaggerModule.setup('docs', app, openApiDocument() as never, { jsonDocumentUrl: 'docs/json' });
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}
